package runner

import (
	"context"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine/enginefake"
	"github.com/limitlab/limitlab/internal/experiments"
)

// A lane's wait for its exit is bounded from the lane's own start, not the
// run's: a lane the engine takes longer to start than the run's duration
// plus the slack (a pod on a slow node) is still waited for until it ends.
// Here the slack is 0.1 s, the run 1 s, and the start 1.2 s: a bound set
// from the run's start would end the wait before the lane had begun.
func TestFakeAWaitIsBoundedFromTheLanesStart(t *testing.T) {
	defer func(s time.Duration) { waitSlack = s }(waitSlack)
	waitSlack = 100 * time.Millisecond
	fake := enginefake.New()
	fake.StartDelay, fake.Runtime = 1200*time.Millisecond, 200*time.Millisecond
	env := &Env{Engine: fake, Host: enginefake.HostOf(fake)}
	spec, errs := experiments.Parse([]byte(`{"name": "slow start", "mode": "parallel", "duration": "1s",
		"lanes": [{"name": "a", "workload": {"kind": "spin", "seconds": 1}}]}`))
	if errs != nil {
		t.Fatal(errs)
	}
	plan, errs := experiments.Validate(spec, env.Host.Experiments())
	if errs != nil {
		t.Fatal(errs)
	}
	r := New(env, "wait-bound", "ann", spec, plan)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go r.Execute(ctx)
	select {
	case <-r.Done():
	case <-ctx.Done():
		t.Fatalf("the run did not end: %+v", r.View())
	}
	v := r.View()
	if v.State != StateDone {
		t.Fatalf("run ended %s: %s", v.State, v.Error)
	}
	l := v.Lanes[0]
	if l.TimedOut || l.ExitCode == nil || *l.ExitCode != 0 {
		t.Errorf("lane %s: timed out %v, exited %v (code 0 wanted), ran %.2f–%.2f s, error %q", l.Name, l.TimedOut, l.ExitCode != nil, l.StartedAt, l.EndedAt, l.Error)
	}
	if n := fake.Counts().Containers; n != 0 {
		t.Errorf("%d containers left on the fake engine", n)
	}
}
