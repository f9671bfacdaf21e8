package runner

import (
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// scripted is a reader that gives its readings in turn.
type scripted struct{ readings []engine.Counters }

func (s *scripted) Read() (engine.Counters, error) {
	c := s.readings[0]
	s.readings = s.readings[1:]
	return c, nil
}

// TestAReadingWhoseCountersFellIsDropped: a lane's reading whose cumulative
// counters fell below the last makes no sample and is not the lane's last
// reading, which its totals come from.
func TestAReadingWhoseCountersFellIsDropped(t *testing.T) {
	plan := specs.Plan{Lanes: []specs.PlannedLane{{Name: "a", Workload: specs.Workload{Kind: specs.KindSpin, Seconds: 1}, Target: -1}}}
	r := New(&Env{}, "fell", "", specs.Spec{}, plan)
	start := time.Now()
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	rd := &scripted{readings: []engine.Counters{
		{At: at(250), CPUNs: 2e8, Periods: 3},
		{At: at(500)}, // all zeros: no later reading of the same cgroup
		{At: at(750), CPUNs: 4e8, Periods: 8},
	}}
	l := r.st.lanes[0]
	r.st.start = start
	l.reader, l.prev, l.hasPrev, l.lastRead = rd, engine.Counters{At: start}, true, start
	x := &execution{r: r}
	for _, ms := range []int{250, 500, 750} {
		x.sampleOnce(at(ms))
	}
	if len(l.samples) != 2 {
		t.Fatalf("%d samples, want 2: the fallen reading makes none", len(l.samples))
	}
	if l.prev.Periods != 8 || l.samples[1].Periods != 5 {
		t.Errorf("last reading %+v, second sample %+v: want the one after the fallen reading, 5 periods past the first", l.prev, l.samples[1])
	}
}
