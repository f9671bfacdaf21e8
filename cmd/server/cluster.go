package main

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/kube"
	"github.com/limitlab/limitlab/internal/store"
	"github.com/limitlab/limitlab/internal/workshop"
)

// clusterEngines makes a cluster engines of the pool: one engine for a
// cluster of one node (or none yet), else one a node, named after the
// cluster with the node's place among them ("k8s-1", "k8s-2"), so that
// the fair queue places runs on free nodes as on free engines.
func clusterEngines(name string, cl *kube.Cluster, nodes []string, prepare func(e *kube.Engine, name string) func(context.Context) (engine.HostInfo, string, error)) []workshop.PoolEngine {
	if len(nodes) <= 1 {
		e := cl.Engine("")
		return []workshop.PoolEngine{{Name: name, Address: cl.Server(), Driver: e, Prepare: prepare(e, name)}}
	}
	out := make([]workshop.PoolEngine, 0, len(nodes))
	for i, node := range nodes {
		suffix := "-" + strconv.Itoa(i+1)
		n := name[:min(len(name), 32-len(suffix))] + suffix
		nc := cl.Engine(node)
		out = append(out, workshop.PoolEngine{Name: n, Address: cl.Server() + " node " + node, Driver: nc, Prepare: prepare(nc, n)})
	}
	return out
}

// prepareCluster makes a Kubernetes cluster ready for runs: it finds the
// node runs take, checks that the workload image was imported there (one
// this server wrote is never pulled; one -kube-image names is), and removes what an earlier life of this server left.
func prepareCluster(ctx context.Context, cl *kube.Engine, image string, st *store.Store, instance string, log *slog.Logger) (engine.HostInfo, string, error) {
	host, err := cl.Probe(ctx)
	if err != nil {
		return host, "", err
	}
	if engine.Pulled(image) {
		// The node pulls it as a lane's pod starts.
	} else if ok, err := cl.HasImage(ctx, image); err != nil {
		return host, "", err
	} else if !ok {
		return host, "", fmt.Errorf("node %s has no image %s: write it with `limitlab image -o limitlab.tar` and import it on the node with `ctr -n k8s.io images import limitlab.tar` (docs/deploying.md: On Kubernetes)", host.Kube.Node, image)
	}
	k := host.Kube
	log.Info("kubernetes node", slog.String("node", k.Node), slog.String("kubelet", k.KubeletVersion),
		slog.String("runtime", k.Runtime), slog.String("cgroup", host.Cgroup.String()), slog.Int("cpus", host.NCPU), slog.String("image", image),
		slog.String("cpu_manager", string(k.CPUManager)), slog.String("cpu_manager_probe", k.CPUManagerNote))
	if err := workshop.ReapLeftovers(ctx, cl, st, instance, log); err != nil {
		return host, "", err
	}
	return host, image, nil
}
