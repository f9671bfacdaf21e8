// Package enginefake is a small in-memory Docker Engine for the tests of
// scheduling logic (queue, quotas, expiry, stop and shutdown, imports),
// which then run in milliseconds with no Docker. A fake container runs
// until it is killed or its Runtime passes, then prints a workload summary
// line and exits 0. Everything that touches real containers is tested on
// the real engine as well.
package enginefake

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/workload/wire"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"
)

// Engine is the fake. Set its fields before use.
type Engine struct {
	// Runtime is how long a container runs unless killed (1 s if zero).
	Runtime time.Duration
	// Summarize, if set, gives the summary a container prints as it exits
	// cleanly, from the containers of its run (a test's service and its
	// load, whose latency follows the service's limit).
	Summarize func(c Container, run []Container) wire.Summary
	// CreateGate, if set, holds every ContainerCreate until it receives
	// (or is closed): a create the engine is slow to finish.
	CreateGate chan struct{}
	// StartDelay, if set, is how long each ContainerStart takes before
	// the container runs: an engine slow to start a lane (a cluster's
	// node making a pod).
	StartDelay time.Duration
	// Host is the host the engine reports.
	Host

	mu         sync.Mutex
	seq        int
	containers map[string]*fakeContainer
	volumes    map[string]bool
	creates    int
	waiting    int
}

// Container is what Summarize is told of a container: its name, labels
// and the resources it was created with.
type Container struct {
	Name      string
	Labels    map[string]string
	Resources container.Resources
}

type fakeContainer struct {
	id, name  string
	labels    map[string]string
	resources container.Resources
	started   time.Time
	finished  time.Time
	running   bool
	exitCode  int
	// service is an http service: it serves until it is stopped, as the
	// real one does, whatever Runtime says.
	service bool
	exited  chan struct{} // closed when it exits
	logs    *io.PipeWriter
	logsR   *io.PipeReader
}

var _ engine.Engine = (*Engine)(nil)

// New returns an empty fake engine.
func New() *Engine {
	return &Engine{containers: map[string]*fakeContainer{}, volumes: map[string]bool{}}
}

// HostOf is what a probe of the fake reports: a remote engine, so samples
// come from its stats (which the fake does not give).
func HostOf(e *Engine) engine.HostInfo {
	h, err := engine.ProbeHost(context.Background(), e, engine.HostProbe{CgroupRoot: "/nonexistent"})
	if err != nil {
		panic(err)
	}
	return h
}

// Counts are what the fake holds, and has done, at one moment.
type Counts struct {
	Containers     int // containers that exist
	Running        int // containers that run
	Creates        int // containers ever created
	CreatesWaiting int // creates the CreateGate holds
	Volumes        int // volumes that exist
}

// Counts is what the fake holds now.
func (e *Engine) Counts() Counts {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := Counts{Containers: len(e.containers), Creates: e.creates, CreatesWaiting: e.waiting, Volumes: len(e.volumes)}
	for _, fc := range e.containers {
		if fc.running {
			c.Running++
		}
	}
	return c
}

func (e *Engine) ImageInspect(context.Context, string, ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	return client.ImageInspectResult{}, nil
}

func (e *Engine) ImageBuild(context.Context, io.Reader, client.ImageBuildOptions) (client.ImageBuildResult, error) {
	return client.ImageBuildResult{Body: io.NopCloser(strings.NewReader(""))}, nil
}

func (e *Engine) ContainerCreate(ctx context.Context, opts client.ContainerCreateOptions) (client.ContainerCreateResult, error) {
	if e.CreateGate != nil {
		e.mu.Lock()
		e.waiting++
		e.mu.Unlock()
		defer func() {
			e.mu.Lock()
			e.waiting--
			e.mu.Unlock()
		}()
		select {
		case <-e.CreateGate:
		case <-ctx.Done():
			return client.ContainerCreateResult{}, ctx.Err()
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seq++
	e.creates++
	id := fmt.Sprintf("%064x", e.seq)
	c := &fakeContainer{id: id, name: opts.Name, labels: opts.Config.Labels, resources: opts.HostConfig.Resources,
		exited: make(chan struct{}), service: slices.Contains(opts.Config.Cmd, "http")}
	c.logsR, c.logs = io.Pipe()
	e.containers[id] = c
	return client.ContainerCreateResult{ID: id}, nil
}

func (e *Engine) get(id string) (*fakeContainer, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.containers[id]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("Error: No such container: %s", id)
}

func (e *Engine) ContainerStart(ctx context.Context, id string, _ client.ContainerStartOptions) (client.ContainerStartResult, error) {
	c, err := e.get(id)
	if err != nil {
		return client.ContainerStartResult{}, err
	}
	if e.StartDelay > 0 {
		t := time.NewTimer(e.StartDelay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return client.ContainerStartResult{}, ctx.Err()
		}
	}
	runtime := e.Runtime
	if runtime == 0 {
		runtime = time.Second
	}
	e.mu.Lock()
	c.running, c.started = true, time.Now()
	e.mu.Unlock()
	if !c.service {
		time.AfterFunc(runtime, func() { c.exit(e, 0) })
	}
	return client.ContainerStartResult{}, nil
}

// exit ends a running container with code; a clean exit prints the
// workload's summary first.
func (c *fakeContainer) exit(e *Engine, code int) {
	e.mu.Lock()
	if !c.running {
		e.mu.Unlock()
		return
	}
	c.running, c.finished, c.exitCode = false, time.Now(), code
	wall := c.finished.Sub(c.started).Seconds()
	sum := wire.Summary{Final: true, WallS: wall, UserS: wall / 2, Done: 1, Throughput: 1 / wall}
	if e.Summarize != nil {
		var run []Container
		for _, o := range e.containers {
			if o.labels[engine.LabelRun] == c.labels[engine.LabelRun] {
				run = append(run, Container{Name: o.name, Labels: o.labels, Resources: o.resources})
			}
		}
		sum = e.Summarize(Container{Name: c.name, Labels: c.labels, Resources: c.resources}, run)
		sum.Final, sum.WallS = true, wall
	}
	e.mu.Unlock()
	if code == 0 {
		line, _ := json.Marshal(sum)
		frame(c.logs, append(line, '\n'))
	}
	_ = c.logs.Close()
	close(c.exited)
}

// frame writes p in the engine's multiplexed log format, as stdout.
func frame(w io.Writer, p []byte) {
	hdr := make([]byte, 8)
	hdr[0] = 1
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(p)))
	_, _ = w.Write(append(hdr, p...))
}

func (e *Engine) ContainerInspect(_ context.Context, id string, _ client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	c, err := e.get(id)
	if err != nil {
		return client.ContainerInspectResult{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	st := &container.State{Running: c.running, ExitCode: c.exitCode}
	if !c.started.IsZero() {
		st.StartedAt = c.started.Format(time.RFC3339Nano)
	}
	if !c.finished.IsZero() {
		st.FinishedAt = c.finished.Format(time.RFC3339Nano)
	}
	return client.ContainerInspectResult{Container: container.InspectResponse{ID: id, State: st,
		HostConfig: &container.HostConfig{Resources: c.resources}}}, nil
}

func (e *Engine) ContainerWait(ctx context.Context, id string, _ client.ContainerWaitOptions) client.ContainerWaitResult {
	res, errc := make(chan container.WaitResponse, 1), make(chan error, 1)
	c, err := e.get(id)
	if err != nil {
		errc <- err
		return client.ContainerWaitResult{Result: res, Error: errc}
	}
	// Lives until the container exits or the caller gives up.
	go func() {
		select {
		case <-c.exited:
			e.mu.Lock()
			code := c.exitCode
			e.mu.Unlock()
			res <- container.WaitResponse{StatusCode: int64(code)}
		case <-ctx.Done():
			errc <- ctx.Err()
		}
	}()
	return client.ContainerWaitResult{Result: res, Error: errc}
}

func (e *Engine) ContainerLogs(_ context.Context, id string, _ client.ContainerLogsOptions) (client.ContainerLogsResult, error) {
	c, err := e.get(id)
	if err != nil {
		return nil, err
	}
	return c.logsR, nil
}

func (e *Engine) ContainerKill(_ context.Context, id string, opts client.ContainerKillOptions) (client.ContainerKillResult, error) {
	c, err := e.get(id)
	if err != nil {
		return client.ContainerKillResult{}, err
	}
	code := 137
	if opts.Signal == string(engine.SigTerm) {
		code = 0 // the workload prints its summary and exits cleanly
	}
	c.exit(e, code)
	return client.ContainerKillResult{}, nil
}

func (e *Engine) ContainerRemove(_ context.Context, id string, _ client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	c, err := e.get(id)
	if err != nil {
		return client.ContainerRemoveResult{}, err
	}
	c.exit(e, 137)
	e.mu.Lock()
	delete(e.containers, id)
	e.mu.Unlock()
	return client.ContainerRemoveResult{}, nil
}

// ContainerList honours the label filter ("key" or "key=value").
func (e *Engine) ContainerList(_ context.Context, opts client.ContainerListOptions) (client.ContainerListResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out client.ContainerListResult
	for _, c := range e.containers {
		ok := true
		for label := range opts.Filters["label"] {
			k, v, hasValue := strings.Cut(label, "=")
			got, has := c.labels[k]
			if !has || (hasValue && got != v) {
				ok = false
			}
		}
		if !ok {
			continue
		}
		state := "exited"
		if c.running {
			state = "running"
		} else if c.started.IsZero() {
			state = "created"
		}
		out.Items = append(out.Items, container.Summary{ID: c.id, Names: []string{"/" + c.name}, Labels: c.labels, State: container.ContainerState(state)})
	}
	return out, nil
}

// ContainerStats is not offered: samples simply do not come.
func (e *Engine) ContainerStats(context.Context, string, client.ContainerStatsOptions) (client.ContainerStatsResult, error) {
	return client.ContainerStatsResult{}, errors.New("fake engine: no stats")
}

func (e *Engine) ContainerUpdate(_ context.Context, id string, opts client.ContainerUpdateOptions) (client.ContainerUpdateResult, error) {
	c, err := e.get(id)
	if err != nil {
		return client.ContainerUpdateResult{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	r := opts.Resources
	if r.NanoCPUs != 0 {
		c.resources.NanoCPUs = r.NanoCPUs
	}
	if r.Memory != 0 {
		c.resources.Memory, c.resources.MemorySwap = r.Memory, r.MemorySwap
	}
	if r.CPUShares != 0 {
		c.resources.CPUShares = r.CPUShares
	}
	if r.CpusetCpus != "" {
		c.resources.CpusetCpus = r.CpusetCpus
	}
	if r.PidsLimit != nil {
		c.resources.PidsLimit = r.PidsLimit
	}
	return client.ContainerUpdateResult{}, nil
}

// Events gives no events; the stream ends with ctx.
func (e *Engine) Events(ctx context.Context, _ client.EventsListOptions) client.EventsResult {
	return client.EventsResult{Messages: make(chan events.Message), Err: make(chan error)}
}

func (e *Engine) VolumeCreate(_ context.Context, opts client.VolumeCreateOptions) (client.VolumeCreateResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.volumes[opts.Name] = true
	return client.VolumeCreateResult{}, nil
}

func (e *Engine) VolumeRemove(_ context.Context, id string, _ client.VolumeRemoveOptions) (client.VolumeRemoveResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.volumes, id)
	return client.VolumeRemoveResult{}, nil
}

// ServiceNeeding is a Summarize for runs of a service (lane 0) and its
// load (lane 1): the load reports the p99 of a service that needs need
// cores, whose tail grows as its --cpus nears that (500 ms at most, and
// at or below need).
func ServiceNeeding(need float64) func(Container, []Container) wire.Summary {
	return func(c Container, run []Container) wire.Summary {
		if c.Labels[engine.LabelLane] != "1" {
			return wire.Summary{Done: 1}
		}
		cpus := 0.0
		for _, o := range run {
			if o.Labels[engine.LabelLane] == "0" {
				cpus = float64(o.Resources.NanoCPUs) / 1e9
			}
		}
		p99 := 500.0
		if cpus > need {
			p99 = min(500, 4+2/(cpus-need))
		}
		return wire.Summary{Done: 100, Latency: &wire.Latency{P50: p99 / 4, P90: p99 / 2, P99: p99, Max: p99, Count: 100, Loop: wire.OpenLoop}}
	}
}
