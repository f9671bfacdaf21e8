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
API_PORT=16443
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
