// The run page's charts: what each draws from a sample and a lane, in the
// units the server sends (engine.Sample, runner.ChartLimits). Nothing here
// converts a unit: the server builds every figure once.

export const metrics = [
  { key: "cpu", title: "CPU (cores used; dashed: limit, dotted: the model's expectation)", get: (s) => s.cpu,
    limit: (l) => l.chart_limits.cpu || null, expected: (l) => l.expected_cores, digits: 2,
    empty: "No CPU used: a lane that computes would fill this chart." },
  { key: "mem", title: "Memory (MiB, usage less inactive file cache)", get: (s) => s.mem_mib,
    limit: (l) => l.chart_limits.mem_mib || null, digits: 1,
    empty: "No memory in use: a mem lane would fill this chart." },
  { key: "io-read", title: "Block IO read (MiB/s; dashed: --device-read-bps)", get: (s) => s.read_mib_s,
    limit: (l) => l.chart_limits.read_mib_s || null, digits: 2, empty: "No block IO read: a disk-read lane would fill this chart." },
  { key: "io-write", title: "Block IO write (MiB/s; dashed: --device-write-bps)", get: (s) => s.write_mib_s,
    limit: (l) => l.chart_limits.write_mib_s || null, digits: 2, empty: "No block IO written: a disk-write lane would fill this chart." },
  { key: "iops", title: "Block IO requests per second (cgroup: read + write; dashed: --device-*-iops)", get: (s) => s.io_requests_s,
    limit: (l) => l.chart_limits.io_requests_s || null, digits: 0,
    empty: "No block IO requests: a disk-read or disk-write lane would fill this chart." },
  { key: "work-iops", title: "Disk workload: its own reads or writes per second", get: (s) => (s.work_iops == null ? null : s.work_iops),
    digits: 1, disk: true, empty: "No reads or writes reported by a disk workload yet." },
  { key: "pids", title: "Pids (dashed: --pids-limit)", get: (s) => s.pids, limit: (l) => l.chart_limits.pids || null,
    digits: 0, empty: "No processes counted: a running lane would fill this chart." },
  { key: "throttled", title: "CFS throttled time (ms per second)", get: (s) => s.throttled_ms_s, digits: 1,
    empty: "No throttling: a lane under --cpus or --cpu-quota that uses all of its quota would fill this chart." },
  { key: "throttled-periods", title: "CFS periods throttled (%)", get: (s) => s.throttled_pct, digits: 0,
    empty: "No period was throttled: a lane under --cpus or --cpu-quota that uses all of its quota would fill this chart." },
  { key: "pressure", title: "CPU pressure: time some task waited for a CPU (ms per second, cgroup v2)",
    get: (s) => (s.cpu_pressure_ms_s == null ? null : s.cpu_pressure_ms_s), digits: 1, signal: "cpu_pressure",
    empty: "No CPU pressure: lanes that want more CPU than they are given would fill this chart." },
  { key: "memory-pressure", title: "Memory pressure: time some task waited for memory (ms per second, cgroup v2)",
    get: (s) => (s.memory_pressure_ms_s == null ? null : s.memory_pressure_ms_s), digits: 1, signal: "memory_pressure",
    empty: "No memory pressure: a lane held near its --memory would fill this chart." },
  { key: "io-pressure", title: "IO pressure: time some task waited for block IO (ms per second, cgroup v2)",
    get: (s) => (s.io_pressure_ms_s == null ? null : s.io_pressure_ms_s), digits: 1, signal: "io_pressure",
    empty: "No IO pressure: a lane that waits on a throttled or busy disk would fill this chart." },
  { key: "throughput", title: "Workload throughput (its unit per second)", get: (s) => (s.stalled ? null : s.throughput), digits: 1,
    empty: "No throughput reported yet: the workloads report theirs as they run." },
  { key: "gomaxprocs", title: "Go services: GOMAXPROCS as the runtime reports it (auto follows the CPU limit and the cpuset within about a second, never below 2)",
    get: (s) => (s.gomaxprocs ? s.gomaxprocs : null), digits: 0, service: true,
    empty: "No GOMAXPROCS reported yet: the Go services report theirs as they run." },
  { key: "latency", title: "Load: p99 latency of each interval (ms)", get: (s) => (s.latency_ms ? s.latency_ms.p99 : null),
    digits: 1, load: true, empty: "No requests answered yet: the load lanes report each interval's latency." },
];

// zoomable are the charts the zoom buttons narrow to a second of a lane.
export const zoomable = new Set(["cpu", "throttled", "throttled-periods"]);

// signalFirst are the charts that carry each verdict metric's signal, in
// the order a run judged by it draws them, before the others.
export const signalFirst = {
  cpu: ["cpu", "throttled"],
  wall_time: ["cpu", "throughput", "throttled"],
  throttling: ["throttled", "throttled-periods", "cpu", "latency"],
  phase_recovery: ["cpu", "throughput", "iops", "work-iops"],
  io_limit: ["io-read", "io-write", "iops", "work-iops"],
  io_share: ["io-read", "io-write", "iops"],
};

// shownMetrics are the charts a run draws: not those whose signal its
// samples lack (PSI on cgroup v1 or from the engine's stats), nor those
// only a load or a disk lane fills when it has none; those that carry its
// verdict's signal first.
export function shownMetrics(run) {
  const lacks = new Set((run.missing_signals || []).map((m) => m.signal));
  const hasLoad = run.lanes.some((l) => l.load);
  const hasDisk = run.lanes.some((l) => l.disk);
  const hasService = run.lanes.some((l) => l.service);
  const shown = metrics.filter((m) => (!m.signal || !lacks.has(m.signal)) && (!m.load || hasLoad) && (!m.disk || hasDisk)
    && (!m.service || hasService));
  const first = signalFirst[run.verdict_metric] || [];
  const rank = (m) => (first.includes(m.key) ? first.indexOf(m.key) : first.length);
  return shown.map((m, i) => ({ m, i })).sort((a, b) => rank(a.m) - rank(b.m) || a.i - b.i).map(({ m }) => m);
}
