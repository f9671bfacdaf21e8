package workload

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// vegetaVersion is the load tester ours is checked against: a client no
// one here wrote, installed from the Go module proxy into a cache of its
// own (not this module's dependencies).
const vegetaVersion = "v12.13.0"

func vegeta(t *testing.T) string {
	t.Helper()
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, ".cache", "limitlab-vegeta", vegetaVersion)
	bin := filepath.Join(dir, "vegeta")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	t.Logf("installing vegeta %s from the Go module proxy into %s", vegetaVersion, dir)
	cmd := exec.Command("go", "install", "github.com/tsenart/vegeta/v12@"+vegetaVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install vegeta: %v\n%s", err, out)
	}
	return bin
}

// stallingService answers at once except in the first stall of every
// period, when a request waits for the stall's end: as a service under a
// CFS quota waits out the throttled rest of a period. It costs no CPU, so
// the host's noise hardly moves its latencies.
func stallingService(period, stall time.Duration) *httptest.Server {
	start := time.Now()
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if in := time.Since(start) % period; in < stall {
			time.Sleep(stall - in)
		}
		_, _ = w.Write([]byte("ok"))
	}))
}

// TestGeneratorAgreesWithVegeta runs our open-loop generator and vegeta in
// alternating rounds at the same rate against a service that stalls 40 ms
// every 473 ms: their p99s agree within 15%. The p99 is the longest waits,
// those of the requests due as a stall begins: a period that is a whole
// number of the requests' intervals (500 ms at 100 a second) would put
// each round's requests at one offset into every stall, and its p99
// anywhere from 30 to 40 ms by where the round began; at 473 ms the
// offset moves 3 ms a stall, and every round sees them all.
func TestGeneratorAgreesWithVegeta(t *testing.T) {
	bin := vegeta(t)
	srv := stallingService(473*time.Millisecond, 40*time.Millisecond)
	defer srv.Close()
	const (
		rate   = 100
		secs   = 8
		rounds = 3
	)
	var ours, theirs []float64
	for round := range rounds {
		s := newLoadStats(true)
		if _, err := loadWork(srv.URL, 0, 0, 1, rate, secs, s, &counter{}); err != nil {
			t.Fatal(err)
		}
		l := s.total()
		if l.Loop != "open" || l.Count < rate*secs*9/10 || l.P999 < l.P99 || l.Max < l.P999 {
			t.Fatalf("our summary %+v", l)
		}
		ours = append(ours, l.P99)

		attack := exec.Command(bin, "attack", fmt.Sprintf("-rate=%d/s", rate), fmt.Sprintf("-duration=%ds", secs))
		attack.Stdin = strings.NewReader("GET " + srv.URL + "/\n")
		results, err := attack.Output()
		if err != nil {
			t.Fatalf("vegeta attack: %v", err)
		}
		report := exec.Command(bin, "report", "-type=json")
		report.Stdin = strings.NewReader(string(results))
		out, err := report.Output()
		if err != nil {
			t.Fatalf("vegeta report: %v", err)
		}
		var r struct {
			Latencies struct {
				P50 float64 `json:"50th"`
				P99 float64 `json:"99th"`
			} `json:"latencies"`
			Requests int `json:"requests"`
			Success  float64
		}
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("vegeta's report %s: %v", out, err)
		}
		theirs = append(theirs, r.Latencies.P99/1e6)
		t.Logf("round %d: p99 %.1f ms ours (p50 %.2f, p99.9 %.1f, %d requests, %d late), %.1f ms vegeta's (p50 %.2f, %d requests)",
			round+1, l.P99, l.P50, l.P999, l.Count, l.Late, r.Latencies.P99/1e6, r.Latencies.P50/1e6, r.Requests)
	}
	median := func(xs []float64) float64 { s := slices.Clone(xs); slices.Sort(s); return s[len(s)/2] }
	o, v := median(ours), median(theirs)
	ratio := o / v
	t.Logf("median p99: %.1f ms ours, %.1f ms vegeta's: %.2f", o, v, ratio)
	if ratio < 0.85 || ratio > 1.15 {
		t.Errorf("our p99 %.1f ms against vegeta's %.1f ms: a ratio of %.2f, outside 15%%", o, v, ratio)
	}
}

// A closed loop says that its tail is not corrected; an open loop that
// cannot keep its rate counts the requests it sent late.
func TestLoopsSayHowLatencyCounts(t *testing.T) {
	srv := stallingService(time.Second, 0)
	defer srv.Close()
	closed := newLoadStats(false)
	if _, err := loadWork(srv.URL, 200, 4, 1, 0, 0, closed, &counter{}); err != nil {
		t.Fatal(err)
	}
	if l := closed.total(); l.Loop != "closed" || l.Count != 200 || l.Late != 0 {
		t.Errorf("closed loop summary %+v", l)
	}
	s := newLoadStats(true)
	s.sent(5 * time.Millisecond)
	s.sent(100 * time.Microsecond)
	s.record(3*time.Millisecond, true)
	if l := s.take(); l.Late != 1 || l.Count != 1 || l.Loop != "open" {
		t.Errorf("open loop summary %+v", l)
	}
	if l := s.take(); l != nil {
		t.Errorf("an empty interval summarized as %+v", l)
	}
}
