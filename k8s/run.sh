#!/usr/bin/env bash
# make test-k8s: the suite's Kubernetes part on a real single-node cluster
# started here (cluster.sh), always stopped on the way out: once with
# kubelet's default CPU manager, then again with the static one for the
# lab that needs it. It fails loudly if a cluster does not come up, if a
# test fails, or if anything is left: a process, a kubepods cgroup, or a
# changed sysctl of this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
. k8s/env.sh
. k8s/account.sh

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
  exit $rc
}
trap finish EXIT

# up: a cluster, and the server's service account (account.sh): the suite
# runs as that.
up() {
  CPU_POLICY=${1:-none} IMAGES=$IMAGES bash k8s/cluster.sh up
  SA_KUBECONFIG=$KDATA/pki/limitlab.kubeconfig
  account "$SA_KUBECONFIG"
  export LIMITLAB_KUBECONFIG=$SA_KUBECONFIG LIMITLAB_WORKLOAD_BIN=$PWD/bin/limitlab
  # The admin's, for the tests that play another party: fake nodes.
  export LIMITLAB_ADMIN_KUBECONFIG=$KUBECONFIG
}

# K8S_ONLY=static runs the second cluster's test alone, K8S_ONLY=first the
# first cluster's; K8S_TEST_ARGS and K8S_PAGES_RUN narrow the first.
if [ "${K8S_ONLY:-}" != static ]; then
  up
  go test -tags k8s -count=1 -timeout 20m -v -skip '^(TestStaticCPUManagerLab|TestResizeRefusedForCPUsOfItsOwn|TestLabThroughTheSampler|TestTheSamplerAnswersOnlyOverTLS)$' ${K8S_TEST_ARGS:-} ./internal/kube/...
  # The pages of a Kubernetes run, in Chromium, and the nodes of a
  # cluster as engines of the pool.
  # One package at a time: each takes the one node.
  go test -tags k8s -count=1 -p 1 -timeout 10m -v -run "${K8S_PAGES_RUN:-^TestKubernetes}" ./web ./cmd/server
  # The sampler beside the node, deployed as deploy/kubernetes/sampler.yaml
  # says, over TLS with a CA of the test's own, for the tests that read a
  # run through it and knock on it in clear.
  certs=$(mktemp -d)
  (
    cd "$certs"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 1 -subj /CN=limitlab-sampler-ca 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout tls.key -out tls.csr -subj /CN=limitlab-sampler 2>/dev/null
    printf 'subjectAltName=DNS:limitlab-sampler\n' >san.ext
    openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out tls.crt -days 1 -extfile san.ext 2>/dev/null
  )
  kubectl -n limitlab-sampler create secret generic limitlab-sampler --from-literal=token="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')" \
    --from-file="$certs/tls.crt" --from-file="$certs/tls.key" --from-file="$certs/ca.crt" >/dev/null
  rm -rf "$certs"
  kubectl apply -f deploy/kubernetes/sampler.yaml >/dev/null
  kubectl -n limitlab-sampler set image daemonset/limitlab-sampler sampler="$WORKLOAD_IMAGE" >/dev/null
  kubectl -n limitlab-sampler rollout status daemonset/limitlab-sampler --timeout=60s >/dev/null || { echo "k8s: FAIL: the sampler DaemonSet did not roll out" >&2; exit 1; }
  go test -tags k8s -count=1 -timeout 10m -v -run '^(TestLabThroughTheSampler|TestTheSamplerAnswersOnlyOverTLS)$' ./internal/kube/
  bash k8s/cluster.sh down
fi

[ "${K8S_ONLY:-}" != first ] || exit 0
# The static CPU manager lab, on the node started again with that policy.
up static
LIMITLAB_K8S_CPU_POLICY=static go test -tags k8s -count=1 -timeout 10m -v -run '^(TestStaticCPUManagerLab|TestResizeRefusedForCPUsOfItsOwn)$' ./internal/kube/
