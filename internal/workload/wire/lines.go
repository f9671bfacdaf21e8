package wire

// Progress is one line a workload prints while it works.
type Progress struct {
	T    float64 `json:"t"`    // seconds since the workload started
	Done float64 `json:"done"` // cumulative units of work
	Rate float64 `json:"rate"` // units per second since the previous line
	Unit string  `json:"unit"`
	// RSSMB is the resident set of the mem workload, in MiB.
	RSSMB float64 `json:"rss_mb,omitempty"`
	// The load workload's failed requests so far, and the latency of the
	// requests completed in this interval (in the summary: all of them).
	Failures int64    `json:"failures,omitempty"`
	Latency  *Latency `json:"latency_ms,omitempty"`
	// The disk workloads' IO operations so far, and per second since the
	// previous line (in the summary: over the whole run).
	Ops  float64 `json:"ops,omitempty"`
	IOPS float64 `json:"iops,omitempty"`
	// GOMAXPROCS is the Go runtime's, read as the line is written: since
	// Go 1.25 a runtime left to choose follows the cgroup's CPU quota and
	// the CPUs it may run on, at most once a second.
	GOMAXPROCS int `json:"gomaxprocs,omitempty"`
}

// Summary is the last line a workload prints.
type Summary struct {
	Final      bool     `json:"final"`
	Kind       string   `json:"kind"`
	WallS      float64  `json:"wall_s"`
	UserS      float64  `json:"user_s"`
	SysS       float64  `json:"sys_s"`
	Done       float64  `json:"done"`
	Unit       string   `json:"unit"`
	Throughput float64  `json:"throughput"`
	Result     string   `json:"result,omitempty"`
	Failures   int64    `json:"failures,omitempty"`
	Latency    *Latency `json:"latency_ms,omitempty"`
	Ops        float64  `json:"ops,omitempty"`
	IOPS       float64  `json:"iops,omitempty"`
	// BeganAt is when the first unit of work began, in Unix nanoseconds
	// on the workload's host clock.
	BeganAt int64 `json:"began_at,omitempty"`
	// Failure is why the workload could not do its work, when it could
	// not: the summary of a workload that failed says so, beside its
	// message on stderr.
	Failure FailureKind `json:"failure,omitempty"`
	// Runtimes, of the runtimes workload, are its first and last rounds
	// of the language runtimes' reports.
	Runtimes []RuntimeRound `json:"runtimes,omitempty"`
}

// FailureKind is why a workload could not do its work.
type FailureKind string

// FailureUnanswered: a load's service never answered, within the time a
// service has to start.
const FailureUnanswered FailureKind = "unanswered"

// Line is either kind of line, as the server reads it; Final tells which.
type Line struct {
	Progress
	Final      bool           `json:"final"`
	WallS      float64        `json:"wall_s"`
	UserS      float64        `json:"user_s"`
	SysS       float64        `json:"sys_s"`
	Throughput float64        `json:"throughput"`
	Result     string         `json:"result"`
	BeganAt    int64          `json:"began_at"`
	Failure    FailureKind    `json:"failure"`
	Runtimes   []RuntimeRound `json:"runtimes"`
}

// Latency is a latency summary in milliseconds, as load testers report
// it: percentiles of an HDR histogram over Count requests.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9,omitempty"`
	Max  float64 `json:"max"`
	// Count is how many requests completed (0 in records made before it
	// was kept).
	Count int64 `json:"count,omitempty"`
	// Loop is how the requests were sent: OpenLoop (at a rate, each
	// latency counted from the instant the request was due, so that a
	// stalled service's queue shows: corrected for coordinated omission)
	// or ClosedLoop (each client waits for its answer before the next,
	// which under-reports the tail). "" in records made before it was
	// kept.
	Loop string `json:"loop,omitempty"`
	// Late is how many requests of an open loop went out more than a
	// millisecond after they were due: the generator fell behind.
	Late int64 `json:"late,omitempty"`
}

// The loops of Latency.Loop.
const (
	OpenLoop   = "open"
	ClosedLoop = "closed"
)
