package web

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"
	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/experiments/models"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
)

type limitField struct{ name, hint string }

// limitGroups are the limits the builder offers, in the CLI's names, in
// groups that open where a lane uses one of theirs.
var limitGroups = []limitGroup{
	{"cpu", "CPU", []limitField{{"cpus", "0.5"}, {"cpu-shares", "1024"}, {"cpuset-cpus", "0,1"}, {"cpu-period", "100000"}, {"cpu-quota", "50000"}}},
	{"memory", "Memory and pids", []limitField{{"memory", "64m"}, {"memory-swap", "128m"}, {"memory-reservation", "32m"}, {"pids-limit", "512"}}},
	{"io", "Block IO", []limitField{{"device-read-bps", "auto:5mb"}, {"device-write-bps", "auto:5mb"}, {"device-read-iops", "auto:100"}, {"device-write-iops", "auto:5"},
		{"blkio-weight", "500"}, {"blkio-weight-device", "auto:500"}}},
}

type limitGroup struct {
	name, title string
	fields      []limitField
}

type labGroup struct {
	topic string
	labs  []experiments.Lab
}

// labGroups are the labs by topic: the built-in topics in their order,
// then the facilitators' own in the order their first lab comes.
func labGroups(labs []experiments.Lab) []labGroup {
	var out []labGroup
	topics := slices.Clone(experiments.Topics)
	for _, l := range labs {
		if !slices.Contains(topics, l.Topic) {
			topics = append(topics, l.Topic)
		}
	}
	for _, t := range topics {
		g := labGroup{topic: t}
		for _, l := range labs {
			if l.Topic == t {
				g.labs = append(g.labs, l)
			}
		}
		if len(g.labs) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// unsupportedLimit is one thing the host banner says: the limits that
// share one reason, named together.
type unsupportedLimit struct {
	fields, reason string
}

// unsupportedLimits are the host's limits it does not apply, one line a
// reason, in the fields' order.
func unsupportedLimits(limits map[string]engine.Support) []unsupportedLimit {
	fields := slices.Sorted(maps.Keys(limits))
	var out []unsupportedLimit
	at := map[string]int{}
	for _, f := range fields {
		s := limits[f]
		if s.Supported {
			continue
		}
		if i, ok := at[s.Reason]; ok {
			out[i].fields += ", " + f
			continue
		}
		at[s.Reason] = len(out)
		out = append(out, unsupportedLimit{fields: f, reason: s.Reason})
	}
	return out
}

func (h pages) home(w http.ResponseWriter, r *http.Request) {
	runs := h.History.List("", 10)
	templ.Handler(homePage(h.Pool.Host(), experiments.Current(), runs, !h.joined(r))).ServeHTTP(w, r)
}

func (h pages) runPage(w http.ResponseWriter, r *http.Request) {
	host := h.Pool.Host()
	embed := r.URL.Query().Get("embed") == "1"
	h.renderRun(w, r, func(v runner.RunView) templ.Component { return runPage(v, host.NCPU, embed) })
}

// resultsFragment is the results table alone, which the run page fetches
// again whenever the run changes.
func (h pages) resultsFragment(w http.ResponseWriter, r *http.Request) {
	h.renderRun(w, r, results)
}

func (h pages) renderRun(w http.ResponseWriter, r *http.Request, component func(runner.RunView) templ.Component) {
	v, ok := h.History.View(chi.URLParam(r, "id"))
	if !ok {
		http.Error(w, "no such run", http.StatusNotFound)
		return
	}
	templ.Handler(component(v)).ServeHTTP(w, r)
}

func (h pages) labPage(w http.ResponseWriter, r *http.Request) { h.renderLab(w, r, labPage) }

// embedLab is a lab for another site's frame: its question, its lanes and
// a Run button for the server's participants.
func (h pages) embedLab(w http.ResponseWriter, r *http.Request) { h.renderLab(w, r, labEmbed) }

func (h pages) renderLab(w http.ResponseWriter, r *http.Request, component func(labView) templ.Component) {
	lv, status := h.labView(r)
	if status == http.StatusNotFound {
		http.Error(w, "no such lab", status)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = component(lv).Render(r.Context(), w)
}

// labView is a lab as its page shows it on this host, with the limits a
// link's lanes= parameter changes (docs/tutorials.md); 400 with the
// link's errors if they are bad, 404 if there is no such lab.
func (h pages) labView(r *http.Request) (labView, int) {
	lab, ok := experiments.LabByID(chi.URLParam(r, "id"))
	if !ok {
		return labView{}, http.StatusNotFound
	}
	host := h.Pool.Host()
	lv := labView{Lab: lab}
	lv.Shows, lv.Why = lab.Shows(host.Experiments())
	spec := lab.LabSpec()
	if param := r.URL.Query().Get("lanes"); param != "" {
		changed, changes, errs := lab.WithLinkLimits(param)
		lv.Link = &labLink{}
		if errs == nil {
			_, errs = h.Pool.Validate(changed)
		}
		if errs != nil {
			lv.Link.Errors = errs
			lv.Shows = false
			lv.Why = "This link's limits cannot run here."
		} else {
			spec = changed
			for _, c := range changes {
				lv.Link.Changes = append(lv.Link.Changes, c.Name+": "+fixedText(c.Limits))
			}
			b, _ := json.Marshal(spec)
			lv.Link.Spec = string(b)
		}
	}
	// Validated without the host's limits, so that a lab this host cannot
	// show still lists its lanes; the device auto is shown as the host's
	// disk where it is known.
	dev := host.DataRootDevice
	if dev == "" {
		dev = "auto"
	}
	plan, errs := experiments.Validate(spec, specs.Host{DataRootDevice: dev})
	if errs != nil {
		lv.Shows, lv.Why = false, errs.Error()
		return lv, http.StatusBadRequest
	}
	expected := models.Expected(plan, host.ModelHost())
	for i, l := range plan.Lanes {
		lv.Lanes = append(lv.Lanes, labLane{
			Name: l.Name, Workload: workloadText(l.Workload), Limits: limitsText(l.Resources),
			DockerRun: specs.DockerRun(engine.RepoOf(l.Workload), l.Workload, l.Resources, labNetwork(l)), Expected: expected[i],
		})
	}
	if note := host.SharesNote(); note != "" && slices.ContainsFunc(plan.Lanes, func(l specs.PlannedLane) bool { return l.Resources.CPUShares > 0 }) {
		lv.Notes = append(lv.Notes, note)
	}
	lv.Mode, lv.Plan = string(plan.Mode), planOfLab(lab, plan, host.ModelHost())
	if lv.Link != nil && lv.Link.Errors != nil {
		return lv, http.StatusBadRequest
	}
	return lv, http.StatusOK
}

// labNetwork is a lab lane's network mode in its docker run command.
func labNetwork(l specs.PlannedLane) string {
	if l.Target >= 0 {
		return "container:<" + strconv.Itoa(l.Target+1) + ". lane>"
	}
	return ""
}

func (h pages) historyPage(w http.ResponseWriter, r *http.Request) {
	lab := r.URL.Query().Get("lab")
	templ.Handler(historyPage(h.History.List(lab, 200), experiments.Labs(), lab)).ServeHTTP(w, r)
}

func (h pages) seriesPage(w http.ResponseWriter, r *http.Request) {
	s, ok := h.History.Series(chi.URLParam(r, "id"))
	if !ok {
		http.Error(w, "no such series: a series is named by its first run's id", http.StatusNotFound)
		return
	}
	templ.Handler(seriesPage(s)).ServeHTTP(w, r)
}

func (h pages) comparePage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a, okA := h.History.View(q.Get("a"))
	b, okB := h.History.View(q.Get("b"))
	if !okA || !okB {
		http.Error(w, "compare: pick two runs that exist: /compare?a=<run id>&b=<run id>", http.StatusNotFound)
		return
	}
	templ.Handler(comparePage(a, b)).ServeHTTP(w, r)
}

func (h pages) poolPage(w http.ResponseWriter, r *http.Request) {
	templ.Handler(poolPage(h.Pool.Engines())).ServeHTTP(w, r)
}

func (h pages) livePage(w http.ResponseWriter, r *http.Request) {
	templ.Handler(livePage()).ServeHTTP(w, r)
}

func (h pages) presenterPage(w http.ResponseWriter, r *http.Request) {
	templ.Handler(presenterPage()).ServeHTTP(w, r)
}

// labTitle is a lab's title, or "custom" for a run of no lab.
func labTitle(id string) string {
	if lab, ok := experiments.LabByID(id); ok {
		return lab.Title
	}
	if id == "" {
		return "custom"
	}
	return id
}

// laneName names row i of a comparison by either run's lane.
func laneName(a, b runner.RunView, i int) string {
	if i < len(a.Lanes) {
		return laneNameOf(a, i)
	}
	return laneNameOf(b, i)
}

// laneNameOf is lane i's name, or says there is no such lane: a view read
// from a store or a file is not trusted to index within bounds.
func laneNameOf(v runner.RunView, i int) string {
	if i < 0 || i >= len(v.Lanes) {
		return "no lane " + strconv.Itoa(i)
	}
	return v.Lanes[i].Name
}

func verdictText(v runner.RunView) string {
	vd := v.Verdict
	switch {
	case vd == nil:
		return "none yet"
	case !vd.Judged:
		return "not judged: " + vd.Explanation
	case vd.Pass:
		return "as predicted"
	}
	return "not as predicted: " + vd.Explanation
}
