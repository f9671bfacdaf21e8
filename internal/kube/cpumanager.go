package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/workload/wire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// cpuProbeTimeout bounds the CPU manager probe: a pod made, read, removed.
const cpuProbeTimeout = 45 * time.Second

// cpuProbeRetry is how soon a probe that could not run is tried again.
const cpuProbeRetry = time.Minute

// cpuPolicy is what the CPU manager probe found on a node.
type cpuPolicy struct {
	policy, note string
	at           time.Time
}

// UseImage names the workload image on the cluster's nodes, which the CPU
// manager probe runs.
func (c *Cluster) UseImage(ref string) {
	c.mu.Lock()
	c.image = ref
	c.mu.Unlock()
}

// cpuManager is the node's CPU manager policy: probed once per node (by
// its uid, which a node made anew does not keep), again a minute after a
// probe that could not run.
func (c *Cluster) cpuManager(ctx context.Context, n corev1.Node, ncpu int) (policy, note string) {
	c.mu.Lock()
	got, ok := c.policies[string(n.UID)]
	image := c.image
	c.mu.Unlock()
	if ok && (got.policy != "" || time.Since(got.at) < cpuProbeRetry) {
		return got.policy, got.note
	}
	// (A node another server's run holds is not probed: pickNode refuses
	// it before, as its pods are measuring.)
	switch {
	case image == "":
		return "", "not probed: no workload image named"
	case ncpu < 1:
		policy, note = "", "not probed: the node has less than one allocatable CPU"
	default:
		began := time.Now()
		policy, note = c.probeCPUManager(ctx, n.Name, image, ncpu)
		note += fmt.Sprintf(" (the probe took %.1f s)", time.Since(began).Seconds())
	}
	c.mu.Lock()
	c.policies[string(n.UID)] = cpuPolicy{policy: policy, note: note, at: time.Now()}
	c.mu.Unlock()
	return policy, note
}

// probeCPUManager runs a Guaranteed pod of one CPU on the node and reads
// back what kubelet gave it: under the static policy one CPU of its own
// and no quota; under none every CPU and a quota of one CPU. The probe
// pod is an idle http workload, removed before it returns.
func (c *Cluster) probeCPUManager(ctx context.Context, node, image string, ncpu int) (policy, note string) {
	ctx, cancel := context.WithTimeout(ctx, cpuProbeTimeout)
	defer cancel()
	spec, errs := experiments.Parse([]byte(`{"lanes": [{"name": "cpu manager probe", "workload": {"kind": "http", "gomaxprocs": "1"},
		"resources": {"limits": {"cpu": "1", "memory": "32Mi"}}}]}`))
	if errs != nil {
		return "", "not probed: " + errs.Error()
	}
	plan, errs := experiments.Validate(spec, experiments.Host{NCPU: ncpu, Kubernetes: true})
	if errs != nil {
		return "", "not probed: " + errs.Error()
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	runID := "cpuprobe" + hex.EncodeToString(suffix)
	nl := engine.NewLane{RunID: runID, Index: 0, Instance: c.instance, Image: image, Lane: plan.Lanes[0]}
	p := PodSpec(nl, node, args(nl, wire.Loopback))
	defer func() {
		// Its own context: the probe's may have ended.
		rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
		defer rcancel()
		_, _ = c.Reap(rctx, engine.LabelRun, runID)
	}()
	uid, cid, err := c.makePod(ctx, p)
	if err != nil {
		return "", "not probed: the probe pod did not run: " + err.Error()
	}
	cg, err := c.openPod(ctx, uid, cid)
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
	n, _ := experiments.ParseCPUSet(set)
	note = fmt.Sprintf("a Guaranteed probe pod of 1 CPU got cpuset %s and a CFS quota of %q", set, q)
	noQuota := q == "-1" || strings.HasPrefix(q, "max")
	switch {
	case noQuota && len(n) == 1:
		return experiments.CPUManagerStatic, note
	case !noQuota:
		return experiments.CPUManagerNone, note
	}
	return "", note
}

// waitExclusiveGone waits until the pods started with CPUs of their own
// are gone. kubelet gives their CPUs back to the shared pool when they
// stop; a pod of the pool made before then would start on fewer CPUs than
// the plan gives it (and Go would count those).
func (c *Cluster) waitExclusiveGone(ctx context.Context) error {
	c.mu.Lock()
	var ids []string
	for id := range c.exclusive {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, id := range ids {
		for {
			_, err := c.cs.CoreV1().Pods(c.ns).Get(ctx, id, metav1.GetOptions{})
			if notFound(err) {
				break
			}
			if ctx.Err() != nil {
				return fmt.Errorf("kube: pod %s, with CPUs of its own, was not gone in a minute", id)
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
		c.mu.Lock()
		delete(c.exclusive, id)
		c.mu.Unlock()
	}
	return nil
}
