package web

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/limitlab/limitlab/internal/experiments"
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

type errorsBody struct {
	Errors experiments.Errors `json:"errors"`
}

func (h *handlers) apiHost(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, h.Runs.Host())
}

func (h *handlers) apiPresets(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, experiments.Presets())
}

func (h *handlers) apiListRuns(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"runs": h.Runs.List()})
}

// apiCreateRun parses and validates a spec and starts it. Nothing starts
// unless every part of the spec is valid; every problem is reported at once.
func (h *handlers) apiCreateRun(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSpecBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSON(w, http.StatusRequestEntityTooLarge, errorsBody{experiments.Errors{{Lane: -1, Field: "spec", Message: "spec larger than 64 KiB"}}})
			return
		}
		writeJSON(w, http.StatusBadRequest, errorsBody{experiments.Errors{{Lane: -1, Field: "spec", Message: err.Error()}}})
		return
	}
	spec, errs := experiments.Parse(body)
	if errs != nil {
		writeJSON(w, http.StatusBadRequest, errorsBody{errs})
		return
	}
	plan, errs := experiments.Validate(spec, h.Runs.Host().Experiments())
	if errs != nil {
		writeJSON(w, http.StatusBadRequest, errorsBody{errs})
		return
	}
	run, err := h.Runs.Start(spec, plan)
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	w.Header().Set("Location", "/api/runs/"+run.ID())
	writeJSON(w, http.StatusCreated, map[string]string{"id": run.ID()})
}

func (h *handlers) apiGetRun(w http.ResponseWriter, r *http.Request) {
	run, ok := h.Runs.Get(chi.URLParam(r, "id"))
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such run"})
		return
	}
	writeJSON(w, http.StatusOK, run.View())
}

func (h *handlers) apiStopRun(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if err := h.Runs.Stop(id); err != nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
		return
	}
	run, _ := h.Runs.Get(id)
	writeJSON(w, http.StatusAccepted, run.View())
}
