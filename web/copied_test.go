package web

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A lane's docker run text, run as a person would copy it from the run
// page, starts its work at once: no start barrier waits for a file only
// the server writes.
func TestACopiedDockerRunStartsItsWork(t *testing.T) {
	srv, m := newServer(t)
	id := endedRun(t, srv.URL, m, `{"name": "copied", "lanes": [{"name": "copied", "workload": {"kind": "spin", "seconds": 2}, "limits": {"cpus": "0.5", "memory": "64m"}}]}`)
	v, _ := m.Archive().View(id)
	text := v.Lanes[0].DockerRun
	if !strings.HasPrefix(text, "docker run --rm ") || strings.Contains(text, "begin") {
		t.Fatalf("the shown docker run: %s", text)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", text)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	var first time.Duration
	var last struct{ Done float64 }
	n := 0
	for lines.Scan() {
		if n == 0 {
			first = time.Since(start)
		}
		n++
		_ = json.Unmarshal(lines.Bytes(), &last)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	// Its first progress within seconds: the barrier would have held it 30 s.
	if n < 3 || first > 15*time.Second || last.Done <= 0 {
		t.Errorf("the copied docker run printed %d progress lines, the first after %v, the last done %v", n, first, last.Done)
	}
}
