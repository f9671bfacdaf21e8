package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workshop"
)

// viewer is one websocket client of a run's live stream, recording how
// long each sample batch took from its publication to this reader.
type viewer struct {
	mu        sync.Mutex
	latencies []float64 // ms
	recording bool
	err       error // why it stopped reading before the end, if it did
}

func (v *viewer) read(ctx context.Context, c *websocket.Conn) {
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			if ctx.Err() == nil {
				v.mu.Lock()
				v.err = err
				v.mu.Unlock()
			}
			return
		}
		now := time.Now().UnixMicro()
		// Only the send time is wanted: found without decoding the whole
		// batch, so that 200 viewers in the server's process take little
		// of the CPU the server needs.
		sent, ok := runner.SentUs(b)
		if !ok {
			continue
		}
		v.mu.Lock()
		if v.recording {
			v.latencies = append(v.latencies, float64(now-sent)/1000)
		}
		v.mu.Unlock()
	}
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(p*float64(len(s)-1))]
}

// BenchmarkLiveViewers200 serves the real router over the real engine: one
// live run of 12 lanes sampled every 500 ms, watched by 200 websocket
// viewers in this process. It measures, in one run, the p99 delivery
// latency from a sample's publication to each viewer, then the same with
// one more viewer that never reads; the server's CPU per viewer against
// the run alone; and heap per viewer. Viewers and server share the
// process, so CPU and heap per viewer include the viewers' own reading.
func BenchmarkLiveViewers200(b *testing.B) {
	const (
		viewers = 200
		phase   = 10 * time.Second
		rounds  = 8
	)
	for range b.N {
		srv, _ := newServerWith(b, nil, func(o *workshop.Options) { o.Interval = 500 * time.Millisecond })
		a := watch(b, srv.URL, viewers, phase)
		ctx := context.Background()
		// A viewer that connects and never reads, with a 4 KiB socket
		// receive buffer: with the server's bounded send buffer, its
		// writes to it block within a few messages.
		small := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{
			Control: func(network, address string, rc syscall.RawConn) error {
				return rc.Control(func(fd uintptr) {
					_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
				})
			},
		}).DialContext}}

		// Phases without and with a stalled viewer alternate, so that the
		// host's drift falls on both alike.
		var without, with []float64
		var cpus, ratios []float64
		for round := range rounds {
			l, cpu := a.measure(phase)
			without, cpus = append(without, l...), append(cpus, cpu)
			stalled, _, err := websocket.Dial(ctx, a.url, &websocket.DialOptions{HTTPClient: small})
			if err != nil {
				b.Fatal(err)
			}
			ls, _ := a.measure(phase)
			with = append(with, ls...)
			// What the stalled viewer can still read: what the kernel
			// buffered for it, then the server's close.
			stalled.SetReadLimit(1 << 20)
			got := 0
			rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
			var end error
			for end == nil {
				if _, _, end = stalled.Read(rctx); end == nil {
					got++
				}
			}
			rcancel()
			stalled.CloseNow()
			ratios = append(ratios, percentile(ls, 0.99)/percentile(l, 0.99))
			b.Logf("round %d: p99 %.2f ms without, %.2f ms with a stalled viewer, which got %d messages, then %v",
				round+1, percentile(l, 0.99), percentile(ls, 0.99), got, end)
		}
		p50, p99 := percentile(without, 0.5), percentile(without, 0.99)
		p50s, p99s := percentile(with, 0.5), percentile(with, 0.99)
		cpu := percentile(cpus, 0.5)
		n, ns := len(without), len(with)
		dropped := a.end(b, srv.URL)

		b.ReportMetric(p50, "p50-ms")
		b.ReportMetric(p99, "p99-ms")
		b.ReportMetric(p99s, "p99-stalled-ms")
		b.ReportMetric(p99s/p99, "p99-ratio")
		b.ReportMetric(percentile(ratios, 0.5), "p99-ratio-median-round")
		b.ReportMetric(float64(dropped), "dropped")
		b.ReportMetric((cpu-a.baseCPU)/viewers*1000, "cpu-ms/s/viewer")
		b.ReportMetric(a.heapPerViewer/1024, "heap-KiB/viewer")
		b.Logf("deliveries %d then %d (with the stalled viewer); p50 %.2f ms → %.2f ms; process CPU %.3f cores with viewers, %.3f without",
			n, ns, p50, p50s, cpu, a.baseCPU)
	}
}

// audience is a live run of 12 lanes sampled every 500 ms and n viewers
// of it in this process: the server's CPU before they came, and the heap
// each costs.
type audience struct {
	id, url       string
	vs            []*viewer
	readers       sync.WaitGroup
	cancel        context.CancelFunc
	baseCPU       float64
	heapPerViewer float64
	connected     time.Duration // how long the n viewers took to connect
}

// dialers is how many viewers connect at once: a keynote's audience
// arrives together, not one by one.
const dialers = 16

func watch(b *testing.B, base string, n int, phase time.Duration) *audience {
	const lanes = 12
	var ls []string
	for i := range lanes {
		ls = append(ls, fmt.Sprintf(`{"name": "lane %d", "workload": {"kind": "spin", "seconds": 590}, "limits": {"cpus": "0.02"}}`, i))
	}
	a := &audience{id: startRunB(b, base, `{"name": "load", "duration": "10m", "lanes": [`+strings.Join(ls, ",")+`]}`)}
	a.url = "ws" + strings.TrimPrefix(base, "http") + "/api/runs/" + a.id + "/live"
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel

	// The run alone first: the server's CPU without viewers.
	time.Sleep(5 * time.Second) // every lane started
	c0 := cpuSeconds()
	time.Sleep(phase / 2)
	a.baseCPU = (cpuSeconds() - c0) / (phase / 2).Seconds()

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	a.vs = make([]*viewer, n)
	began := time.Now()
	next := make(chan int)
	var mu sync.Mutex
	var failed []error
	var dialing sync.WaitGroup
	for range dialers {
		dialing.Add(1)
		// Each dialer connects viewers until none is left.
		go func() {
			defer dialing.Done()
			for i := range next {
				c, _, err := websocket.Dial(ctx, a.url, nil)
				if err != nil {
					mu.Lock()
					failed = append(failed, fmt.Errorf("viewer %d: %w", i+1, err))
					mu.Unlock()
					continue
				}
				c.SetReadLimit(16 << 20)
				a.vs[i] = &viewer{}
				a.readers.Add(1)
				go func() { defer a.readers.Done(); a.vs[i].read(ctx, c) }()
			}
		}()
	}
	for i := range a.vs {
		next <- i
	}
	close(next)
	dialing.Wait()
	if len(failed) > 0 {
		b.Fatalf("%d viewers could not connect, the first: %v", len(failed), failed[0])
	}
	a.connected = time.Since(began)
	time.Sleep(3 * time.Second) // histories sent
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	a.heapPerViewer = float64(int64(after.HeapInuse)-int64(before.HeapInuse)) / float64(n)
	return a
}

// measure records every delivery to the viewers for a phase, and the
// process's CPU use over it.
func (a *audience) measure(phase time.Duration) ([]float64, float64) {
	for _, v := range a.vs {
		v.mu.Lock()
		v.latencies, v.recording = nil, true
		v.mu.Unlock()
	}
	c := cpuSeconds()
	time.Sleep(phase)
	cpu := (cpuSeconds() - c) / phase.Seconds()
	var all []float64
	for _, v := range a.vs {
		v.mu.Lock()
		v.recording = false
		all = append(all, v.latencies...)
		v.mu.Unlock()
	}
	return all, cpu
}

// end closes the viewers, counting those that stopped reading before it,
// and stops the run.
func (a *audience) end(b *testing.B, base string) (dropped int) {
	for _, v := range a.vs {
		v.mu.Lock()
		if v.err != nil {
			dropped++
			b.Logf("viewer dropped: %v", v.err)
		}
		v.mu.Unlock()
	}
	a.cancel()
	a.readers.Wait()
	postJSONB(b, base+"/api/runs/"+a.id+"/stop")
	return dropped
}

func startRunB(b *testing.B, base, spec string) string {
	res, err := testClient.Post(base+"/api/runs", "application/json", strings.NewReader(spec))
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	var created struct{ ID string }
	_ = json.NewDecoder(res.Body).Decode(&created)
	if res.StatusCode != http.StatusCreated {
		b.Fatalf("POST /api/runs: %d", res.StatusCode)
	}
	return created.ID
}

func postJSONB(b *testing.B, url string) {
	res, err := testClient.Post(url, "application/json", nil)
	if err != nil {
		b.Fatal(err)
	}
	res.Body.Close()
}

// BenchmarkKeynote2000 is a keynote: 2,000 viewers of one run from one
// address (a conference NAT), the caps raised to let them in, as
// -max-viewers-per-run and -max-viewers-per-address would. One live run of
// 12 lanes sampled every 500 ms; it measures the p50 and p99 delivery
// latency from a sample's publication to each viewer, and the process's
// CPU and heap per viewer (viewers and server share the process, so both
// include the viewers' own reading).
func BenchmarkKeynote2000(b *testing.B) {
	const (
		viewers = 2000
		phase   = 10 * time.Second
		rounds  = 3
	)
	for range b.N {
		// The caps and the connections raised for a keynote, as
		// -max-viewers-per-run, -max-viewers-per-address and -max-conns
		// would.
		srv := serveConns(b, storedManager(b, func(o *workshop.Options) { o.Interval = 500 * time.Millisecond }),
			func(d *Deps) { d.MaxViewersPerRun, d.MaxViewersPerAddress = viewers, viewers }, 2*viewers)
		a := watch(b, srv.URL, viewers, phase)
		var all, cpus []float64
		for round := range rounds {
			got, cpu := a.measure(phase)
			all, cpus = append(all, got...), append(cpus, cpu)
			b.Logf("round %d: %d deliveries, p50 %.2f ms, p99 %.2f ms", round+1, len(got), percentile(got, 0.5), percentile(got, 0.99))
		}
		dropped := a.end(b, srv.URL)
		cpu := percentile(cpus, 0.5)
		b.ReportMetric(percentile(all, 0.5), "p50-ms")
		b.ReportMetric(percentile(all, 0.99), "p99-ms")
		b.ReportMetric(float64(dropped), "dropped")
		b.ReportMetric((cpu-a.baseCPU)/viewers*1000, "cpu-ms/s/viewer")
		b.ReportMetric(a.heapPerViewer/1024, "heap-KiB/viewer")
		b.ReportMetric(a.connected.Seconds(), "connect-s")
		b.Logf("%d viewers from one address connected in %s: %d deliveries; process CPU %.3f cores with them, %.3f without", viewers, a.connected.Round(time.Millisecond), len(all), cpu, a.baseCPU)
	}
}
