package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

type report struct {
	mu        sync.Mutex
	counts    map[string]int
	latencies []float64
	maxRSS    int64
	minutes   []int64 // the highest RSS in each minute
	start     time.Time
	attacks   map[string]*attack
}

type attack struct {
	tries, refused int
	slowest        time.Duration
	statuses       map[int]int // the answers' statuses (0: the connection closed)
}

func newReport() *report {
	return &report{counts: map[string]int{}, attacks: map[string]*attack{}, start: time.Now()}
}

func (r *report) count(what string) {
	r.mu.Lock()
	r.counts[what]++
	r.mu.Unlock()
}

func (r *report) latency(ms float64) {
	r.mu.Lock()
	r.latencies = append(r.latencies, ms)
	r.mu.Unlock()
}

func (r *report) rss(b int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.maxRSS = max(r.maxRSS, b)
	m := int(time.Since(r.start) / time.Minute)
	for len(r.minutes) <= m {
		r.minutes = append(r.minutes, 0)
	}
	r.minutes[m] = max(r.minutes[m], b)
}

// plateau compares the RSS at the window's middle with the highest after
// it: a server whose memory follows what is live, not what has run, stays
// near 1.
func (r *report) plateau() (mid, after int64) {
	n := len(r.minutes)
	if n < 4 {
		return 0, 0
	}
	mid = r.minutes[n/2-1]
	for _, b := range r.minutes[n/2:] {
		after = max(after, b)
	}
	return mid, after
}

func (r *report) hostile(name string, status int, refused bool, took time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.attacks[name]
	if a == nil {
		a = &attack{statuses: map[int]int{}}
		r.attacks[name] = a
	}
	a.tries++
	a.statuses[status]++
	if refused {
		a.refused++
	}
	a.slowest = max(a.slowest, took)
}

// served counts the runs the server kept, by state, as its history says.
func (r *report) served(base string) {
	res, err := http.Get(base + "/api/runs?limit=500")
	if err != nil {
		return
	}
	defer res.Body.Close()
	var list struct{ Runs []struct{ State string } }
	_ = json.NewDecoder(res.Body).Decode(&list)
	for _, run := range list.Runs {
		r.count("server history: " + run.State)
	}
}

func (r *report) line() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := int64(0)
	if n := len(r.minutes); n > 0 {
		cur = r.minutes[n-1]
	}
	return fmt.Sprintf("%d runs ended, %d viewer batches, RSS %d MiB (max %d MiB)", r.ended(), len(r.latencies), cur>>20, r.maxRSS>>20)
}

func (r *report) ended() int {
	n := 0
	for k, v := range r.counts {
		if strings.HasPrefix(k, "runs ended") {
			n += v
		}
	}
	return n
}

func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func (r *report) markdown(c config, elapsed time.Duration, cpu float64, containers, volumes int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s on this host: %d participants keeping cookies on addresses of their own, %d behind one address, one through nginx with TLS, all with the join code; %d scripts without cookies, one hostile client, %d viewers; from the room's own address, %d clients reading exports at 2 KB/s, an import bomb every 30 s, wrong presenter tokens and join codes, and a flood of fresh identities; the real server binary on loopback (`make soak SOAK=%s`).\n\n",
		time.Now().UTC().Format("2006-01-02"), c.participants, c.natted, c.scripts, c.viewers, c.slowReaders, c.duration)
	fmt.Fprintf(&b, "| figure | value |\n| --- | --- |\n")
	fmt.Fprintf(&b, "| window | %s |\n", elapsed.Round(time.Second))
	fmt.Fprintf(&b, "| runs that ended (participants' runs followed to their end) | %d |\n", r.ended())
	fmt.Fprintf(&b, "| server CPU | %.1f s (%.1f%% of one core) |\n", cpu, 100*cpu/elapsed.Seconds())
	fmt.Fprintf(&b, "| server RSS, highest (the bound the soak holds) | %d MiB (%d MiB) |\n", r.maxRSS>>20, c.rssBound>>20)
	if mid, after := r.plateau(); mid > 0 {
		fmt.Fprintf(&b, "| server RSS at the middle / highest after it | %d MiB / %d MiB (%.2f) |\n", mid>>20, after>>20, float64(after)/float64(mid))
	}
	mins := make([]string, len(r.minutes))
	for i, m := range r.minutes {
		mins[i] = fmt.Sprint(m >> 20)
	}
	fmt.Fprintf(&b, "| server RSS by minute, MiB | %s |\n", strings.Join(mins, ", "))
	fmt.Fprintf(&b, "| viewer latency p50 / p99 (%d sample batches) | %.1f ms / %.1f ms |\n", len(r.latencies), percentile(r.latencies, 0.5), percentile(r.latencies, 0.99))
	fmt.Fprintf(&b, "| containers / volumes left after SIGTERM | %d / %d |\n\n", containers, volumes)
	keys := make([]string, 0, len(r.counts))
	for k := range r.counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(&b, "| outcome | count |\n| --- | --- |\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "| %s | %d |\n", k, r.counts[k])
	}
	names := make([]string, 0, len(r.attacks))
	for k := range r.attacks {
		names = append(names, k)
	}
	sort.Strings(names)
	fmt.Fprintf(&b, "\n| hostile input | tries | refused as it should be | answers | slowest answer |\n| --- | --- | --- | --- | --- |\n")
	for _, k := range names {
		a := r.attacks[k]
		codes := slices.Sorted(maps.Keys(a.statuses))
		answers := make([]string, len(codes))
		for i, c := range codes {
			what := strconv.Itoa(c)
			if c <= 0 {
				what = "closed"
			}
			answers[i] = fmt.Sprintf("%s × %d", what, a.statuses[c])
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s |\n", k, a.tries, a.refused, strings.Join(answers, ", "), a.slowest.Round(time.Millisecond))
	}
	return b.String()
}

// The soak's section of a markdown file lies between these lines.
const (
	beginMark = "<!-- soak: begin -->"
	endMark   = "<!-- soak: end -->"
)
