package engine_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// TestProgressBypassesTheEngine: where the probe says the server can read
// files inside containers, a workload keeps its progress in one and the
// engine's log carries its summary alone; the server reads each new record
// through /proc/<pid>/root.
func TestProgressBypassesTheEngine(t *testing.T) {
	eng, image, h := enginetest.Engine(t)
	if !h.ReadsProgressFiles() {
		t.Fatalf("progress source %q: this host's server runs as root beside the engine and should read the containers' files", h.ProgressSource)
	}
	ctx := context.Background()
	lane := specs.PlannedLane{Target: -1, Workload: specs.Workload{Kind: specs.KindSpin, Threads: 1, Seconds: 2}}
	c, err := engine.CreateLane(ctx, eng, "", "progress", 0, lane, image, "", engine.WithProgressFile(true))
	if c.ID != "" {
		t.Cleanup(func() {
			engine.RemoveRun(context.Background(), eng, "progress", []string{c.ID}, nil, slog.Default())
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	wait := eng.ContainerWait(ctx, c.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := eng.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	ins, err := eng.ContainerInspect(ctx, c.ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := engine.OpenProgress(ins.Container.State.Pid)
	defer p.Close()
	var records []float64
	enginetest.WaitFor(t, 30*time.Second, "three progress records", func() bool {
		if rec, ok := p.Read(); ok {
			if rec.Done <= 0 || rec.Unit == "" {
				t.Fatalf("a record without progress: %+v", rec)
			}
			records = append(records, rec.T)
		}
		return len(records) >= 3
	})
	if _, ok := p.Read(); ok {
		t.Error("the same record read twice as new")
	}
	select {
	case <-wait.Result:
	case err := <-wait.Error:
		t.Fatal(err)
	case <-time.After(30 * time.Second):
		t.Fatal("the lane did not end")
	}
	logs, err := eng.ContainerLogs(ctx, c.ID, client.ContainerLogsOptions{ShowStdout: true})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	var stdout bytes.Buffer
	_, _ = stdcopy.StdCopy(&stdout, io.Discard, logs)
	lines := bytes.Split(bytes.TrimSpace(stdout.Bytes()), []byte("\n"))
	if len(lines) != 1 || !bytes.Contains(lines[0], []byte(`"final":true`)) {
		t.Errorf("the engine's log carries %d lines, want the summary alone: %s", len(lines), stdout.Bytes())
	}
	p.Close()
	if _, ok := p.Read(); ok {
		t.Error("a closed reader read a record")
	}
	t.Logf("read %d progress records (t = %v); the log: %s", len(records), records, lines[0])
}
