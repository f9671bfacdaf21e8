package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// benchContainer starts a workload container that holds a little memory
// for the sampler benchmarks and removes it afterwards.
func benchContainer(b *testing.B) (string, int) {
	eng, image, _ := enginetest.Engine(b)
	ctx := context.Background()
	plan := specs.PlannedLane{Workload: specs.Workload{Kind: "mem", MB: 8, Seconds: 600}}
	res, err := eng.ContainerCreate(ctx, engine.CreateOptions("", "bench", 0, plan, image, ""))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = eng.ContainerRemove(ctx, res.ID, client.ContainerRemoveOptions{Force: true}) })
	if _, err := eng.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		b.Fatal(err)
	}
	ins, err := eng.ContainerInspect(ctx, res.ID, client.ContainerInspectOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return res.ID, ins.Container.State.Pid
}

// engineCPUTicks sums the CPU time (in USER_HZ ticks) of the local engine's
// processes, dockerd and containerd, from /proc.
func engineCPUTicks(b *testing.B) int64 {
	var total int64
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		comm, err := os.ReadFile(filepath.Join(d, "comm"))
		if err != nil {
			continue
		}
		switch strings.TrimSpace(string(comm)) {
		case "dockerd", "containerd":
		default:
			continue
		}
		stat, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		// Fields after the command's closing parenthesis; utime and stime
		// are the 14th and 15th fields of the whole line.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		total += u + s
	}
	return total
}

// reportEngineCPU adds the engine's CPU per sample to a benchmark's result.
func reportEngineCPU(b *testing.B, before int64) {
	ticks := engineCPUTicks(b) - before
	b.ReportMetric(float64(ticks)*10/float64(b.N), "engine-cpu-ms/op")
}

// BenchmarkSampleCgroupFiles is one container-sample read from the cgroup
// files: the server's own cost (ns/op), and the engine's (none).
func BenchmarkSampleCgroupFiles(b *testing.B) {
	id, pid := benchContainer(b)
	r, err := engine.FindCgroup("/sys/fs/cgroup", id, pid)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	before := engineCPUTicks(b)
	b.ResetTimer()
	for range b.N {
		if _, err := r.Read(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportEngineCPU(b, before)
}

// BenchmarkSampleEngineOneShot is the same sample through the engine's
// one-shot stats endpoint, what a remote engine forces. Docker 20.10
// answers it at its collector's next one-second tick, so ns/op is mostly
// waiting; engine-cpu-ms/op is what it costs the host being measured.
func BenchmarkSampleEngineOneShot(b *testing.B) {
	eng, _, _ := enginetest.Engine(b)
	id, _ := benchContainer(b)
	ctx := context.Background()
	b.ReportAllocs()
	before := engineCPUTicks(b)
	b.ResetTimer()
	for range b.N {
		res, err := eng.ContainerStats(ctx, id, client.ContainerStatsOptions{})
		if err != nil {
			b.Fatal(err)
		}
		var s container.StatsResponse
		if err := json.NewDecoder(res.Body).Decode(&s); err != nil {
			b.Fatal(err)
		}
		res.Body.Close()
	}
	b.StopTimer()
	reportEngineCPU(b, before)
}
