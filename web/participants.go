package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/limitlab/limitlab/internal/workshop"
)

// ParticipantCookie holds a browser's participant id: the queue's fairness
// and the per-participant limits go by it. JoinCookie proves the
// participant entered the workshop's join code.
const (
	ParticipantCookie = "limitlab_participant"
	JoinCookie        = "limitlab_join"
)

// NewParticipantsPerMinute is how many new participants one client
// address may become in a minute before its state-changing requests are
// refused: a browser keeps its cookie, a script that drops it to jump the
// fair queue does not get far.
const NewParticipantsPerMinute = 30

// JoinsPerMinute is how many new participants one client address may
// join with the code in a minute: a room behind one NAT arrives at once,
// but someone holding the code cannot make themselves a crowd at will.
const JoinsPerMinute = 60

// ImportsPerMinute is how many runs one participant may import in a
// minute: each is up to 64 MiB to parse and store.
const ImportsPerMinute = 5

type participantKey struct{}

type who struct {
	id string
}

// participant gives every browser a participant id, in a cookie it keeps
// for a year. A client without cookies is a new participant each request;
// past NewParticipantsPerMinute from its address, it may watch but not act.
func (h *handlers) participant(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := who{}
		if c, err := r.Cookie(ParticipantCookie); err == nil && validParticipant(c.Value) {
			p.id = c.Value
		} else {
			b := make([]byte, 16)
			_, _ = rand.Read(b)
			p.id = hex.EncodeToString(b)
			http.SetCookie(w, &http.Cookie{Name: ParticipantCookie, Value: p.id, Path: "/", MaxAge: 365 * 24 * 3600,
				HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: overHTTPS(r)})
			// A join with the code is bounded by its own rate below: the
			// code, not the address, says who is in the room.
			joining := r.Method == http.MethodPost && r.URL.Path == "/api/join"
			if !joining && !h.newcomers.allow(addressOf(r), time.Now(), NewParticipantsPerMinute) && r.Method != http.MethodGet && r.Method != http.MethodHead {
				writeError(w, http.StatusTooManyRequests, "participant", fmt.Sprintf(
					"more than %d new participants from %s in a minute: keep the cookie the server gives (curl -c jar -b jar)", NewParticipantsPerMinute, addressOf(r)))
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), participantKey{}, p)))
	})
}

func validParticipant(s string) bool {
	if len(s) != 32 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

func participantOf(r *http.Request) string {
	p, _ := r.Context().Value(participantKey{}).(who)
	return p.id
}

// rateWindow counts events per key in one-minute windows; keys whose
// window has passed are swept, so its memory follows the clients present.
type rateWindow struct {
	mu      sync.Mutex
	windows map[string]*window
	swept   time.Time
}

type window struct {
	start time.Time
	n     int
}

func (rw *rateWindow) allow(key string, now time.Time, limit int) bool {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.windows == nil {
		rw.windows = map[string]*window{}
	}
	if now.Sub(rw.swept) > time.Minute {
		for k, w := range rw.windows {
			if now.Sub(w.start) > time.Minute {
				delete(rw.windows, k)
			}
		}
		rw.swept = now
	}
	w, ok := rw.windows[key]
	if !ok || now.Sub(w.start) > time.Minute {
		w = &window{start: now}
		rw.windows[key] = w
	}
	w.n++
	return w.n <= limit
}

// joined says whether the request's participant entered the join code;
// every participant has when the server has none.
func (h *handlers) joined(r *http.Request) bool {
	if h.JoinCode == "" {
		return true
	}
	c, err := r.Cookie(JoinCookie)
	return err == nil && hmac.Equal([]byte(c.Value), []byte(h.joinProof(participantOf(r))))
}

// provenByCode says whether the request's participant proved the join
// code: such a participant is held to its own limits, not its address's.
// With no join code nobody proves anything.
func (h *handlers) provenByCode(r *http.Request) bool {
	return h.JoinCode != "" && h.joined(r)
}

// countedAddress is the address a request's runs and streams count
// against: none for a participant proven by the join code, whom a room
// behind one NAT shares an address with; the client's otherwise.
func (h *handlers) countedAddress(r *http.Request) string {
	if h.provenByCode(r) {
		return ""
	}
	return addressOf(r)
}

// joinProof is what the join cookie holds for a participant: an HMAC of
// its id keyed with the join code, so that it proves the code without
// holding it, and a new code ends every earlier join.
func (h *handlers) joinProof(participant string) string {
	mac := hmac.New(sha256.New, []byte(h.JoinCode))
	mac.Write([]byte(participant))
	return hex.EncodeToString(mac.Sum(nil))
}

// mustJoin refuses a request to act from a participant who has not
// entered the join code: without it a browser can watch but not run.
func (h *handlers) mustJoin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.joined(r) && !h.isPresenter(r) {
			writeError(w, http.StatusForbidden, "join_code", "this workshop needs its join code to run experiments: "+
				"enter the code the facilitator gives on the home page (POST /api/join {\"code\": \"...\"})")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// apiJoin checks a join code and gives the participant its proof, and
// takes the display name the participant gives, if any. Wrong codes
// answer a second apart, as wrong presenter tokens do.
func (h api) apiJoin(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Code string `json:"code"`
		Name string `json:"name"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "code", "join: want {\"code\": \"...\", \"name\": \"...\"}")
		return
	}
	name, err := workshop.CleanName(body.Name)
	if err != nil {
		writeError(w, http.StatusBadRequest, "name", err.Error())
		return
	}
	if h.JoinCode != "" {
		if subtle.ConstantTimeCompare([]byte(body.Code), []byte(h.JoinCode)) != 1 {
			h.failures.wait(r.Context())
			writeError(w, http.StatusForbidden, "code", "that is not this workshop's join code")
			return
		}
		if !h.joined(r) && !h.joins.allow(addressOf(r), time.Now(), JoinsPerMinute) {
			writeError(w, http.StatusTooManyRequests, "participant", fmt.Sprintf(
				"more than %d participants joined from %s in a minute: wait a minute and join again", JoinsPerMinute, addressOf(r)))
			return
		}
	}
	if err := h.Room.Join(participantOf(r), name, time.Now()); err != nil {
		status := http.StatusConflict
		if errors.Is(err, workshop.ErrRoomFull) {
			status = http.StatusServiceUnavailable
		}
		writeError(w, status, "name", err.Error())
		return
	}
	if h.JoinCode != "" {
		http.SetCookie(w, &http.Cookie{Name: JoinCookie, Value: h.joinProof(participantOf(r)), Path: "/", MaxAge: 7 * 24 * 3600,
			HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: overHTTPS(r)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"joined": true, "name": name})
}
