package enginefake

import (
	"context"
	"sync"
	"time"

	"github.com/moby/moby/api/types/system"
	"github.com/moby/moby/client"
)

// Host is the fake engine's host: what its Info and version say, and the
// faults a test gives them.
type Host struct {
	// NCPU and Mem describe the host (2 CPUs, 8 GiB if zero).
	NCPU int
	Mem  int64

	mu        sync.Mutex
	infoDelay time.Duration
	infoErr   error
}

// SetInfoFault makes the engine's Info, which a probe of its host asks
// first, answer after delay (or when its context ends) and then with err:
// an engine that is paused, loaded or gone. Zero and nil make it answer
// at once again. Containers go on as they were.
func (e *Host) SetInfoFault(delay time.Duration, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.infoDelay, e.infoErr = delay, err
}

// SetNCPU changes the host's CPUs while the engine is in use: the host
// the engine reports from then on.
func (e *Host) SetNCPU(n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.NCPU = n
}

func (e *Host) Info(ctx context.Context, _ client.InfoOptions) (client.SystemInfoResult, error) {
	e.mu.Lock()
	ncpu, mem, delay, fault := e.NCPU, e.Mem, e.infoDelay, e.infoErr
	e.mu.Unlock()
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return client.SystemInfoResult{}, ctx.Err()
		}
	}
	if fault != nil {
		return client.SystemInfoResult{}, fault
	}
	if ncpu == 0 {
		ncpu = 2
	}
	if mem == 0 {
		mem = 8 << 30
	}
	return client.SystemInfoResult{Info: system.Info{NCPU: ncpu, MemTotal: mem, CgroupVersion: "1", CgroupDriver: "cgroupfs",
		CPUCfsQuota: true, CPUCfsPeriod: true, CPUShares: true, CPUSet: true, MemoryLimit: true, SwapLimit: true,
		PidsLimit: true, OperatingSystem: "fake", KernelVersion: "fake", DockerRootDir: "/nonexistent"}}, nil
}

func (e *Host) ServerVersion(context.Context, client.ServerVersionOptions) (client.ServerVersionResult, error) {
	return client.ServerVersionResult{Version: "fake", APIVersion: "1.41"}, nil
}

func (e *Host) ClientVersion() string { return "1.41" }
func (e *Host) DaemonHost() string    { return "tcp://fake:2375" }
