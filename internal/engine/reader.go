package engine

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// Reader takes one reading of a container's counters.
type Reader interface{ Read() (Counters, error) }

// CgroupFiles reads a container's cgroup files: its counters, and any one
// file by controller and name (for reading limits back). A CgroupReader
// reads them here; a sampler's client, on the engine's host.
type CgroupFiles interface {
	Reader
	File(controller, name string) ([]byte, error)
}

// CgroupSource opens a container's cgroup files where the server cannot
// see them: a sampler beside a remote engine (limitlab sampler), which
// reads them when asked, at the run's ticks.
type CgroupSource interface {
	Open(ctx context.Context, id string, pid int) (CgroupFiles, error)
	// Address is where the source is, for the page.
	Address() string
}

// EngineInterval is how often the engine's stats are asked for at most: its
// collector refreshes once a second, and each call costs the daemon
// milliseconds of CPU.
const EngineInterval = time.Second

// StatsCgroup, StatsSampler and StatsEngine are where a container's
// counters come from: its cgroup files read here, the same files read by a
// sampler on the engine's host, or the engine's stats endpoint.
const (
	StatsCgroup  = "cgroup"
	StatsSampler = "sampler"
	StatsEngine  = "engine"
)

// OpenReader picks how a container's counters are read: its cgroup files if
// the server can see them or a sampler reads them, else the engine's
// one-shot stats. It returns the reader, how often it may be read (0:
// every tick) and the source's name.
func OpenReader(ctx context.Context, eng Engine, h HostInfo, id string, pid int, log *slog.Logger) (Reader, time.Duration, string) {
	switch h.StatsSource {
	case StatsCgroup:
		cg, err := FindCgroup(h.cgroupRoot, id, pid)
		if err == nil {
			return cg, 0, StatsCgroup
		}
		log.Warn("cgroup files not found, using engine stats", slog.String("id", id[:12]), slog.Any("err", err))
	case StatsSampler:
		cg, err := h.sampler.Open(ctx, id, pid)
		if err == nil {
			return cg, 0, StatsSampler
		}
		log.Warn("the sampler could not read the container's cgroup files, using engine stats", slog.String("id", id[:12]), slog.String("sampler", h.sampler.Address()), slog.Any("err", err))
	}
	return &EngineReader{ctx: ctx, eng: eng, id: id}, EngineInterval, StatsEngine
}

// EngineReader takes one-shot stats from the engine. A call may take up to
// a second (the engine answers at its collector's next tick).
type EngineReader struct {
	ctx context.Context
	eng Engine
	id  string
}

func (e *EngineReader) Read() (Counters, error) {
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
	defer cancel()
	res, err := e.eng.ContainerStats(ctx, e.id, client.ContainerStatsOptions{})
	if err != nil {
		return Counters{}, err
	}
	defer res.Body.Close()
	var s container.StatsResponse
	if err := json.NewDecoder(res.Body).Decode(&s); err != nil {
		return Counters{}, err
	}
	if s.Read.IsZero() || s.CPUStats.CPUUsage.TotalUsage == 0 && s.PidsStats.Current == 0 {
		return Counters{}, errors.New("container is not running")
	}
	c := countersFromEngine(s)
	if c.At.IsZero() {
		c.At = time.Now()
	}
	return c, nil
}
