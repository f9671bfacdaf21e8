package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/workload/wire"
)

func runLines(t *testing.T, args ...string) []wire.Line {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := Main(args, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var lines []wire.Line
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var l wire.Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 || !lines[len(lines)-1].Final {
		t.Fatalf("no final summary in %d lines", len(lines))
	}
	return lines
}

func TestWorkloads(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		done   float64
		unit   string
		result string
	}{
		{"md5 hashes every MiB", []string{"md5", "-mb", "8"}, 8, "MB", ""},
		{"primes counts like sysbench", []string{"primes", "-threads", "2", "-events", "4", "-max-prime", "10000"}, 4, "events", "1228 primes below 10000"},
		{"mem allocates and holds", []string{"mem", "-mb", "16", "-seconds", "0.3"}, 16, "MB", "held 16 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines := runLines(t, tt.args...)
			s := lines[len(lines)-1]
			if s.Done != tt.done || s.Unit != tt.unit {
				t.Errorf("done %g %s, want %g %s", s.Done, s.Unit, tt.done, tt.unit)
			}
			if tt.result != "" && s.Result != tt.result {
				t.Errorf("result %q, want %q", s.Result, tt.result)
			}
			if s.WallS <= 0 || s.UserS+s.SysS <= 0 || s.Throughput <= 0 {
				t.Errorf("summary %+v: want positive wall, CPU and throughput", s)
			}
		})
	}
}

// TestProgressFourTimesASecond checks the reporting rate on a workload that
// runs for a known time.
func TestProgressFourTimesASecond(t *testing.T) {
	lines := runLines(t, "spin", "-threads", "1", "-seconds", "1.1")
	progress := lines[:len(lines)-1]
	if len(progress) < 4 {
		t.Fatalf("%d progress lines in 1.1s, want at least 4", len(progress))
	}
	for i, p := range progress {
		if p.Unit != "Mloops" || p.T <= 0 || (i > 0 && p.Done < progress[i-1].Done) {
			t.Errorf("progress line %d: %+v", i, p)
		}
	}
}

func TestUnknownWorkload(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Main([]string{"fio"}, &out, &errOut); code == 0 || !strings.Contains(errOut.String(), `unknown workload "fio"`) {
		t.Errorf("exit %d, stderr %q", code, errOut.String())
	}
}

// TestHTTPAndLoad runs the service and the load generator in this process,
// on a free port: the totals add up and the latencies are ordered.
func TestHTTPAndLoad(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	served := make(chan []wire.Line, 1)
	go func() { served <- runLines(t, "http", "-port", strconv.Itoa(port), "-work-us", "500", "-seconds", "3") }()
	lines := runLines(t, "load", "-target", "http://127.0.0.1:"+strconv.Itoa(port)+"/", "-requests", "200", "-concurrency", "4")
	s := lines[len(lines)-1]
	if s.Done != 200 || s.Failures != 0 || s.Latency == nil {
		t.Fatalf("load summary %+v", s)
	}
	if l := s.Latency; !(l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.Max && l.P50 > 0) {
		t.Errorf("latency percentiles out of order: %+v", l)
	}
	srv := <-served
	// The service counts the load's requests and the readiness probe.
	if got := srv[len(srv)-1].Done; got < 200 {
		t.Errorf("service served %g requests, want at least 200", got)
	}
}

func TestGOMAXPROCSSetting(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, tt := range []struct {
		v    string
		want int
		ok   bool
	}{{"host", runtime.NumCPU(), true}, {"3", 3, true}, {"0", 0, false}, {"many", 0, false}} {
		got, err := setGOMAXPROCS(tt.v)
		if (err == nil) != tt.ok || (tt.ok && got != tt.want) {
			t.Errorf("setGOMAXPROCS(%q) = %d, %v", tt.v, got, err)
		}
	}
}

// TestDiskWorkloads writes and reads with O_DIRECT in a directory on a
// real filesystem (not tmpfs, which has no O_DIRECT).
func TestDiskWorkloads(t *testing.T) {
	dir, err := os.MkdirTemp(".", "disk-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	w := runLines(t, "disk-write", "-dir", dir, "-mb", "8", "-bs", "65536")
	if s := w[len(w)-1]; s.Done != 8 || s.Ops != 128 || s.IOPS <= 0 {
		t.Errorf("disk-write summary %+v: want 8 MiB in 128 writes", s)
	}
	r := runLines(t, "disk-read", "-dir", dir, "-mb", "8", "-bs", "4096", "-depth", "2", "-seconds", "0.5")
	s := r[len(r)-1]
	if want := s.Ops * 4096 / (1 << 20); s.Ops <= 0 || math.Abs(s.Done-want) > 1e-4*want {
		t.Errorf("disk-read summary %+v: MiB and reads of 4 KiB disagree", s)
	}
}
