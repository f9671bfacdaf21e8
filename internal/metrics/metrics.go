// Package metrics serves Limit Lab's figures to Prometheus: the server's
// own (its queue, runs, engines and store), and each running lane's
// cgroup counters under cAdvisor's metric names, so that a Grafana
// dashboard made for cAdvisor reads them. Every figure is built from the
// current snapshot when it is scraped (a prometheus.Collector, as
// cAdvisor's is): nothing is updated at each sample, and a scrape asks no
// engine anything.
package metrics

import (
	"strconv"

	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workshop"
	"github.com/prometheus/client_golang/prometheus"
)

// Runs are the runs in the server's memory, which the collector reads.
type Runs interface {
	Runs() []*runner.Run
}

// Engines are the server's engines, which the collector reads.
type Engines interface {
	Engines() []workshop.EngineView
}

// laneLabels name a lane's series: its container's name (cAdvisor's
// "name"), its run, the run's lab, and the lane's index and name.
var laneLabels = []string{"name", "run", "lab", "lane", "lane_name"}

// laneMetric is one of cAdvisor's metrics, read from a lane's counters.
type laneMetric struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(c runner.LaneCounters) (float64, bool)
}

func lane(name, help string, kind prometheus.ValueType, value func(c runner.LaneCounters) (float64, bool)) laneMetric {
	return laneMetric{desc: prometheus.NewDesc(name, help, laneLabels, nil), kind: kind, value: value}
}

func always(f func(c runner.LaneCounters) float64) func(c runner.LaneCounters) (float64, bool) {
	return func(c runner.LaneCounters) (float64, bool) { return f(c), true }
}

// laneMetrics are cAdvisor's names, help texts and units.
var laneMetrics = []laneMetric{
	lane("container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.", prometheus.CounterValue,
		always(func(c runner.LaneCounters) float64 { return float64(c.Counters.CPUNs) / 1e9 })),
	lane("container_cpu_user_seconds_total", "Cumulative user cpu time consumed in seconds.", prometheus.CounterValue,
		always(func(c runner.LaneCounters) float64 { u, _ := c.Counters.CPUSplit(); return u })),
	lane("container_cpu_system_seconds_total", "Cumulative system cpu time consumed in seconds.", prometheus.CounterValue,
		always(func(c runner.LaneCounters) float64 { _, s := c.Counters.CPUSplit(); return s })),
	lane("container_cpu_cfs_periods_total", "Number of elapsed enforcement period intervals.", prometheus.CounterValue,
		always(func(c runner.LaneCounters) float64 { return float64(c.Counters.Periods) })),
	lane("container_cpu_cfs_throttled_periods_total", "Number of throttled period intervals.", prometheus.CounterValue,
		always(func(c runner.LaneCounters) float64 { return float64(c.Counters.ThrottledPeriods) })),
	lane("container_cpu_cfs_throttled_seconds_total", "Total time duration the container has been throttled.", prometheus.CounterValue,
		always(func(c runner.LaneCounters) float64 { return float64(c.Counters.ThrottledNs) / 1e9 })),
	lane("container_memory_working_set_bytes", "Current working set in bytes.", prometheus.GaugeValue,
		always(func(c runner.LaneCounters) float64 { return float64(c.Counters.MemBytes) })),
	lane("container_spec_memory_limit_bytes", "Memory limit for the container.", prometheus.GaugeValue,
		func(c runner.LaneCounters) (float64, bool) {
			return float64(c.Counters.MemLimit), c.Counters.MemLimit > 0
		}),
	lane("container_fs_reads_bytes_total", "Cumulative count of bytes read.", prometheus.CounterValue,
		always(func(c runner.LaneCounters) float64 { return float64(c.Counters.ReadBytes) })),
	lane("container_fs_writes_bytes_total", "Cumulative count of bytes written.", prometheus.CounterValue,
		always(func(c runner.LaneCounters) float64 { return float64(c.Counters.WriteBytes) })),
	lane("container_processes", "Number of processes running inside the container.", prometheus.GaugeValue,
		always(func(c runner.LaneCounters) float64 { return float64(c.Counters.Pids) })),
	lane("container_spec_cpu_quota", "CPU quota of the container.", prometheus.GaugeValue,
		func(c runner.LaneCounters) (float64, bool) { return float64(c.CPUQuotaUs), c.CPUQuotaUs > 0 }),
	lane("container_spec_cpu_period", "CPU period of the container.", prometheus.GaugeValue,
		func(c runner.LaneCounters) (float64, bool) { return float64(c.CPUPeriodUs), c.CPUQuotaUs > 0 }),
	lane("container_spec_cpu_shares", "CPU share of the container.", prometheus.GaugeValue,
		func(c runner.LaneCounters) (float64, bool) { return float64(c.CPUShares), c.CPUShares > 0 }),
}

// Collector is Limit Lab's figures, built at each scrape.
type Collector struct {
	memory     Runs
	pool       Engines
	storeBytes func() int64

	queued, runs, engines, store *prometheus.Desc
	ticks, missed, lag           *prometheus.Desc
}

// New is the collector of the runs' and engines' figures, and of the
// store's size on disk as storeBytes gives it (none if nil).
func New(runs Runs, pool Engines, storeBytes func() int64) *Collector {
	return &Collector{memory: runs, pool: pool, storeBytes: storeBytes,
		queued:  prometheus.NewDesc("limitlab_queue_length", "Runs waiting in the queue.", nil, nil),
		runs:    prometheus.NewDesc("limitlab_runs", "Runs in the server's memory, by state: queued, running, and ended ones not yet stored whole.", []string{"state"}, nil),
		engines: prometheus.NewDesc("limitlab_engines", "Engines of the pool, by state.", []string{"state"}, nil),
		store:   prometheus.NewDesc("limitlab_store_bytes", "The run store's size on disk, its write-ahead log included.", nil, nil),
		ticks:   prometheus.NewDesc("limitlab_sampling_ticks_total", "Ticks of the one sampling clock given to runs.", nil, nil),
		missed:  prometheus.NewDesc("limitlab_sampling_ticks_missed_total", "Ticks a run missed because it was still reading the one before.", nil, nil),
		lag:     prometheus.NewDesc("limitlab_sampling_lag_seconds", "How long a run's samples took from their tick to being published.", nil, nil),
	}
}

// Describe sends the descriptions of every metric the collector makes.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.queued
	ch <- c.runs
	ch <- c.engines
	ch <- c.store
	ch <- c.ticks
	ch <- c.missed
	ch <- c.lag
	for _, m := range laneMetrics {
		ch <- m.desc
	}
}

// Collect sends the figures as they are now.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	byState := map[runner.State]int{}
	for _, r := range c.memory.Runs() {
		byState[runner.StateOf(r)]++
		for _, lc := range runner.CountersOf(r) {
			labels := []string{lc.Container, lc.Run, lc.Lab, strconv.Itoa(lc.Lane), lc.Name}
			for _, m := range laneMetrics {
				if v, ok := m.value(lc); ok {
					ch <- prometheus.MustNewConstMetric(m.desc, m.kind, v, labels...)
				}
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(c.queued, prometheus.GaugeValue, float64(byState[runner.StateQueued]))
	for s, n := range byState {
		ch <- prometheus.MustNewConstMetric(c.runs, prometheus.GaugeValue, float64(n), string(s))
	}
	engines := map[workshop.EngineState]int{}
	for _, e := range c.pool.Engines() {
		engines[e.State]++
	}
	for s, n := range engines {
		ch <- prometheus.MustNewConstMetric(c.engines, prometheus.GaugeValue, float64(n), string(s))
	}
	clock := runner.Clock()
	ch <- prometheus.MustNewConstMetric(c.ticks, prometheus.CounterValue, float64(clock.Ticks))
	ch <- prometheus.MustNewConstMetric(c.missed, prometheus.CounterValue, float64(clock.Missed))
	ch <- prometheus.MustNewConstSummary(c.lag, clock.Lagged, clock.Lag.Seconds(), nil)
	if c.storeBytes != nil {
		ch <- prometheus.MustNewConstMetric(c.store, prometheus.GaugeValue, float64(c.storeBytes()))
	}
}
