package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/experiments/finder"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/workshop"
)

// Finder is what the handlers need of the limit searches.
type Finder interface {
	// Start refuses a spec with specs.Errors, and a participant's
	// second search at once with a *workshop.QuotaError.
	Start(spec finder.FindSpec, participant, address string) (*workshop.Search, error)
	View(id string) (workshop.SearchView, bool)
	Stop(id string) error
	// Owner is a running search's participant.
	Owner(id string) (string, bool)
}

// maxFindBytes bounds a search's spec.
const maxFindBytes = 16 << 10

// apiStartFind checks a search and starts it: every problem is reported at
// once, naming its field, and nothing runs unless all is well.
func (h api) apiStartFind(w http.ResponseWriter, r *http.Request) {
	if h.Finder == nil {
		writeError(w, http.StatusNotFound, "find", "this server runs no limit searches")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxFindBytes))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "find", "a search's spec is at most 16 KiB")
		return
	}
	spec, errs := experiments.ParseFind(body)
	if errs != nil {
		writeErrors(w, http.StatusBadRequest, errs)
		return
	}
	s, err := h.Finder.Start(spec, participantOf(r), h.countedAddress(r))
	var quota *workshop.QuotaError
	switch {
	case errors.As(err, &quota):
		writeQuota(w, quota)
		return
	case errors.As(err, &errs):
		writeErrors(w, http.StatusBadRequest, errs)
		return
	case err != nil:
		writeFailure(w, "find", err)
		return
	}
	w.Header().Set("Location", "/api/find/"+s.ID())
	writeJSON(w, http.StatusCreated, createdBody{ID: s.ID()})
}

// search is the search the URL names; ok is false, and why says why,
// where there is none.
func (h *handlers) search(r *http.Request) (v workshop.SearchView, why string, ok bool) {
	if h.Finder == nil {
		return v, "this server runs no limit searches", false
	}
	if v, ok = h.Finder.View(chi.URLParam(r, "id")); !ok {
		return v, "no such search", false
	}
	return v, "", true
}

// apiSearch is the URL's search, or the API's 404 written.
func (h api) apiSearch(w http.ResponseWriter, r *http.Request) (workshop.SearchView, bool) {
	v, why, ok := h.search(r)
	if !ok {
		writeError(w, http.StatusNotFound, "find", why)
	}
	return v, ok
}

// pageSearch is the URL's search, or a page's 404 written.
func (h pages) pageSearch(w http.ResponseWriter, r *http.Request) (workshop.SearchView, bool) {
	v, why, ok := h.search(r)
	if !ok {
		http.Error(w, why, http.StatusNotFound)
	}
	return v, ok
}

func (h api) apiGetFind(w http.ResponseWriter, r *http.Request) {
	if v, ok := h.apiSearch(w, r); ok {
		writeJSON(w, http.StatusOK, v)
	}
}

// apiStopFind stops a search: its participant's, or the presenter's.
func (h api) apiStopFind(w http.ResponseWriter, r *http.Request) {
	v, ok := h.apiSearch(w, r)
	if !ok {
		return
	}
	if owner, live := h.Finder.Owner(v.ID); live && owner != participantOf(r) && !h.isPresenter(r) {
		writeError(w, http.StatusForbidden, "find", "only the participant who started a search, or the presenter, may stop it")
		return
	}
	if err := h.Finder.Stop(v.ID); err != nil && !errors.Is(err, workshop.ErrNoRun) {
		writeFailure(w, "find", err)
		return
	}
	writeJSON(w, http.StatusAccepted, stoppingBody{Stopping: v.ID})
}

func (h pages) findFormPage(w http.ResponseWriter, r *http.Request) {
	templ.Handler(findForm()).ServeHTTP(w, r)
}

func (h pages) findPage(w http.ResponseWriter, r *http.Request) {
	if v, ok := h.pageSearch(w, r); ok {
		templ.Handler(findPage(v)).ServeHTTP(w, r)
	}
}

// findFragment is the moving part of a search's page.
func (h pages) findFragment(w http.ResponseWriter, r *http.Request) {
	if v, ok := h.pageSearch(w, r); ok {
		templ.Handler(findLive(v)).ServeHTTP(w, r)
	}
}

// serviceText says what a search runs: the built-in service and its work,
// or a facilitator's image.
func serviceText(fs finder.FindSpec) string {
	w := fs.Service
	if w.Kind == specs.KindImage {
		return fmt.Sprintf("the facilitator's image %s, serving on port %d", w.Image, w.Port)
	}
	return fmt.Sprintf("the built-in Go HTTP service, %d µs of CPU a request, GOMAXPROCS %s", w.WorkUS, w.GOMAXPROCS)
}

// fixedText is a search's fixed limits as docker run flags, as given:
// "--cpus 0.7" (the Limits' JSON names are the flags').
func fixedText(l specs.Limits) string {
	b, err := json.Marshal(l)
	var flags map[string]string
	if err != nil || json.Unmarshal(b, &flags) != nil {
		return ""
	}
	var parts []string
	for name, v := range flags {
		parts = append(parts, "--"+name+" "+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}
