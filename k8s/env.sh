# Sourced by the test cluster's scripts: pinned versions and where things live.
# Everything built or unpacked is cached under ~/.cache/limitlab-k8s; each
# cluster's state (etcd, certificates, logs, pids) is under $KDATA and is
# removed when the cluster stops.
K8S_VERSION=v1.37.2                 # kube-apiserver, scheduler, controller-manager, kubelet, kubectl
CACHE=${LIMITLAB_K8S_CACHE:-$HOME/.cache/limitlab-k8s}
KBIN=$CACHE/bin-$K8S_VERSION        # the five binaries
DEBS=$CACHE/debs-containerd1.7      # Debian 12's etcd, runc, CNI plugins and Debian 13's containerd, unpacked
KDATA=${LIMITLAB_K8S_DATA:-/run/limitlab-k8s}
PIDS=$KDATA/pids LOGS=$KDATA/logs
SOCK=/run/limitlab-k8s-containerd/containerd.sock
NODE=limitlab-node1
# The second node, cgroup v2, in the VM (vmnode.sh): its link to this
# machine is a tap in a network namespace of its own, joined to this
# machine by a veth pair (VMNET_HOST here); the VM is VM_IP, its pods
# VM_PODS.
NODE2=limitlab-node2
VMNET_HOST=10.247.0.1 VMNET_NS=10.247.0.2 VM_GW=10.247.1.1 VM_IP=10.247.1.2 VM_PODS=10.245.1.0/24
VMDIR=${LIMITLAB_K8S_VM:-/var/tmp/limitlab-k8s-vm}
API_PORT=16443
. "$(dirname "${BASH_SOURCE[0]}")/../engines/pids.sh"
export PATH=/usr/local/go/bin:$KBIN:$DEBS/usr/bin:$DEBS/usr/sbin:$PATH
export KUBECONFIG=$KDATA/pki/admin.kubeconfig

say() { echo "k8s: $*"; }
# until SECONDS CMD...: true once CMD succeeds, false after SECONDS.
until_ok() {
  local end=$(( $(date +%s) + $1 )); shift
  while ! "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -ge $end ] && return 1
    sleep 0.2
  done
}

# start NAME CMD...: in its own session at nice 19, its PID kept.
start() {
  local n=$1; shift
  setsid nice -n 19 "$@" >"$LOGS/$n.log" 2>&1 </dev/null &
  echo $! >"$PIDS/$n.pid"
}

# stop NAME: TERM, then KILL after 10 s, by the PID it was started with.
stop() {
  local p
  p=$(stop_pid "$PIDS/$1.pid")
  [ -z "$p" ] || say "stopped $1 ($p)"
}

# node_ready NAME: true once the node says it is Ready.
node_ready() {
  kubectl get node "$1" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -qx True
}
