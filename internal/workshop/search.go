package workshop

import (
	"context"
	"sync"
	"time"

	"github.com/limitlab/limitlab/internal/experiments/finder"
	"github.com/limitlab/limitlab/internal/runner"
)

// SearchState is where a limit search is in its life: running until it
// has its answer, fails, or is stopped; an ended search stays as it ended.
type SearchState string

// The states of a search.
const (
	SearchRunning SearchState = "running"
	SearchDone    SearchState = "done"
	SearchFailed  SearchState = "failed"
	SearchStopped SearchState = "stopped"
)

// searchEvent is what happens to a search.
type searchEvent int

const (
	searchAnswered     searchEvent = iota // the bisection has its answer
	searchFailed                          // a probe failed, or no answer within MaxProbes
	searchPastDeadline                    // the search ran past its deadline
	searchStopped                         // its participant, the presenter or the server stopped it
)

// transition is the one place a search's state changes: only a running
// search ends, and an ended one stays as it ended.
func (s SearchState) transition(e searchEvent) (SearchState, bool) {
	if s != SearchRunning {
		return s, false
	}
	switch e {
	case searchAnswered:
		return SearchDone, true
	case searchFailed, searchPastDeadline:
		return SearchFailed, true
	case searchStopped:
		return SearchStopped, true
	}
	return s, false
}

// Search is one limit search. Its state is private; SearchView is a
// snapshot built from it when asked (view).
type Search struct {
	id, participant, address string
	spec                     finder.FindSpec
	created                  time.Time
	stop                     context.CancelFunc
	deadline                 time.Duration // over the whole search

	mu      sync.Mutex
	b       *finder.Bisection
	probes  []probeRecord
	state   SearchState
	err     string
	current string // the probe run under way
	ended   time.Time
	// then is the search of the second turn, started when this one found
	// its answer; after, the search whose answer this one holds fixed.
	then, after string
}

// probeRecord is one probe as the search keeps it: the limit, its run,
// and once the run ended, how, and what it measured.
type probeRecord struct {
	step   int
	limit  float64
	run    string
	ended  runner.State // "" while it runs
	result *finder.ProbeRun
	meets  *bool
}

// ID is the search's id.
func (s *Search) ID() string { return s.id }

// end moves the search to the state e leads to, with why; it says
// whether the search was still running.
func (s *Search) end(e searchEvent, why string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	next, ok := s.state.transition(e)
	if ok {
		s.state, s.err, s.ended = next, why, time.Now()
	}
	return ok
}

// isEnded says whether the search has ended.
func (s *Search) isEnded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state != SearchRunning
}

// ProbeView is one probe: a limit, its run and what it measured.
type ProbeView struct {
	Step   int              `json:"step"`
	Limit  float64          `json:"limit"`
	Text   string           `json:"limit_text"`
	Run    string           `json:"run"`
	State  string           `json:"state"`
	Result *finder.ProbeRun `json:"result,omitempty"`
	Meets  *bool            `json:"meets,omitempty"`
}

// SearchView is a search as the page and the API show it.
type SearchView struct {
	ID      string          `json:"id"`
	Name    string          `json:"name"`
	State   SearchState     `json:"state"`
	Error   string          `json:"error,omitempty"`
	Spec    finder.FindSpec `json:"spec"`
	Created time.Time       `json:"created_at"`
	Min     float64         `json:"min"`
	Max     float64         `json:"max"`
	Step    float64         `json:"resolution"`
	// Needs is the model's floor for an open loop (rate × work, cores).
	Needs  float64        `json:"model_needs_cores,omitempty"`
	Probes []ProbeView    `json:"probes"`
	Answer *finder.Answer `json:"answer,omitempty"`
	// Verdict compares the answer with the allotment model's floor.
	Verdict   *FindVerdict           `json:"verdict,omitempty"`
	Recommend *finder.Recommendation `json:"recommendation,omitempty"`
	// GridRuns is how many runs a sweep of every limit once would take.
	GridRuns int `json:"grid_runs"`
	// Then is the search of the second turn (the other limit, with this
	// answer fixed); After, the search whose answer this one holds fixed.
	Then  string `json:"then,omitempty"`
	After string `json:"after,omitempty"`
}

// FindVerdict is a search's answer against the model.
type FindVerdict struct {
	Pass        bool   `json:"pass"`
	Explanation string `json:"explanation"`
}

// view is the one builder of a search's view: a probe's state is how its
// run ended, or while it runs, its run's state now (runState).
func (s *Search) view(runState func(id string) (runner.State, bool)) SearchView {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := SearchView{ID: s.id, Name: s.spec.Name, State: s.state, Error: s.err, Spec: s.spec, Created: s.created,
		Min: s.b.Min, Max: s.b.Max, Step: s.b.Resolution, Needs: s.spec.ServiceNeeds(), Probes: make([]ProbeView, len(s.probes)),
		Then: s.then, After: s.after, GridRuns: s.b.Limits()}
	if v.Name == "" {
		v.Name = "find the limit"
	}
	for i, p := range s.probes {
		v.Probes[i] = ProbeView{Step: p.step, Limit: p.limit, Text: finder.LimitText(s.spec.Search.Limit, p.limit), Run: p.run,
			State: string(p.ended), Result: p.result, Meets: p.meets}
		if p.ended == "" {
			v.Probes[i].State = string(runner.StateQueued)
			if st, ok := runState(p.run); ok {
				v.Probes[i].State = string(st)
			}
		}
	}
	if s.state == SearchDone {
		a := s.b.Answer()
		v.Answer, v.Recommend = &a, s.spec.Recommend(s.b, a)
		if judged, pass, text := finder.JudgeFind(s.spec, a); judged {
			v.Verdict = &FindVerdict{Pass: pass, Explanation: text}
		}
	}
	return v
}
