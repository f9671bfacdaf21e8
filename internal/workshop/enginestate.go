package workshop

// EngineState is where an engine of the manager is in its life. Every
// change of state is made by transition, from the state it is in and what
// happened; nothing else sets it.
type EngineState string

const (
	// EnginePreparing: to be made ready (its host probed, the workload
	// image built, this server's leftovers reaped) at the next probe. An
	// engine starts here, and comes back here once its host changed under
	// a run that has since ended. No run is on it, so reaping is safe.
	EnginePreparing EngineState = "preparing"
	// EngineReady: made ready, answering, no run on it.
	EngineReady EngineState = "ready"
	// EngineBusy: made ready, answering, a run on it.
	EngineBusy EngineState = "busy"
	// EngineUnresponsive: a run is on it and its last probe failed or was
	// too slow. The run goes on (a paused or loaded engine keeps its
	// containers running); the engine takes no other run until a probe
	// answers again. It is never made ready while the run is on it.
	EngineUnresponsive EngineState = "unresponsive"
	// EngineChanged: a run is on it and its host is no longer the one it
	// was made ready on. It takes no other run, and is made ready again
	// once the run ends.
	EngineChanged EngineState = "changed"
	// EngineLost: it went away. A run on it ended interrupted, or it failed
	// a probe while idle. It is made ready again when it answers, which
	// also removes the interrupted runs' containers.
	EngineLost EngineState = "lost"
)

// engineStates lists every state, for tests and views.
var engineStates = []EngineState{EnginePreparing, EngineReady, EngineBusy, EngineUnresponsive, EngineChanged, EngineLost}

// engineEvent is what can happen to an engine.
type engineEvent string

const (
	evPrepared      engineEvent = "prepared"       // Prepare succeeded
	evPrepareFailed engineEvent = "prepare failed" // Prepare failed
	evAnswered      engineEvent = "answered"       // a probe answered, the same host
	evSilent        engineEvent = "silent"         // a probe failed or timed out
	evHostChanged   engineEvent = "host changed"   // a probe answered as another host
	evRunPlaced     engineEvent = "run placed"     // the queue placed a run on it
	evRunsEnded     engineEvent = "runs ended"     // its last run ended, not for its going away
	evRunLost       engineEvent = "run lost"       // a run ended interrupted by the engine's going away
)

var engineEvents = []engineEvent{evPrepared, evPrepareFailed, evAnswered, evSilent, evHostChanged, evRunPlaced, evRunsEnded, evRunLost}

// transition is the engine's next state after ev, and whether ev can
// happen in s at all; an event that cannot leaves the state as it is.
// The rules that keep runs safe: an engine with a run on it is never sent
// to a state that prepares it (preparing, lost) but by the run's ending;
// a busy engine that does not answer stays the run's.
func transition(s EngineState, ev engineEvent) (EngineState, bool) {
	switch s {
	case EnginePreparing:
		switch ev {
		case evPrepared:
			return EngineReady, true
		case evPrepareFailed:
			return EnginePreparing, true
		}
	case EngineReady:
		switch ev {
		case evAnswered:
			return EngineReady, true
		case evSilent:
			return EngineLost, true
		case evHostChanged:
			return EnginePreparing, true
		case evRunPlaced:
			return EngineBusy, true
		}
	case EngineBusy:
		switch ev {
		case evAnswered, evRunPlaced: // another run, where it takes more than one
			return EngineBusy, true
		case evSilent:
			return EngineUnresponsive, true
		case evHostChanged:
			return EngineChanged, true
		case evRunsEnded:
			return EngineReady, true
		case evRunLost:
			return EngineLost, true
		}
	case EngineUnresponsive:
		switch ev {
		case evAnswered:
			return EngineBusy, true
		case evSilent:
			return EngineUnresponsive, true
		case evHostChanged:
			return EngineChanged, true
		case evRunsEnded:
			// Its run ended well, but its last probe did not answer:
			// it is checked whole before it takes another.
			return EnginePreparing, true
		case evRunLost:
			return EngineLost, true
		}
	case EngineChanged:
		switch ev {
		case evAnswered, evSilent, evHostChanged:
			return EngineChanged, true
		case evRunsEnded:
			return EnginePreparing, true
		case evRunLost:
			return EngineLost, true
		}
	case EngineLost:
		switch ev {
		case evPrepared:
			return EngineReady, true
		case evPrepareFailed:
			return EngineLost, true
		}
	}
	return s, false
}

// prepares says whether a probe makes an engine in s ready (Prepare,
// which reaps this server's containers there) rather than only asking
// its host: only states with no run on it.
func (s EngineState) prepares() bool { return s == EnginePreparing || s == EngineLost }

// takesRuns says whether the queue may place a run on an engine in s
// (given room).
func (s EngineState) takesRuns() bool { return s == EngineReady || s == EngineBusy }
