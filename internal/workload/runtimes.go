package workload

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/limitlab/limitlab/internal/workload/wire"
)

// ProbeDir is where the runtimes image keeps its probes (images/runtimes).
const ProbeDir = "/opt/limitlab"

// RuntimeRoundGap is the pause between two rounds of the runtimes
// workload, and probeTimeout how long one probe may take: a JVM under
// --cpus 0.5 starts in about two seconds here.
const (
	RuntimeRoundGap = 2 * time.Second
	probeTimeout    = 30 * time.Second
)

// probes are the commands that print each runtime's report, in the
// runtimes image; Go's is this program's own (goReport).
var probes = map[string][]string{
	// No perf data file: the root is read-only, and /tmp is the lane's.
	"java":   {"java", "-XX:-UsePerfData", "-cp", ProbeDir, "Probe"},
	"node":   {"node", ProbeDir + "/probe.js"},
	"python": {"python3", "-I", ProbeDir + "/probe.py"},
}

// runtimeRounds keeps the first and the latest round of reports.
type runtimeRounds struct {
	mu          sync.Mutex
	first, last *wire.RuntimeRound
}

func (r *runtimeRounds) add(round wire.RuntimeRound) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.first == nil {
		r.first = &round
		return
	}
	r.last = &round
}

// rounds are the first round and, if there was another, the last.
func (r *runtimeRounds) rounds() []wire.RuntimeRound {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []wire.RuntimeRound
	for _, round := range []*wire.RuntimeRound{r.first, r.last} {
		if round != nil {
			out = append(out, *round)
		}
	}
	return out
}

// runtimesWork asks every runtime what it believes it has, in rounds, for
// seconds and at least twice: each round starts each runtime's probe afresh, one after
// another, and Go's figures are this program's own, read as the round
// begins (it has run since the lane began, so they show whether a running
// Go program follows a live change). A round counts as one unit.
func runtimesWork(seconds float64, rounds *runtimeRounds, c *counter) (string, error) {
	start := time.Now()
	end := start.Add(time.Duration(seconds * float64(time.Second)))
	firstWork()
	n := 0
	// At least two rounds, however slow the host: the first, and one
	// after whatever changed meanwhile; one alone when asked to stop.
	for n == 0 || (!stopping.Load() && (n < 2 || time.Now().Before(end))) {
		// Go's figures first, as the round begins: the limits in force
		// then are the round's.
		round := wire.RuntimeRound{AtS: time.Since(start).Seconds(), Reports: []wire.RuntimeReport{goReport()}}
		for _, name := range wire.Runtimes[1:] {
			// Asked to stop (the run's end) with a round kept: the
			// summary goes out now, without this round.
			if stopping.Load() && n > 0 {
				return fmt.Sprintf("%d rounds, stopped", n), nil
			}
			round.Reports = append(round.Reports, probe(name))
		}
		rounds.add(round)
		c.add(1)
		n++
		switch wait := time.Until(end); {
		case stopping.Load():
		case wait > 0:
			time.Sleep(min(RuntimeRoundGap, wait))
		case n < 2:
			time.Sleep(RuntimeRoundGap)
		}
	}
	return fmt.Sprintf("%d rounds", n), nil
}

// probe runs one runtime's probe and reads its report; a probe that
// fails gives a report that says why.
func probe(name string) wire.RuntimeReport {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	argv := probes[name]
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out bytes.Buffer
	cmd.Stdout = &limitedBuffer{buf: &out, max: wire.MaxRuntimeReport + 1}
	if err := cmd.Run(); err != nil {
		return wire.RuntimeError(name, err)
	}
	r, err := wire.ParseRuntimeReport(out.Bytes(), name)
	if err != nil {
		return wire.RuntimeError(name, err)
	}
	return r
}

// goReport is this program's own: GOMAXPROCS as the runtime set it (left
// to choose), and NumCPU, which Go reads once, as it starts, from the
// CPUs it may run on.
func goReport() wire.RuntimeReport {
	return wire.RuntimeReport{Runtime: "go", Version: strings.TrimPrefix(strings.Fields(runtime.Version())[0], "go"), Figures: []wire.RuntimeFigure{
		{Name: "gomaxprocs", Value: float64(runtime.GOMAXPROCS(0))},
		{Name: "num_cpu", Value: float64(runtime.NumCPU())},
	}}
}

// limitedBuffer keeps the first max bytes written to it, and takes the
// rest without keeping it.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (w *limitedBuffer) Write(p []byte) (int, error) {
	if room := w.max - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
