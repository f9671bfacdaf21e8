package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/limitlab/limitlab/internal/workshop"
)

// ParticipantCookie holds a browser's participant id: the queue's fairness
// and the per-participant limits go by it. JoinCookie proves the
// participant entered the workshop's join code.
// Over TLS each carries the __Host- prefix (cookieName): the browser
// then keeps it only as the server set it, Secure, for this host alone
// and the whole site, so that a neighbour on another subdomain or on
// plain http cannot plant one.
const (
	ParticipantCookie = "limitlab_participant"
	JoinCookie        = "limitlab_join"
	hostPrefix        = "__Host-"
)

// cookieName is a cookie's name on this request: with the __Host- prefix
// over TLS.
func cookieName(r *http.Request, name string) string {
	if overHTTPS(r) {
		return hostPrefix + name
	}
	return name
}

type participantKey struct{}

type who struct {
	id string
}

// participant gives every browser a participant id the server issues and
// signs, in a cookie it keeps for a year. A cookie the server did not sign
// counts for nothing: its holder is a new participant. A client without
// cookies is a new participant each request; past NewParticipantsBurst
// from its address, it may watch but not act.
func (h *handlers) participant(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := who{}
		if c, err := r.Cookie(cookieName(r, ParticipantCookie)); err == nil {
			p.id, _ = h.sign.participantOf(c.Value)
		}
		if p.id == "" {
			b := make([]byte, 16)
			_, _ = rand.Read(b)
			p.id = hex.EncodeToString(b)
			http.SetCookie(w, &http.Cookie{Name: cookieName(r, ParticipantCookie), Value: h.sign.participantCookie(p.id), Path: "/", MaxAge: 365 * 24 * 3600,
				HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: overHTTPS(r)})
			// A join with the code is bounded by its own rate below: the
			// code, not the address, says who is in the room.
			joining := r.Method == http.MethodPost && r.URL.Path == "/api/join"
			if !joining && r.Method != http.MethodGet && r.Method != http.MethodHead && !h.newcomers.allow(guardKey(addressOf(r)), time.Now()) {
				writeError(w, http.StatusTooManyRequests, "participant", fmt.Sprintf(
					"too many new participants from %s (%d at once, then one every %s): keep the cookie the server gives (curl -c jar -b jar)",
					addressOf(r), NewParticipantsBurst, NewParticipantsEvery))
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), participantKey{}, p)))
	})
}

func participantOf(r *http.Request) string {
	p, _ := r.Context().Value(participantKey{}).(who)
	return p.id
}

// joined says whether the request's participant entered the join code
// within JoinTTL, and is still in the room; every participant has when
// the server has no code.
func (h *handlers) joined(r *http.Request) bool {
	if h.JoinCode == "" {
		return true
	}
	c, err := r.Cookie(cookieName(r, JoinCookie))
	if err != nil {
		return false
	}
	id := participantOf(r)
	return h.sign.joined(id, h.JoinCode, c.Value, time.Now()) && !h.Room.Removed(id)
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

// JoinAnswerTime is how long every join with a code takes to answer,
// right or wrong: the answer's timing tells nothing of the code.
const JoinAnswerTime = 250 * time.Millisecond

// apiJoin checks a join code and gives the participant its proof, and
// takes the display name the participant gives, if any. Wrong codes are
// throttled per address (joinWrong): while an address has no token left,
// its codes are not judged, right or wrong, for the seconds a token takes
// to come; a room's few typos never get there. New identities joining
// from one address are throttled too (joinNew), and a closed room takes
// none.
func (h api) apiJoin(w http.ResponseWriter, r *http.Request) {
	started := time.Now()
	var body struct {
		Code string `json:"code"`
		Name string `json:"name"`
	}
	// The home page's form posts itself if Enter is pressed before its
	// script has loaded: the code goes in the body, never in a URL.
	form := false
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "application/x-www-form-urlencoded" {
		r.Body = http.MaxBytesReader(w, r.Body, 4096)
		if err := r.ParseForm(); err != nil {
			writeError(w, http.StatusBadRequest, "code", "join: a form of at most 4 KiB with code and name")
			return
		}
		form, body.Code, body.Name = true, r.PostForm.Get("code"), r.PostForm.Get("name")
	} else if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "code", "join: want {\"code\": \"...\", \"name\": \"...\"}")
		return
	}
	name, err := workshop.CleanName(body.Name)
	if err != nil {
		writeError(w, http.StatusBadRequest, "name", err.Error())
		return
	}
	id, key := participantOf(r), guardKey(addressOf(r))
	if h.JoinCode != "" {
		right := subtle.ConstantTimeCompare([]byte(body.Code), []byte(h.JoinCode)) == 1
		// A wrong code takes a token, so that codes sent together are
		// all counted; a right one only looks.
		wait := h.joinWrong.wait(key, started)
		if !right {
			wait = h.joinWrong.take(key, started)
		}
		if wait > 0 {
			refuseFor(w, wait, "code", fmt.Sprintf("too many wrong join codes from %s: the next is judged in %s", addressOf(r), wait.Round(time.Second)))
			return
		}
		answerAt(r.Context(), started.Add(JoinAnswerTime))
		if !right {
			writeError(w, http.StatusForbidden, "code", "that is not this workshop's join code")
			return
		}
		if !h.Room.Known(id) && !h.joined(r) && h.Room.Open() {
			if wait := h.joinNew.take(key, time.Now()); wait > 0 {
				refuseFor(w, wait, "participant", fmt.Sprintf("too many participants joined from %s (%d at once, then one every %s): join again in %s",
					addressOf(r), JoinBurst, JoinEvery, wait.Round(time.Second)))
				return
			}
		}
	}
	if err := h.Room.Join(id, name, key, time.Now()); err != nil {
		status, field := http.StatusConflict, "name"
		switch {
		case errors.Is(err, workshop.ErrRemoved):
			status = http.StatusForbidden
		case errors.Is(err, workshop.ErrClosed):
			status, field = http.StatusForbidden, "room"
		}
		writeError(w, status, field, err.Error())
		return
	}
	if h.JoinCode != "" {
		http.SetCookie(w, &http.Cookie{Name: cookieName(r, JoinCookie), Value: h.sign.joinProof(id, h.JoinCode, time.Now().Add(JoinTTL)), Path: "/",
			MaxAge: int(JoinTTL / time.Second), HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: overHTTPS(r)})
	}
	if form {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	writeJSON(w, http.StatusOK, joinAnswer{Joined: true, Name: name})
}

// answerAt waits until at, or until the client leaves.
func answerAt(ctx context.Context, at time.Time) {
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// refuseFor answers 429 with Retry-After: the client may try again after
// wait.
func refuseFor(w http.ResponseWriter, wait time.Duration, field, msg string) {
	w.Header().Set("Retry-After", strconv.Itoa(int(wait.Round(time.Second)/time.Second)+1))
	writeError(w, http.StatusTooManyRequests, field, msg)
}
