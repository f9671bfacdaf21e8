#!/usr/bin/env bash
# make test-k8s: the suite's Kubernetes part on a real cluster started here
# (cluster.sh), always stopped on the way out: once with kubelet's default
# CPU manager, on this machine's node (cgroup v1) and then with the cgroup
# v2 VM joined as a second node (vmnode.sh), then again with the static CPU
# manager for the lab that needs it, on each node in turn. It fails loudly if a
# cluster or the VM's node does not come up, if a test fails, or if
# anything is left: a process, a kubepods cgroup, the VM's link, or a
# changed sysctl of this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
. k8s/env.sh
. k8s/account.sh
. vm/qemu.sh

bash k8s/build.sh
mkdir -p bin
CGO_ENABLED=0 go build -o bin/limitlab ./cmd/server
IMAGES=$(mktemp --suffix .tar)
WORKLOAD_IMAGE=$(bin/limitlab image -o "$IMAGES" -pause | sed -n 1p)

sysctls() { cat /proc/sys/vm/overcommit_memory /proc/sys/kernel/panic /proc/sys/kernel/panic_on_oops | tr '\n' ' '; }
before=$(sysctls)
finish() {
  rc=$?
  bash k8s/cluster.sh down || rc=1
  rm -f "$IMAGES"
  if [ "$(sysctls)" != "$before" ]; then
    echo "k8s: FAIL: this machine's sysctls changed: $before -> $(sysctls)" >&2; rc=1
  fi
  if ls -d /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods 2>/dev/null | grep -q .; then
    echo "k8s: FAIL: kubepods cgroups left" >&2; rc=1
  fi
  if ip link show llvm-h >/dev/null 2>&1 || [ -e "$VMDIR" ] || pgrep -f 'limitlab[.]guest=k8snode' >/dev/null; then
    echo "k8s: FAIL: the VM node's qemu, link or folder left" >&2; rc=1
  fi
  exit $rc
}
trap finish EXIT

# up: a cluster, and the server's service account (account.sh): the suite
# runs as that.
up() {
  CPU_POLICY=${1:-none} IMAGES=$IMAGES bash k8s/cluster.sh up
  SA_KUBECONFIG=$KDATA/pki/limitlab.kubeconfig
  account "$SA_KUBECONFIG"
  export LIMITLAB_TEST_KUBECONFIG=$SA_KUBECONFIG LIMITLAB_TEST_WORKLOAD_BIN=$PWD/bin/limitlab
  # The admin's, for the tests that play another party: fake nodes.
  export LIMITLAB_ADMIN_KUBECONFIG=$KUBECONFIG
}

# on_vm_node POLICY CMD...: the VM joins the cluster as its second node
# (vmnode.sh, kubelet's CPU manager POLICY), the sampler rolls out there,
# then CMD runs. When any of it fails and the VM's console shows a kernel
# panic (vm/qemu.sh says why it can), it all runs once more on a VM booted
# again, once the node's pods are removed. A failure without a panic
# fails at once.
on_vm_node() {
  local policy=$1; shift
  vm_once_more_after_panic k8s "$LOGS/vm.log" vm_node_gone vm_node_then "$policy" "$@"
}
vm_node_then() {
  local policy=$1; shift
  CPU_POLICY=$policy IMAGES=$IMAGES bash k8s/vmnode.sh up && vm_sampler && "$@"
}
# vm_node_gone: after a panic its kubelet is gone, and nothing would
# confirm its pods' end.
vm_node_gone() {
  kubectl delete pods --all-namespaces --field-selector "spec.nodeName=$NODE2" --force --grace-period=0 >/dev/null 2>&1 || true
  bash k8s/vmnode.sh down
}

vm_sampler() {
  kubectl -n limitlab-sampler rollout status daemonset/limitlab-sampler --timeout=300s >/dev/null && return 0
  echo "k8s: FAIL: the sampler did not roll out to $NODE2" >&2
  return 1
}

v2_tests() {
  LIMITLAB_K8S_NODE=$NODE2 LIMITLAB_TEST_EMULATED_CPU=1 go test -tags k8s -count=1 -timeout 40m -v \
    -run "${K8S_V2_RUN:-^(TestAPodOnTheV2Node|TestQoSContentionLab|TestOOMLab|TestGOMAXPROCSLab|TestResizeInPlaceLab|TestAMemoryResizeBelowUsage)$}" ./internal/kube/ &&
    go test -tags k8s -count=1 -timeout 10m -v -run '^(TestTwoRealNodesShareThePool|TestANodeTaintedBySomeoneElseGetsNoLane)$' ./cmd/server
}

static_v2_tests() {
  LIMITLAB_K8S_NODE=$NODE2 LIMITLAB_TEST_EMULATED_CPU=1 LIMITLAB_K8S_CPU_POLICY=static go test -tags k8s -count=1 -timeout 15m -v -run '^TestStaticCPUManagerLab$' ./internal/kube/
}

# The two-node round: on the VM's node the Kubernetes labs, a pod's v2
# files and PSI, a resize and a memory decrease below usage; then the
# pool places runs on both nodes. The VM's CPU verdicts are judged and
# logged, not required to hold (enginetest.CheckVerdict).
two_nodes() {
  on_vm_node none v2_tests
  bash k8s/vmnode.sh down
}

# K8S_ONLY=static runs the second cluster's test alone, K8S_ONLY=first the
# first cluster's, K8S_ONLY=two-nodes the two-node round alone;
# K8S_TEST_ARGS and K8S_PAGES_RUN narrow the first, K8S_V2_RUN the tests on
# the VM's node.
if [ "${K8S_ONLY:-}" = two-nodes ]; then
  up
  sampler "$WORKLOAD_IMAGE"
  two_nodes
  exit 0
fi
if [ "${K8S_ONLY:-}" != static ]; then
  up
  go test -tags k8s -count=1 -timeout 20m -v -skip '^(TestStaticCPUManagerLab|TestResizeRefusedForCPUsOfItsOwn|TestLabThroughTheSampler|TestTheSamplerAnswersOnlyOverTLS|TestAPodOnTheV2Node)$' ${K8S_TEST_ARGS:-} ./internal/kube/...
  # The Helm chart as `helm template` writes it, under the API server's
  # server-side dry run, its pods under their namespaces' Pod Security.
  go test -tags k8s -count=1 -timeout 5m -v -run '^TestTheClusterAcceptsTheChart$' ./deploy/helm
  # The pages of a Kubernetes run, in Chromium, and the nodes of a
  # cluster as engines of the pool.
  # One package at a time: each takes the one node.
  go test -tags k8s -count=1 -p 1 -timeout 10m -v -run "${K8S_PAGES_RUN:-^TestKubernetes}" ./web ./cmd/server
  # The sampler, for the tests that read a run through it and knock on it
  # in clear.
  sampler "$WORKLOAD_IMAGE"
  go test -tags k8s -count=1 -timeout 10m -v -run '^(TestLabThroughTheSampler|TestTheSamplerAnswersOnlyOverTLS)$' ./internal/kube/
  [ "${K8S_ONLY:-}" = first ] || two_nodes
  bash k8s/cluster.sh down
fi

[ "${K8S_ONLY:-}" != first ] || exit 0
# The static CPU manager lab, on the node started again with that policy,
# then on the VM's node started with it too (K8S_ONLY=static runs this
# alone).
up static
LIMITLAB_K8S_CPU_POLICY=static go test -tags k8s -count=1 -timeout 10m -v -run '^(TestStaticCPUManagerLab|TestResizeRefusedForCPUsOfItsOwn)$' ./internal/kube/
sampler "$WORKLOAD_IMAGE"
on_vm_node static static_v2_tests
