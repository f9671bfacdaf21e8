package workshop

import "testing"

// Every (state, event) pair: where it goes, or that it cannot happen there.
// The pairs that matter most: a busy engine that fails a probe, or answers
// as another host, stays with its run (unresponsive, changed), and only a
// run's end takes an engine with a run to a state that prepares it.
func TestEngineTransitions(t *testing.T) {
	const no = EngineState("") // the event cannot happen in that state
	want := map[EngineState]map[engineEvent]EngineState{
		EnginePreparing: {
			evPrepared: EngineReady, evPrepareFailed: EnginePreparing,
			evAnswered: no, evSilent: no, evHostChanged: no, evRunPlaced: no, evRunsEnded: no, evRunLost: no,
		},
		EngineReady: {
			evPrepared: no, evPrepareFailed: no,
			evAnswered: EngineReady, evSilent: EngineLost, evHostChanged: EnginePreparing,
			evRunPlaced: EngineBusy, evRunsEnded: no, evRunLost: no,
		},
		EngineBusy: {
			evPrepared: no, evPrepareFailed: no,
			evAnswered: EngineBusy, evSilent: EngineUnresponsive, evHostChanged: EngineChanged,
			evRunPlaced: EngineBusy, evRunsEnded: EngineReady, evRunLost: EngineLost,
		},
		EngineUnresponsive: {
			evPrepared: no, evPrepareFailed: no,
			evAnswered: EngineBusy, evSilent: EngineUnresponsive, evHostChanged: EngineChanged,
			evRunPlaced: no, evRunsEnded: EnginePreparing, evRunLost: EngineLost,
		},
		EngineChanged: {
			evPrepared: no, evPrepareFailed: no,
			evAnswered: EngineChanged, evSilent: EngineChanged, evHostChanged: EngineChanged,
			evRunPlaced: no, evRunsEnded: EnginePreparing, evRunLost: EngineLost,
		},
		EngineLost: {
			evPrepared: EngineReady, evPrepareFailed: EngineLost,
			evAnswered: no, evSilent: no, evHostChanged: no, evRunPlaced: no, evRunsEnded: no, evRunLost: no,
		},
	}
	if len(want) != len(engineStates) {
		t.Fatalf("the table has %d states, the machine %d", len(want), len(engineStates))
	}
	for _, s := range engineStates {
		if len(want[s]) != len(engineEvents) {
			t.Fatalf("state %s: the table has %d events, the machine %d", s, len(want[s]), len(engineEvents))
		}
		for _, ev := range engineEvents {
			t.Run(string(s)+"/"+string(ev), func(t *testing.T) {
				got, ok := transition(s, ev)
				w := want[s][ev]
				switch {
				case w == no && (ok || got != s):
					t.Errorf("got %s (ok %v), want the event refused and the state kept", got, ok)
				case w != no && (!ok || got != w):
					t.Errorf("got %s (ok %v), want %s", got, ok, w)
				}
			})
		}
	}
}

// What a state lets the pool do: only an engine with no run on it is made
// ready, and only a ready or busy one takes a run.
func TestEngineStateRules(t *testing.T) {
	for _, s := range engineStates {
		prepares := s == EnginePreparing || s == EngineLost
		takes := s == EngineReady || s == EngineBusy
		if s.prepares() != prepares || s.takesRuns() != takes {
			t.Errorf("%s: prepares %v takes runs %v, want %v %v", s, s.prepares(), s.takesRuns(), prepares, takes)
		}
		// A state that can hold a run never prepares.
		if _, ok := transition(s, evRunsEnded); ok && s.prepares() {
			t.Errorf("%s can end runs and prepares", s)
		}
	}
}
