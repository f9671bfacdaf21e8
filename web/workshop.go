package web

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/go-chi/chi/v5"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/workshop"
)

// MinPresenterToken is the shortest presenter token the server takes.
const MinPresenterToken = 16

// isPresenter checks the request's bearer token in constant time. Wrong
// tokens are counted per address (presenterGuard): an address that fails
// a few times is refused for a while, the right token included, and no
// one else waits for it.
func (h *handlers) isPresenter(r *http.Request) bool {
	ok, _ := h.presenterAuth(r)
	return ok
}

// presenterAuth is isPresenter, with how long the request's address is
// still refused when it is locked out.
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

// tokenIs checks a presenter token in constant time, counting a wrong one
// against the request's address.
func (h *handlers) tokenIs(r *http.Request, got string) (bool, time.Duration) {
	if h.PresenterToken == "" {
		return false, 0
	}
	right := subtle.ConstantTimeCompare([]byte(got), []byte(h.PresenterToken)) == 1
	if wait, ok := h.presenterGuard.attempt(addressOf(r), right, time.Now()); !ok {
		return false, wait
	}
	return right, 0
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
			refuseFor(w, wait, "presenter", fmt.Sprintf("too many wrong presenter tokens from %s: try again in %s", addressOf(r), wait.Round(time.Second)))
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

// maxImportBytes bounds an imported run: a twelve-lane run of ten minutes
// at 100 ms samples is about 40 MiB of JSON.
const maxImportBytes = 64 << 20

func (h api) apiExport(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	format := r.URL.Query().Get("format")
	if format == "" {
		format = "json"
	}
	v, ok := h.History.View(id)
	if !ok {
		writeError(w, http.StatusNotFound, "run", "no such run")
		return
	}
	name := "limitlab-" + id
	switch format {
	case "lab":
		// The run's spec as a lab file for -labs, its lab's texts, verdict
		// and steps with it where it ran one.
		var from *experiments.Lab
		if lab, ok := experiments.LabByID(v.Lab); ok {
			from = &lab
		}
		lab := experiments.LabFile(experiments.LabID(v.Name, id[:min(6, len(id))]), v.Spec, from)
		w.Header().Set("Content-Disposition", `attachment; filename="`+lab.ID+`.json"`)
		writeJSON(w, http.StatusOK, lab)
	case "json":
		e, err := h.History.Export(id)
		if err != nil {
			writeFailure(w, "run", err)
			return
		}
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.json"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		enc := json.NewEncoder(newDeadlineWriter(w, h.WriteTimeout))
		enc.SetIndent("", "  ")
		if err := enc.Encode(e); err != nil {
			h.Log.Debug("export json", slog.String("run", id), slog.Any("err", err))
		}
	case "csv":
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.csv"`)
		if err := h.History.WriteCSV(newDeadlineWriter(w, h.WriteTimeout), id); err != nil {
			h.Log.Error("export csv", slog.String("run", id), slog.Any("err", err))
		}
	case "html":
		// One page that replays the run with no server: docs/tutorials.md.
		page, err := h.published(r.Context(), id, false)
		if err != nil {
			h.writePublishFailure(w, err)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.html"`)
		_, _ = newDeadlineWriter(w, h.WriteTimeout).Write(page)
	default:
		writeError(w, http.StatusBadRequest, "format", fmt.Sprintf("format %q: want json, csv, html or lab", format))
	}
}

func (h api) apiImport(w http.ResponseWriter, r *http.Request) {
	if !h.imports.allow(participantOf(r), time.Now(), ImportsPerMinute) {
		writeError(w, http.StatusTooManyRequests, "import", fmt.Sprintf("import: at most %d imports a minute per participant", ImportsPerMinute))
		return
	}
	var e workshop.Export
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxImportBytes))
	if err := dec.Decode(&e); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "import", "import: larger than 64 MiB")
			return
		}
		writeError(w, http.StatusBadRequest, "import", "import: not JSON: "+err.Error())
		return
	}
	id, err := h.History.Import(e)
	if err != nil {
		writeFailure(w, "import", err)
		return
	}
	w.Header().Set("Location", "/runs/"+id)
	writeJSON(w, http.StatusCreated, createdBody{ID: id})
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
