package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/workload/wire"
	corev1 "k8s.io/api/core/v1"
)

// cpuProbeTimeout bounds the CPU manager probe: a pod made, read, removed.
const cpuProbeTimeout = 45 * time.Second

// cpuProbeRetry is how soon a probe that could not run is tried again.
const cpuProbeRetry = time.Minute

// cpuPolicy is what the CPU manager probe found on a node.
type cpuPolicy struct {
	policy specs.CPUManagerPolicy
	note   string
	at     time.Time
}

// cpuManagers keeps each node's CPU manager policy as its probe found it,
// by the node's uid (which a node made anew does not keep).
type cpuManagers struct {
	mu       sync.Mutex
	policies map[string]cpuPolicy
}

// policy is the node's CPU manager policy: probed once per node, again a
// minute after a probe that could not run.
func (m *cpuManagers) policy(ctx context.Context, c *client, n corev1.Node, ncpu int, files podFiles) (specs.CPUManagerPolicy, string) {
	m.mu.Lock()
	got, ok := m.policies[string(n.UID)]
	m.mu.Unlock()
	if ok && (got.policy != "" || time.Since(got.at) < cpuProbeRetry) {
		return got.policy, got.note
	}
	// (A node another server's run holds is not probed: the engine's
	// probe refuses it before, as its pods are measuring.)
	var policy specs.CPUManagerPolicy
	var note string
	switch {
	case c.cfg.Image == "":
		return "", "not probed: no workload image named"
	case ncpu < 1:
		note = "not probed: the node has less than one allocatable CPU"
	default:
		began := time.Now()
		policy, note = probeCPUManager(ctx, c, n.Name, ncpu, files, cpuProbeTimeout)
		note += fmt.Sprintf(" (the probe took %.1f s)", time.Since(began).Seconds())
	}
	m.mu.Lock()
	if m.policies == nil {
		m.policies = map[string]cpuPolicy{}
	}
	m.policies[string(n.UID)] = cpuPolicy{policy: policy, note: note, at: time.Now()}
	m.mu.Unlock()
	return policy, note
}

// podFiles opens a started pod's container's cgroup files (remote: through
// the node's sampler).
type podFiles func(ctx context.Context, uid, cid string) (cg engine.CgroupFiles, remote bool, err error)

// probeCPUManager runs a Guaranteed pod of one CPU on the node and reads
// back what kubelet gave it: under the static policy one CPU of its own
// and no quota; under none every CPU and a quota of one CPU. The probe
// pod is an idle http workload of the cluster's image, removed before it
// returns, and all of it takes at most deadline.
func probeCPUManager(ctx context.Context, c *client, node string, ncpu int, files podFiles, deadline time.Duration) (policy specs.CPUManagerPolicy, note string) {
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	spec, errs := specs.ParseRequest([]byte(`{"lanes": [{"name": "cpu manager probe", "workload": {"kind": "http", "gomaxprocs": "1"},
		"resources": {"limits": {"cpu": "1", "memory": "32Mi"}}}]}`))
	if errs != nil {
		return "", "not probed: " + errs.Error()
	}
	plan, errs := specs.ValidateLanes(spec, specs.Host{NCPU: ncpu, Kubernetes: true})
	if errs != nil {
		return "", "not probed: " + errs.Error()
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	runID := "cpuprobe" + hex.EncodeToString(suffix)
	nl := engine.NewLane{RunID: runID, Index: 0, Instance: c.cfg.Instance, Image: c.cfg.Image, Lane: plan.Lanes[0]}
	p := PodSpec(nl, c.placement(node), args(nl, wire.Loopback))
	defer func() {
		// Its own context: the probe's may have ended.
		rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
		defer rcancel()
		_, _ = c.reap(rctx, engine.LabelRun, runID, node)
	}()
	uid, cid, err := c.makePod(ctx, p)
	if err != nil {
		return "", "not probed: the probe pod did not run: " + err.Error()
	}
	cg, _, err := files(ctx, uid, cid)
	if err != nil {
		return "", "not probed: the probe pod's cgroup files: " + err.Error()
	}
	if cl, ok := cg.(io.Closer); ok {
		defer cl.Close()
	}
	// v1's files, else v2's.
	quota, qerr := cg.File("cpu", "cpu.cfs_quota_us")
	if qerr != nil {
		quota, qerr = cg.File("cpu", "cpu.max")
	}
	cpus, serr := cg.File("cpuset", "cpuset.cpus.effective")
	if serr != nil {
		cpus, serr = cg.File("cpuset", "cpuset.cpus")
	}
	if qerr != nil || serr != nil {
		return "", fmt.Sprintf("not probed: the probe pod's quota (%v) or cpuset (%v) could not be read", qerr, serr)
	}
	q, set := strings.TrimSpace(string(quota)), strings.TrimSpace(string(cpus))
	n, _ := specs.ParseCPUSet(set)
	note = fmt.Sprintf("a Guaranteed probe pod of 1 CPU got cpuset %s and a CFS quota of %q", set, q)
	noQuota := q == "-1" || strings.HasPrefix(q, "max")
	switch {
	case noQuota && len(n) == 1:
		return specs.CPUManagerStatic, note
	case !noQuota:
		return specs.CPUManagerNone, note
	}
	return "", note
}
