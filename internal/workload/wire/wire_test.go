package wire

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// full sets every field of a Command to a value that is not its zero.
func full() Command {
	return Command{Kind: "load", MB: 1, Threads: 2, Events: 3, MaxPrime: 4, Seconds: 5.5, RateMBps: 6.25, WorkUS: 7,
		AllocKB: 8, GOMAXPROCS: "host", Port: 9, Target: ServiceURL, Requests: 10, Concurrency: 11, RPS: 12.5,
		Burst: 13, BS: 14, Depth: 15, Dir: "/x", ProgressFile: ProgressPath, BeginFile: BeginPath}
}

func TestArgsParseRoundTrip(t *testing.T) {
	c := full()
	// Every field is set: a field Args forgot to write would parse as zero.
	v := reflect.ValueOf(c)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("full() leaves %s zero", v.Type().Field(i).Name)
		}
	}
	tests := []struct {
		name string
		cmd  Command
	}{
		{"every field", c},
		{"kind only", Command{Kind: "md5"}},
		{"some fields", Command{Kind: "http", WorkUS: 2000, GOMAXPROCS: "2", Seconds: 30}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.cmd.Args())
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.cmd.Args(), err)
			}
			if got != tt.cmd {
				t.Errorf("Parse(Args()) = %+v\nwant %+v", got, tt.cmd)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	for _, args := range [][]string{nil, {""}, {"-mb", "3"}, {"md5", "-nope", "1"}, {"md5", "-mb", "x"}, {"md5", "extra"}} {
		if _, err := Parse(args); err == nil {
			t.Errorf("Parse(%q) accepted", args)
		}
	}
}

func TestLineReadsWhatTheWorkloadWrites(t *testing.T) {
	lat := &Latency{P50: 1, P90: 2, P99: 3, Max: 4}
	p := Progress{T: 1, Done: 2, Rate: 3, Unit: "MB", RSSMB: 4, Failures: 5, Latency: lat, Ops: 6, IOPS: 7}
	s := Summary{Final: true, Kind: "load", WallS: 1, UserS: 2, SysS: 3, Done: 4, Unit: "requests", Throughput: 5,
		Result: "ok", Failures: 6, Latency: lat, Ops: 7, IOPS: 8}
	decode := func(v any) Line {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var l Line
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	if got := decode(p); got.Final || !reflect.DeepEqual(got.Progress, p) {
		t.Errorf("progress read as %+v", got)
	}
	got := decode(s)
	want := Line{Progress: Progress{Done: 4, Unit: "requests", Failures: 6, Latency: lat, Ops: 7, IOPS: 8},
		Final: true, WallS: 1, UserS: 2, SysS: 3, Throughput: 5, Result: "ok"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("summary read as %+v\nwant %+v", got, want)
	}
}

// The begin file names an instant to the nanosecond; anything else, or an
// instant far from now, is no instant.
func TestBeginFile(t *testing.T) {
	at := time.Now().Add(40 * time.Millisecond).Round(0)
	if got := ParseBegin(FormatBegin(at)); !got.Equal(at) {
		t.Errorf("ParseBegin(FormatBegin(%v)) = %v", at, got)
	}
	for _, b := range []string{"", "x", "-5", "12 34", string(FormatBegin(time.Now().Add(time.Hour))), string(FormatBegin(time.Now().Add(-time.Hour)))} {
		if got := ParseBegin([]byte(b)); !got.IsZero() {
			t.Errorf("ParseBegin(%q) = %v, want no instant", b, got)
		}
	}
}
