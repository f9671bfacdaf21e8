package specs

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Step is one stage of a guided lab: what to look at or do, optionally a
// limit change the participant makes while the lane runs, and a check over
// the measured stream that ticks the step once it holds. A step has a
// change, a check or both; the steps are taken in order.
type Step struct {
	Prompt string      `json:"prompt"`
	Change *StepChange `json:"change,omitempty"`
	Check  *Check      `json:"check,omitempty"`
	// Hint is shown while the check fails.
	Hint string `json:"hint,omitempty"`
}

// StepChange is a live change of one lane's limits.
type StepChange struct {
	Lane   string `json:"lane"`
	Limits Limits `json:"limits"`
}

// Check is a condition on one lane's samples over the last Seconds of
// those taken since its step began (and since its change was made).
type Check struct {
	Lane   string  `json:"lane"`
	Metric string  `json:"metric"` // one of CheckMetrics
	Op     string  `json:"op"`     // "<", ">" or "within"
	Value  float64 `json:"value"`
	// Tolerance is relative, for "within": 0.1 is ±10% of Value.
	Tolerance float64 `json:"tolerance,omitempty"`
	Seconds   float64 `json:"seconds,omitempty"` // DefaultCheckSeconds if 0
}

// Check metrics: each a mean over the check's window.
const (
	CheckCores     = "cores"     // CPU in cores
	CheckThrottled = "throttled" // share of CFS periods throttled, 0 to 1
	// CheckThrottledMs is milliseconds throttled a second, summed over
	// the CPUs the group ran on: a share of periods counts one throttled
	// for a microsecond, this does not.
	CheckThrottledMs = "throttled_ms"
	CheckMemoryMiB   = "memory_mib"
	CheckIOMBps      = "io_mbps" // block IO read and written, MB/s
	// CheckGOMAXPROCS is a Go workload's GOMAXPROCS as it reports it;
	// CheckP99Ms a load lane's p99 latency, over the intervals it
	// reported in the window.
	CheckGOMAXPROCS = "gomaxprocs"
	CheckP99Ms      = "p99_ms"
)

// CheckMetrics are the metrics a step's check may use.
var CheckMetrics = []string{CheckCores, CheckThrottled, CheckThrottledMs, CheckMemoryMiB, CheckIOMBps, CheckGOMAXPROCS, CheckP99Ms}

// DefaultCheckSeconds is a check's window unless it sets one.
const DefaultCheckSeconds = 3

// MaxSteps bounds a lab's steps.
const MaxSteps = 20

// Text is the check in words, for the page.
func (c Check) Text() string {
	what := map[string]string{CheckCores: "cores", CheckThrottled: "throttled periods", CheckThrottledMs: "throttled ms a second", CheckMemoryMiB: "memory (MiB)", CheckIOMBps: "block IO (MB/s)",
		CheckGOMAXPROCS: "GOMAXPROCS", CheckP99Ms: "p99 latency (ms)"}[c.Metric]
	value := strconv.FormatFloat(c.Value, 'g', 4, 64)
	if c.Metric == CheckThrottled {
		value = strconv.FormatFloat(c.Value*100, 'g', 4, 64) + "%"
	}
	win := c.Seconds
	if win == 0 {
		win = DefaultCheckSeconds
	}
	var cond string
	switch c.Op {
	case "within":
		cond = fmt.Sprintf("within %s of %s", Percent(c.Tolerance), value)
	default:
		cond = c.Op + " " + value
	}
	return fmt.Sprintf("%s's %s %s over %gs", c.Lane, what, cond, win)
}

// Text is the change as it is sent: kubectl's resize of a pod lane's
// resources, or the docker CLI's update of a container's flags.
func (c StepChange) Text() string {
	if r := c.Limits.Resources; r != nil {
		return fmt.Sprintf("kubectl patch pod %s --subresource resize --patch '%s'", c.Lane, ResourcesPatch(PodContainer, *r))
	}
	b, _ := json.Marshal(c.Limits)
	var m map[string]string
	_ = json.Unmarshal(b, &m)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var s strings.Builder
	s.WriteString("docker update")
	for _, k := range keys {
		if m[k] != "" {
			fmt.Fprintf(&s, " --%s %s", k, m[k])
		}
	}
	s.WriteString(" " + c.Lane)
	return s.String()
}
