package web

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/go-chi/chi/v5"
)

// MinPresenterToken is the shortest presenter token the server takes.
const MinPresenterToken = 16

// isPresenter checks the request's bearer token in constant time. The
// right token always works; wrong ones are slowed per address
// (presenterWrong), and only they.
func (h *handlers) isPresenter(r *http.Request) bool {
	ok, _ := h.presenterAuth(r)
	return ok
}

// presenterAuth is isPresenter, with how long the request's address must
// wait before its next wrong token is judged, if it must.
func (h *handlers) presenterAuth(r *http.Request) (bool, time.Duration) {
	if h.PresenterToken == "" {
		return false, 0
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false, 0
	}
	return h.tokenIs(r, got)
}

// tokenIs checks a presenter token in constant time. A wrong one takes a
// token of its address's bucket, or is answered with the wait for one: a
// neighbour's wrong tokens never hold the right one up. The token itself
// (at least MinPresenterToken characters) is what keeps it from being
// guessed.
func (h *handlers) tokenIs(r *http.Request, got string) (bool, time.Duration) {
	if h.PresenterToken == "" {
		return false, 0
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(h.PresenterToken)) == 1 {
		return true, 0
	}
	return false, h.presenterWrong.take(guardKey(addressOf(r)), time.Now())
}

// presenterOnly refuses a call without the presenter's token.
func (h *handlers) presenterOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.PresenterToken == "" {
			writeError(w, http.StatusForbidden, "presenter", "presenter calls are off: the server was started without a presenter token (-presenter-token or LIMITLAB_PRESENTER_TOKEN)")
			return
		}
		ok, wait := h.presenterAuth(r)
		switch {
		case wait > 0:
			refuseFor(w, wait, "presenter", fmt.Sprintf("too many wrong presenter tokens from %s: the next is judged in %s", addressOf(r), wait.Round(time.Second)))
		case !ok:
			w.Header().Set("WWW-Authenticate", `Bearer realm="limitlab presenter"`)
			writeError(w, http.StatusUnauthorized, "presenter", "presenter only: send Authorization: Bearer <the token given at start-up>")
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// mayControl says whether the request may stop a run or change its
// limits: its participant, or the presenter. An ended run has nothing to
// control; the handlers say so themselves.
func (h *handlers) mayControl(r *http.Request, id string) bool {
	if h.isPresenter(r) {
		return true
	}
	owner, live := h.Runs.Owner(id)
	return !live || owner == participantOf(r)
}

func (h presenter) apiFeature(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if err := h.Featured.Feature(id); err != nil {
		writeFailure(w, "run", err)
		return
	}
	writeJSON(w, http.StatusOK, featuredBody{Featured: id})
}

func (h api) apiFeatured(w http.ResponseWriter, r *http.Request) {
	id, ok := h.Featured.Current()
	if !ok {
		writeError(w, http.StatusNotFound, "featured", "no run is featured yet")
		return
	}
	v, ok := h.History.View(id)
	if !ok {
		writeError(w, http.StatusNotFound, "featured", "the featured run is gone")
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (h presenter) apiClearQueue(w http.ResponseWriter, r *http.Request) {
	n := h.Runs.ClearQueue("", "the presenter cleared the queue before this run started")
	writeJSON(w, http.StatusOK, clearedBody{Cleared: n})
}

func (h presenter) apiPresenterCheck(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, presenterBody{Presenter: true, JoinCode: h.JoinCode})
}

// featuredLive streams which run is featured: the current one on connect,
// then each change, so /live follows the presenter without a reload.
// featuredViewers is the key the featured stream's viewers are counted
// under: no run id looks like it.
const featuredViewers = "featured"

func (h streams) featuredLive(w http.ResponseWriter, r *http.Request) {
	// The projector's viewers are a run's viewers like any: the same
	// caps, counted apart from the featured run's own page.
	release, err := h.viewers.acquire(featuredViewers, h.countedAddress(r), h.MaxViewersPerRun, h.MaxViewersPerAddress)
	if err != nil {
		writeError(w, http.StatusTooManyRequests, "viewers", err.Error())
		return
	}
	defer release()
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: h.AllowedOrigins})
	if err != nil {
		return
	}
	defer c.CloseNow()
	ctx := c.CloseRead(r.Context())
	history, sub := h.Featured.Feed().Subscribe()
	defer sub.Unsubscribe()
	if n := len(history); n > 0 {
		if err := h.write(ctx, c, history[n-1]); err != nil {
			return
		}
	}
	if h.forward(ctx, c, sub) {
		// Dropped for falling behind: the page reconnects.
		c.Close(websocket.StatusGoingAway, "reconnect")
	}
}
