package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workshop"
)

// maxSpecBytes bounds a spec upload; twelve lanes fit in a few KiB.
const maxSpecBytes = 64 << 10

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func (h api) apiHost(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, h.Pool.Host().View())
}

// apiEngines lists the engines runs are placed on: one without a pool.
func (h api) apiEngines(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, enginesBody{Engines: h.Pool.Engines()})
}

func (h api) apiLabs(w http.ResponseWriter, r *http.Request) {
	c := experiments.Current()
	writeJSON(w, http.StatusOK, labsBody{Labs: c.Labs(), Broken: c.Broken()})
}

func (h api) apiListRuns(w http.ResponseWriter, r *http.Request) {
	limit := 100
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > workshop.MaxList {
			writeError(w, http.StatusBadRequest, "limit", fmt.Sprintf("limit %q: want 1 to %d", s, workshop.MaxList))
			return
		}
		limit = n
	}
	writeJSON(w, http.StatusOK, runsBody{Runs: h.History.List(r.URL.Query().Get("lab"), limit)})
}

// apiCreateRun parses and validates a spec and starts it. Nothing starts
// unless every part of the spec is valid; every problem is reported at once.
func (h api) apiCreateRun(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSpecBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeErrors(w, http.StatusRequestEntityTooLarge, specs.Errors{{Lane: -1, Field: "spec", Message: "spec larger than 64 KiB"}})
			return
		}
		writeErrors(w, http.StatusBadRequest, specs.Errors{{Lane: -1, Field: "spec", Message: err.Error()}})
		return
	}
	spec, errs := experiments.Parse(body)
	if errs != nil {
		writeErrors(w, http.StatusBadRequest, errs)
		return
	}
	plan, errs := h.Pool.Validate(spec)
	if errs != nil {
		writeErrors(w, http.StatusBadRequest, errs)
		return
	}
	run, err := h.Runs.SubmitFrom(spec, plan, participantOf(r), h.countedAddress(r))
	var quota *workshop.QuotaError
	switch {
	case errors.As(err, &quota):
		writeQuota(w, quota)
		return
	case err != nil:
		writeFailure(w, "run", err)
		return
	}
	h.Room.Ran(participantOf(r), run.ID(), time.Now())
	w.Header().Set("Location", "/api/runs/"+run.ID())
	writeJSON(w, http.StatusCreated, createdBody{ID: run.ID()})
}

// apiUpdateLimits changes a running lane's limits: the body holds the
// limits to change, with the spec's field names ({"cpus": "0.25"}).
func (h api) apiUpdateLimits(w http.ResponseWriter, r *http.Request) {
	lane, err := strconv.Atoi(chi.URLParam(r, "lane"))
	if err != nil {
		writeError(w, http.StatusNotFound, "lane", "no such lane")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSpecBytes))
	if err != nil {
		writeErrors(w, http.StatusBadRequest, specs.Errors{{Lane: lane, Field: "limits", Message: err.Error()}})
		return
	}
	if !h.mayControl(r, chi.URLParam(r, "id")) {
		writeErrors(w, http.StatusForbidden, specs.Errors{{Lane: lane, Field: "limits", Message: "only the participant who started this run, or the presenter, may change its limits"}})
		return
	}
	change, errs := specs.ParseLimits(body)
	if errs != nil {
		for i := range errs {
			errs[i].Lane = lane
		}
		writeErrors(w, http.StatusBadRequest, errs)
		return
	}
	rec, err := h.Changes.UpdateLimits(r.Context(), chi.URLParam(r, "id"), lane, change)
	var verrs specs.Errors
	var quota *workshop.QuotaError
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, rec)
	case errors.As(err, &quota):
		writeQuota(w, quota)
	case errors.As(err, &verrs):
		writeErrors(w, http.StatusBadRequest, verrs)
	case errors.Is(err, runner.ErrLaneNotRunning):
		writeErrors(w, http.StatusConflict, specs.Errors{{Lane: lane, Field: "limits", Message: err.Error()}})
	default:
		writeErrors(w, statusOf(err), specs.Errors{{Lane: lane, Field: "limits", Message: err.Error()}})
	}
}

func (h api) apiGetRun(w http.ResponseWriter, r *http.Request) {
	v, ok := h.History.View(chi.URLParam(r, "id"))
	if !ok {
		writeError(w, http.StatusNotFound, "run", "no such run")
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (h api) apiSeries(w http.ResponseWriter, r *http.Request) {
	s, ok := h.History.Series(chi.URLParam(r, "id"))
	if !ok {
		writeError(w, http.StatusNotFound, "series", "no such series: a series is named by its first run's id")
		return
	}
	writeJSON(w, http.StatusOK, s)
}

func (h api) apiStopRun(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if !h.mayControl(r, id) {
		writeError(w, http.StatusForbidden, "run", "only the participant who started this run, or the presenter, may stop it")
		return
	}
	if err := h.Runs.Stop(id); err != nil {
		writeFailure(w, "run", err)
		return
	}
	v, _ := h.History.View(id)
	writeJSON(w, http.StatusAccepted, v)
}

// statusOf maps the workshop's and the runner's errors to HTTP statuses:
// what is not there is 404, a server that is stopping 503, a file that is
// not a valid run 400; anything else is the server's fault.
func statusOf(err error) int {
	var invalid *workshop.InvalidImportError
	switch {
	case errors.Is(err, workshop.ErrNoRun), errors.Is(err, runner.ErrNoLane):
		return http.StatusNotFound
	case errors.Is(err, workshop.ErrShuttingDown), errors.Is(err, workshop.ErrStore):
		return http.StatusServiceUnavailable
	case errors.As(err, &invalid):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}
