package web

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/go-chi/chi/v5"
	"github.com/limitlab/limitlab/internal/runner"
)

// RoomRow is one participant as the presenter's room view shows it: its
// name or an anonymous label (never its id, which is its cookie), when it
// joined, its latest run's state and queue place, and for a guided lab the
// step it has reached and whether that step's check holds.
type RoomRow struct {
	// Ref names the participant to the presenter's calls (removing it).
	Ref    string    `json:"ref"`
	Label  string    `json:"label"`
	Named  bool      `json:"named"`
	Joined time.Time `json:"joined"`
	Run    string    `json:"run,omitempty"`
	Name   string    `json:"run_name,omitempty"`
	Lab    string    `json:"lab,omitempty"`
	State  string    `json:"state,omitempty"`
	Queue  int       `json:"queue_position,omitempty"`
	// Step is the guided step reached, from 1 (0: no guided lab); Steps
	// how many the lab has; Done how many are done.
	Step   int    `json:"step,omitempty"`
	Steps  int    `json:"steps,omitempty"`
	Done   int    `json:"steps_done,omitempty"`
	Prompt string `json:"step_prompt,omitempty"`
	// Holds says whether the reached step's check holds now (its window
	// full); Value is its measured value in words.
	Holds bool   `json:"holds"`
	Value string `json:"value,omitempty"`
	// Address is the client address it joined from, and Identities how
	// many participants of the room joined from it: many behind one
	// address is a room behind a NAT, or one person making a crowd.
	Address    string `json:"address,omitempty"`
	Identities int    `json:"identities_from_address,omitempty"`
}

// roomView builds the room's rows from its members and their runs' views.
// An ended run's part of a row never changes: it is read from the store
// once, not at every look.
func (h *handlers) roomView() []RoomRow {
	members := h.Room.Members()
	rows := make([]RoomRow, len(members))
	perAddress := map[string]int{}
	for _, m := range members {
		if m.Address != "" {
			perAddress[m.Address]++
		}
	}
	h.roomMu.Lock()
	defer h.roomMu.Unlock()
	ended := make(map[string]RoomRow, len(h.roomEnded))
	for i, m := range members {
		row, ok := h.roomEnded[m.Latest]
		if !ok && m.Latest != "" {
			if v, found := h.History.View(m.Latest); found {
				row = RoomRow{Run: v.ID, Name: v.Name, Lab: v.Lab, State: string(v.State), Queue: v.QueuePosition}
				stepReached(&row, v.Steps)
				ok = v.Ended
			}
		}
		if ok {
			ended[m.Latest] = row
		}
		row.Ref, row.Label, row.Named, row.Joined = m.Ref, m.Name, m.Name != "", m.Joined.UTC().Truncate(time.Second)
		if !row.Named {
			row.Label = "participant " + strconv.Itoa(i+1)
		}
		row.Address, row.Identities = m.Address, perAddress[m.Address]
		rows[i] = row
	}
	h.roomEnded = ended
	return rows
}

// stepReached fills a row's guided step: the first step not done, or the
// last once all are.
func stepReached(row *RoomRow, steps []runner.StepView) {
	if len(steps) == 0 {
		return
	}
	row.Steps = len(steps)
	at := steps[len(steps)-1]
	for _, s := range steps {
		if s.State == runner.StepDone {
			row.Done++
			continue
		}
		at = s
		break
	}
	row.Step, row.Prompt, row.Holds, row.Value = at.Index+1, at.Prompt, at.Full && at.Holds, at.ValueText
}

func (h presenter) apiRoom(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, roomBody{Open: h.Room.Open(), Participants: h.roomView()})
}

// apiCloseRoom closes the room to new participants: those in it stay, and
// neither a newcomer nor anyone the presenter removed can join until it
// is opened again.
func (h presenter) apiCloseRoom(w http.ResponseWriter, r *http.Request) {
	h.Room.SetOpen(false)
	writeJSON(w, http.StatusOK, roomState{Open: false})
}

// apiOpenRoom opens the room to new participants again.
func (h presenter) apiOpenRoom(w http.ResponseWriter, r *http.Request) {
	h.Room.SetOpen(true)
	writeJSON(w, http.StatusOK, roomState{Open: true})
}

// apiRemoveMember takes a participant out of the room for good, by its
// ref: its join no longer counts, it may not join again with that
// identity, and its queued runs are ended (a running one goes on to its
// end, or until the presenter stops it).
func (h presenter) apiRemoveMember(w http.ResponseWriter, r *http.Request) {
	m, err := h.Room.Remove(chi.URLParam(r, "ref"))
	if err != nil {
		writeError(w, http.StatusNotFound, "participant", err.Error())
		return
	}
	n := h.Runs.ClearQueue(m.ID, "the presenter removed its participant from the room before this run started")
	writeJSON(w, http.StatusOK, removedAnswer{Removed: m.Ref, QueuedRunsEnded: n})
}

// apiRoomCSV is the room at the end of a workshop, as a spreadsheet takes
// it. A name that would start a formula is quoted with a leading '.
func (h presenter) apiRoomCSV(w http.ResponseWriter, r *http.Request) {
	var b bytes.Buffer
	cw := csv.NewWriter(&b)
	_ = cw.Write([]string{"participant", "joined", "run", "run_name", "lab", "state", "queue_position", "step", "steps", "steps_done", "check_holds"})
	for _, row := range h.roomView() {
		_ = cw.Write([]string{cell(row.Label), row.Joined.Format(time.RFC3339), row.Run, cell(row.Name), row.Lab, row.State,
			blankZero(row.Queue), blankZero(row.Step), blankZero(row.Steps), blankZero(row.Done), strconv.FormatBool(row.Holds)})
	}
	cw.Flush()
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="limitlab-room.csv"`)
	_, _ = w.Write(b.Bytes())
}

// cell keeps a participant's text from being read as a formula.
func cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

func blankZero(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// RoomEvery is how often the live room view looks for changes;
// RoomTokenWait how long its socket waits for the token.
const (
	RoomEvery     = time.Second
	RoomTokenWait = 5 * time.Second
)

// roomViewers is the key the room view's streams are counted under as
// viewers: no run id looks like it.
const roomViewers = "room"

// roomLive streams the room view to the presenter's page: a browser cannot
// set a websocket's headers, so the token is the first message; then the
// view, each time it changes. The socket counts as a viewer only once its
// token is right; a wrong one closes it at once, counted against its
// address (presenterWrong), and keeps nobody else waiting.
func (h streams) roomLive(w http.ResponseWriter, r *http.Request) {
	if h.PresenterToken == "" {
		writeError(w, http.StatusForbidden, "presenter", "presenter calls are off: the server was started without a presenter token")
		return
	}
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: h.AllowedOrigins})
	if err != nil {
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(1024)
	ctx, cancel := context.WithTimeout(r.Context(), RoomTokenWait)
	_, token, err := c.Read(ctx)
	cancel()
	if err != nil {
		c.Close(websocket.StatusPolicyViolation, "presenter only: send the presenter token as the first message")
		return
	}
	if ok, wait := h.tokenIs(r, string(token)); !ok {
		if wait > 0 {
			c.Close(websocket.StatusTryAgainLater, "too many wrong presenter tokens from "+addressOf(r)+": the next is judged in "+wait.Round(time.Second).String())
			return
		}
		c.Close(websocket.StatusPolicyViolation, "presenter only: that is not the presenter token")
		return
	}
	release, err := h.viewers.acquire(roomViewers, h.countedAddress(r), h.MaxViewersPerRun, h.MaxViewersPerAddress)
	if err != nil {
		c.Close(websocket.StatusTryAgainLater, err.Error())
		return
	}
	defer release()
	ctx = c.CloseRead(r.Context())
	t := time.NewTicker(RoomEvery)
	defer t.Stop()
	var last []byte
	for {
		b, err := json.Marshal(roomBody{Open: h.Room.Open(), Participants: h.roomView()})
		if err != nil {
			return
		}
		if !bytes.Equal(b, last) {
			if err := h.write(ctx, c, b); err != nil {
				h.logWriteErr(err)
				return
			}
			last = b
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
