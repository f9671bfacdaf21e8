#!/usr/bin/env bash
# make k8s-demo: the test cluster (cluster.sh) and the dashboard on it, for
# trying the Kubernetes labs in a browser. The server runs as its service
# account (deploy/kubernetes/rbac.yaml) and reads the node's cgroup files
# here. Ctrl-C stops the server and then the cluster, each by its PID, and
# removes the kubepods cgroups kubelet made. ADDR sets where the dashboard
# listens (127.0.0.1:8080); DATA, its run store (data-k8s-demo). NODES=2
# joins the cgroup v2 VM as a second node (vmnode.sh, about a minute
# more): each node is then an engine of the dashboard's pool, the VM's
# read through its sampler.
set -euo pipefail
cd "$(dirname "$0")/.."
. k8s/env.sh
. k8s/account.sh

bash k8s/build.sh
mkdir -p bin
CGO_ENABLED=0 go build -o bin/limitlab ./cmd/server
IMAGES=$(mktemp --suffix .tar)
server=""
finish() {
  trap - EXIT INT TERM
  if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then
    kill "$server" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$server" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$server" 2>/dev/null || true
    say "stopped the dashboard ($server)"
  fi
  bash k8s/cluster.sh down
  rm -f "$IMAGES"
}
trap finish EXIT
trap 'exit 130' INT TERM
image=$(bin/limitlab image -o "$IMAGES" -pause | sed -n 1p)
IMAGES=$IMAGES bash k8s/cluster.sh up
account "$KDATA/pki/limitlab.kubeconfig" 12h
nodes=$NODE
if [ "${NODES:-1}" = 2 ]; then
  sampler "$image"
  IMAGES=$IMAGES bash k8s/vmnode.sh up
  kubectl -n limitlab-sampler rollout status daemonset/limitlab-sampler --timeout=300s >/dev/null
  nodes="$NODE (cgroup v1) and $NODE2 (cgroup v2, in the VM)"
fi
say "the dashboard on Kubernetes $K8S_VERSION, nodes $nodes: http://${ADDR:-127.0.0.1:8080} (Ctrl-C stops everything)"
bin/limitlab -kubeconfig "$KDATA/pki/limitlab.kubeconfig" -namespace limitlab \
  -addr "${ADDR:-127.0.0.1:8080}" -data "${DATA:-data-k8s-demo}" &
server=$!
wait "$server"
