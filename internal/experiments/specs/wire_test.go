package specs

import (
	"testing"

	"github.com/limitlab/limitlab/internal/workload/wire"
)

// TestWorkloadCommandRoundTrip: what the server writes on a container's
// command line, the workload program parses back to the same command, for
// every workload kind, with its defaults and with every field it takes.
func TestWorkloadCommandRoundTrip(t *testing.T) {
	full := map[string]Workload{
		KindMD5:       {MB: 100},
		KindPrimes:    {Threads: 2, Events: 5000, MaxPrime: 20000},
		KindSpin:      {Threads: 3, Seconds: 4.5},
		KindMem:       {MB: 200, Seconds: 2, RateMBps: 50.5},
		KindHTTP:      {WorkUS: 2000, AllocKB: 16, GOMAXPROCS: "2", Seconds: 30},
		KindLoad:      {Target: "svc", Requests: 100, Concurrency: 4, Rate: 50.5, Burst: 5, Seconds: 20},
		KindDiskWrite: {MB: 128, BS: 1 << 20},
		KindDiskRead:  {MB: 64, BS: 8192, Depth: 4, Seconds: 3},
	}
	for _, kind := range Kinds {
		for name, w := range map[string]Workload{"defaults": {Kind: kind}, "fields": full[kind]} {
			w.Kind = kind
			if kind == KindLoad && w.Target == "" {
				w.Target, w.Requests = "svc", 10
			}
			t.Run(kind+"/"+name, func(t *testing.T) {
				v, errs := validateWorkload(w)
				if errs != nil {
					t.Fatal(errs)
				}
				got, err := wire.Parse(v.Args())
				if err != nil {
					t.Fatalf("the workload refuses %q: %v", v.Args(), err)
				}
				if got != v.Command() {
					t.Errorf("parsed %+v\nwrote  %+v", got, v.Command())
				}
			})
		}
	}
}
