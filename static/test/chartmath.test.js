// node --test static/test: the charts' pure sums.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fmt, valueWithLimit, zoomWindow, spread, tipLines, shortTitle, studiedCharts, notable, settleSeconds } from "../chartmath.js";
import { metrics, shownMetrics } from "../metrics.js";

test("fmt gives a dash for no value", () => {
  assert.equal(fmt(null, 2), "—");
  assert.equal(fmt(Number.NaN, 2), "—");
  assert.equal(fmt(0.5, 2), "0.50");
});

test("a value beside its limit shows its share", () => {
  assert.equal(valueWithLimit(0.25, 0.5, 2), "0.25 (50% of limit)");
  assert.equal(valueWithLimit(0.25, null, 2), "0.25");
  assert.equal(valueWithLimit(null, 0.5, 2), "—");
});

test("the zoom is the second around a lane's middle", () => {
  assert.deepEqual(zoomWindow({ started_at: 2, ended_at: 6 }, 10), { min: 3.5, max: 4.5 });
  // A lane still running: its middle so far.
  assert.deepEqual(zoomWindow({ started_at: 2, ended_at: 0 }, 4), { min: 2.5, max: 3.5 });
  // Never before the run's start.
  assert.deepEqual(zoomWindow({ started_at: 0, ended_at: 0.4 }, 1), { min: 0, max: 0.7 });
});

test("a lane's spread counts only the values in range", () => {
  assert.deepEqual(spread([1, 2, 3, 4], [5, null, 7, 9], { min: 1.5, max: 4 }), { n: 2, min: 7, max: 9, p10: 7, p90: 9 });
  const xs = [...Array(20).keys()];
  const ys = xs.map((x) => (x === 7 ? 0 : 500 + x));
  assert.deepEqual(spread(xs, ys, { min: 0, max: 19 }), { n: 20, min: 0, max: 519, p10: 500, p90: 517 });
  assert.deepEqual(spread([1], [5], { min: 2, max: 3 }), { n: 0 });
});

test("every chart reads a field the server sends, converting nothing", () => {
  const sample = { cpu: 0.5, mem_mib: 12, read_mib_s: 1, write_mib_s: 2, io_requests_s: 30, work_iops: 4, pids: 3,
    throttled_ms_s: 60, throttled_pct: 40, cpu_pressure_ms_s: 5, memory_pressure_ms_s: 6, io_pressure_ms_s: 7,
    throughput: 8, latency_ms: { p99: 9 }, gomaxprocs: 2 };
  const want = { cpu: 0.5, mem: 12, "io-read": 1, "io-write": 2, iops: 30, "work-iops": 4, pids: 3, throttled: 60,
    "throttled-periods": 40, pressure: 5, "memory-pressure": 6, "io-pressure": 7, throughput: 8, latency: 9, gomaxprocs: 2 };
  for (const m of metrics) assert.equal(m.get(sample), want[m.key], m.key);
  const lane = { chart_limits: { cpu: 0.5, mem_mib: 64, read_mib_s: 0, write_mib_s: 20, io_requests_s: 0, pids: 0 } };
  assert.equal(metrics.find((m) => m.key === "cpu").limit(lane), 0.5);
  assert.equal(metrics.find((m) => m.key === "io-write").limit(lane), 20);
  assert.equal(metrics.find((m) => m.key === "io-read").limit(lane), null);
});

test("charts a run cannot fill are not drawn", () => {
  const run = { lanes: [{ load: false, disk: false }], missing_signals: [{ signal: "cpu_pressure" }] };
  const keys = shownMetrics(run).map((m) => m.key);
  assert.ok(keys.includes("cpu"));
  assert.ok(!keys.includes("pressure") && !keys.includes("latency") && !keys.includes("work-iops") && !keys.includes("gomaxprocs"));
  run.lanes.push({ load: true, disk: true, service: true });
  const more = shownMetrics(run).map((m) => m.key);
  assert.ok(more.includes("latency") && more.includes("work-iops") && more.includes("gomaxprocs"));
});

test("a tooltip gives each lane with a value, its limit and its expectation", () => {
  assert.deepEqual(tipLines(["a", "b", "c"], [0.25, null, 1], [0.5, 1, null], [0.5, 1, null], 2), [
    { lane: 0, name: "a", text: "0.25 (50% of limit); limit 0.50, expected 0.50" },
    { lane: 2, name: "c", text: "1.00" },
  ]);
});

test("a run draws the charts of its verdict's signal first", () => {
  const lanes = [{ name: "a" }];
  const keys = (run) => shownMetrics(run).map((m) => m.key);
  const throttling = keys({ lanes, verdict_metric: "throttling" });
  assert.deepEqual(throttling.slice(0, 3), ["throttled", "throttled-periods", "cpu"]);
  assert.deepEqual(keys({ lanes, verdict_metric: "cpu" }).slice(0, 2), ["cpu", "throttled"]);
  // Without a verdict, the catalogue's order; the same charts either way.
  assert.deepEqual(keys({ lanes }), metrics.filter((m) => !m.load && !m.disk && !m.service).map((m) => m.key));
  assert.deepEqual([...throttling].sort(), [...keys({ lanes })].sort());
});

test("a folded chart goes by its title's first words", () => {
  assert.equal(shortTitle("CFS throttled time (ms per second)"), "CFS throttled time");
  assert.equal(shortTitle("Pids"), "Pids");
});

test("a run studies the charts of its verdict, its workloads and the limits it sets", () => {
  const run = { spec: { lanes: [
    { workload: { kind: "spin" }, limits: { cpus: "0.5" } },
    { workload: { kind: "disk-write" }, limits: { "device-write-bps": "auto:5mb" } },
    { workload: { kind: "spin" }, resources: { requests: { memory: "64Mi" } } },
  ] } };
  const keys = [...studiedCharts(run, ["throughput"])].sort();
  assert.deepEqual(keys, ["cpu", "io-pressure", "io-write", "iops", "mem", "memory-pressure", "throttled", "throttled-periods", "throughput"]);
  // A lane that sets nothing studies its workload's charts only: a
  // default memory or pids limit of the server's is not the run's.
  assert.deepEqual([...studiedCharts({ spec: { lanes: [{ workload: { kind: "md5" }, limits: {} }] } }, [])], ["cpu"]);
});

test("a chart the run does not study is notable near a limit, or past a lane's start above its floor", () => {
  // 100 MiB under a 1 GiB default is not notable; 600 MiB is.
  assert.equal(notable("mem", 100, 1024, 10), false);
  assert.equal(notable("mem", 600, 1024, 10), true);
  // A container's start reads its program: not notable in its first seconds.
  assert.equal(notable("io-read", 40, null, 0.5), false);
  assert.equal(notable("io-read", 40, null, settleSeconds + 1), true);
  assert.equal(notable("io-read", 0.2, null, settleSeconds + 1), false);
  // A Go program's dozen threads under a pids limit of 4096.
  assert.equal(notable("pids", 12, 4096, 20), false);
  assert.equal(notable("pids", 12, 20, 20), true);
  assert.equal(notable("throughput", 0.1, null, 0), true);
  assert.equal(notable("cpu", 0, null, 20), false);
  assert.equal(notable("cpu", null, null, 20), false);
});
