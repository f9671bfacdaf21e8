package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func runLines(t *testing.T, args ...string) []Line {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := Main(args, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var lines []Line
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var l Line
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
