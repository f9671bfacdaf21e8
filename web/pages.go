package web

import (
	"net/http"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/runner"
)

type limitField struct{ name, hint string }

// limitFields are the limits the builder offers, in the CLI's names.
var limitFields = []limitField{
	{"cpus", "0.5"}, {"cpu-shares", "1024"}, {"cpuset-cpus", "0,1"}, {"cpu-period", "100000"}, {"cpu-quota", "50000"},
	{"memory", "64m"}, {"memory-swap", "128m"}, {"memory-reservation", "32m"}, {"pids-limit", "512"},
}

func (h *handlers) home(w http.ResponseWriter, r *http.Request) {
	templ.Handler(homePage(h.Runs.Host(), experiments.Presets(), h.Runs.List())).ServeHTTP(w, r)
}

func (h *handlers) runPage(w http.ResponseWriter, r *http.Request) {
	h.renderRun(w, r, runPage)
}

// resultsFragment is the results table alone, which the run page fetches
// again whenever the run changes.
func (h *handlers) resultsFragment(w http.ResponseWriter, r *http.Request) {
	h.renderRun(w, r, resultsTable)
}

func (h *handlers) renderRun(w http.ResponseWriter, r *http.Request, component func(runner.RunView) templ.Component) {
	run, ok := h.Runs.Get(chi.URLParam(r, "id"))
	if !ok {
		http.Error(w, "no such run", http.StatusNotFound)
		return
	}
	templ.Handler(component(run.View())).ServeHTTP(w, r)
}
