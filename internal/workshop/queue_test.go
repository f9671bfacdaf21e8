package workshop

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/experiments/specs"
)

func TestFairQueueServesParticipantsInTurn(t *testing.T) {
	q := newFairQueue[string]()
	// Ann floods the queue before Bob arrives.
	for _, it := range []string{"a1", "a2", "a3"} {
		q.Push("ann", "", it)
	}
	q.Push("bob", "", "b1")
	q.Push("bob", "", "b2")
	want := []string{"a1", "b1", "a2", "b2", "a3"}
	if got := q.Order(); !slices.Equal(got, want) {
		t.Fatalf("projected order %v, want %v", got, want)
	}
	var served []string
	for q.Len() > 0 {
		it, _ := q.Next(nil)
		served = append(served, it)
	}
	if !slices.Equal(served, want) {
		t.Errorf("served %v, want %v", served, want)
	}
}

// TestFairQueueForgetsIdleParticipants: a participant gone for an hour
// holds no memory of the queue's; one served recently still waits its turn.
func TestFairQueueForgetsIdleParticipants(t *testing.T) {
	q := newFairQueue[string]()
	now := time.Unix(1000, 0)
	q.now = func() time.Time { return now }
	for i := range 1000 {
		p := fmt.Sprint("script-", i) // a script without cookies: a new participant each time
		q.Push(p, "", p)
		q.Next(nil)
	}
	if n := q.remembered(); n != 1000 {
		t.Fatalf("remembers %d participants, want 1000 before any is idle", n)
	}
	now = now.Add(idleAfter + time.Minute)
	q.Push("ann", "", "a1")
	q.Next(nil)
	if n := q.remembered(); n != 1 {
		t.Errorf("remembers %d participants an hour on, want only ann", n)
	}
	// Ann was just served: Bob, new, goes before her next run.
	q.Push("ann", "", "a2")
	q.Push("bob", "", "b1")
	if got := q.Order(); !slices.Equal(got, []string{"b1", "a2"}) {
		t.Errorf("order %v, want the newcomer first", got)
	}
}

// TestFairQueueKnowsAScriptByItsAddress: a script that is a new
// participant on every request goes behind the participants served before
// its address was, not before everybody.
func TestFairQueueKnowsAScriptByItsAddress(t *testing.T) {
	q := newFairQueue[string]()
	q.Push("ann", "10.0.0.1", "a1")
	q.Next(nil) // ann is served
	q.Push("script-1", "10.0.0.9", "s1")
	q.Next(nil) // the script's address is served after ann
	q.Push("ann", "10.0.0.1", "a2")
	q.Push("script-2", "10.0.0.9", "s2") // a "new" participant, from the same address
	q.Push("bob", "10.0.0.2", "b1")      // really new
	if got, want := q.Order(), []string{"b1", "a2", "s2"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v: the script's new identity must not jump the queue", got, want)
	}
}

func TestFairQueuePutsTheOneJustServedLast(t *testing.T) {
	q := newFairQueue[string]()
	q.Push("ann", "", "a1")
	if it, _ := q.Next(nil); it != "a1" {
		t.Fatal(it)
	}
	// Ann, just served, queues two more before Bob and Cat arrive.
	q.Push("ann", "", "a2")
	q.Push("ann", "", "a3")
	q.Push("bob", "", "b1")
	q.Push("cat", "", "c1")
	want := []string{"b1", "c1", "a2", "a3"}
	if got := q.Order(); !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

func TestFairQueueSkipsWhatDoesNotFitAndRemoves(t *testing.T) {
	q := newFairQueue[string]()
	q.Push("ann", "", "big")
	q.Push("bob", "", "small")
	q.Push("cat", "", "c1")
	it, ok := q.Next(func(s string) bool { return s != "big" })
	if !ok || it != "small" {
		t.Fatalf("next fitting: %q %v", it, ok)
	}
	if !q.Remove("c1") || q.Remove("c1") {
		t.Error("remove: want true once")
	}
	if got := q.Order(); !slices.Equal(got, []string{"big"}) {
		t.Errorf("after remove: %v", got)
	}
	if _, ok := q.Next(func(string) bool { return false }); ok {
		t.Error("nothing fits: want no item")
	}
}

func TestQuotaRefusalsNameTheLimitAndTheExcess(t *testing.T) {
	plan := func(limits ...specs.Resources) specs.Plan {
		var p specs.Plan
		for i, r := range limits {
			p.Lanes = append(p.Lanes, specs.PlannedLane{Name: string(rune('a' + i)), Workload: specs.Workload{Kind: "spin"}, Resources: r})
		}
		return p
	}
	const gib = 1 << 30
	half := specs.Resources{NanoCPUs: 5e8, Memory: gib}
	pinned := specs.Resources{CpusetCpus: "0", Memory: gib}

	p := plan(half, pinned, half)
	a := askOf(p, 2)
	if a.cpus != 2 || a.memory != 3*gib || a.containers != 3 {
		t.Fatalf("ask %+v: want 0.5 + 1 (cpuset 0) + 0.5 CPUs, 3 GiB, 3 containers", a)
	}
	if a := askOf(plan(specs.Resources{}), 2); a.cpus != 2 {
		t.Errorf("a lane without limits asks for %g CPUs, want every CPU (2)", a.cpus)
	}

	cases := []struct {
		scope     string
		used      ask
		lim       Limits
		limit     string
		over      float64
		mentioned string
	}{
		{"participant", ask{runs: 1}, Limits{Runs: 1}, "runs", 1, "participant limit on runs exceeded by 1 runs"},
		{"host", ask{}, Limits{CPUs: 1.5}, "cpus", 0.5, "host limit on cpus exceeded by 0.5 CPUs: this run asks for 2 CPUs"},
		{"host", ask{memory: gib}, Limits{Memory: 3 * gib}, "memory", gib, "exceeded by 1GiB"},
		{"participant", ask{containers: 10}, Limits{Containers: 12}, "containers", 1, "the limit is 12 containers"},
	}
	for _, c := range cases {
		err := checkLimits(c.scope, p, a, c.used, c.lim)
		if err == nil {
			t.Errorf("%s %s: not refused", c.scope, c.limit)
			continue
		}
		if err.Limit != c.limit || err.Scope != c.scope || err.Over != c.over || !strings.Contains(err.Error(), c.mentioned) {
			t.Errorf("%s %s: %+v; want over %g and %q", c.scope, c.limit, err, c.over, c.mentioned)
		}
	}
	if err := checkLimits("host", p, a, ask{}, Limits{CPUs: 2, Memory: 3 * gib, Containers: 3}); err != nil {
		t.Errorf("exactly at the limits: %v", err)
	}
	err := checkLimits("host", plan(half, specs.Resources{}), askOf(plan(half, specs.Resources{}), 2), ask{}, Limits{Memory: 8 * gib})
	if err == nil || err.Lane != 1 || !strings.Contains(err.Error(), "lane 1 (b): memory") {
		t.Errorf("memory quota with a lane without --memory: %v", err)
	}
}
