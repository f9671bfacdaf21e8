#!/usr/bin/env bash
# cluster.sh up | down: a real single-node Kubernetes for the tests, on this
# machine, changing nothing of it.
#  - etcd, the API server, the controller manager and the scheduler listen
#    on loopback only;
#  - containerd (its own root, state and socket, beside Docker's, which is
#    never touched) and kubelet run in a private mount namespace in which the
#    three sysctls kubelet insists on are files of its own, so the host's stay
#    as they are (protectKernelDefaults stays on: kubelet fails rather than
#    write them);
#  - pods use a CNI bridge without masquerading, in a network namespace of
#    its own where containerd runs: no iptables rule is added here, and
#    pods reach each other and nothing else; this machine reaches the pods
#    (the server its samplers) over a veth pair into that namespace, with a
#    route to the pods' subnet that goes with the pair;
#  - no image is pulled: the workload and pause images are the server's own
#    binary, written as an OCI archive (limitlab image) and imported.
# Every process is started with its PID kept and stopped by that PID; down
# removes the empty kubepods cgroups kubelet made. CPU_POLICY=static starts
# kubelet with the static CPU manager (a tenth of a CPU kept for the
# system, which reserves a whole one, CPU 0, and leaves 1.9 allocatable).
set -euo pipefail
. "$(dirname "$0")/env.sh"
. "$(dirname "$0")/node.sh"

fail() {
  echo "k8s: $1" >&2
  for l in "$LOGS"/*.log; do [ -f "$l" ] && { echo "--- $l" >&2; tail -n 15 "$l" >&2; }; done
  exit 1
}

pki() {
  local p=$KDATA/pki
  mkdir -p "$p"
  (
    cd "$p"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=limitlab-test-ca 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj /CN=kube-apiserver 2>/dev/null
    # $VMNET_HOST: the VM's node reaches the API server there (vmnode.sh).
    printf 'subjectAltName=IP:127.0.0.1,IP:10.97.0.1,IP:%s,DNS:localhost,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n' "$VMNET_HOST" >apiserver.ext
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out apiserver.crt -days 2 -extfile apiserver.ext 2>/dev/null
    # The API server's client certificate for kubelet (pod logs): kubelet
    # takes no anonymous request.
    openssl req -newkey rsa:2048 -nodes -keyout kubelet-client.key -out kubelet-client.csr -subj "/O=system:masters/CN=kube-apiserver-kubelet-client" 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' >kubelet-client.ext
    openssl x509 -req -in kubelet-client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out kubelet-client.crt -days 2 -extfile kubelet-client.ext 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    : >tokens.csv
    # user group kubeconfig
    while read -r user group name; do
      tok=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
      if [ "$group" = - ]; then echo "$tok,$user,$user" >>tokens.csv; else echo "$tok,$user,$user,\"$group\"" >>tokens.csv; fi
      cat >"$name.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: limitlab-test
  cluster: {server: "https://127.0.0.1:$API_PORT", certificate-authority: "$p/ca.crt"}
users:
- name: $user
  user: {token: "$tok"}
contexts:
- name: limitlab-test
  context: {cluster: limitlab-test, user: "$user"}
current-context: limitlab-test
KC
    done <<U
admin system:masters admin
system:node:$NODE system:nodes kubelet
system:node:$NODE2 system:nodes kubelet2
system:kube-controller-manager - controller-manager
system:kube-scheduler - scheduler
U
    chmod 600 ./*.key tokens.csv ./*.kubeconfig
  )
}

config() {
  local c=$KDATA/conf
  mkdir -p "$c" "$KDATA/containerd" "$KDATA/cni/net.d" "$KDATA/cni/ipam" "$KDATA/var-lib" "$KDATA/var-log" "$KDATA/run-containerd" "$KDATA/sysctl"
  containerd_toml "$KDATA/containerd/root" "$(dirname "$SOCK")" "$SOCK" "$DEBS" "$KDATA/cni/net.d" >"$c/containerd.toml"
  cni_conflist "$KDATA/cni/ipam" 10.245.0.0/24 10.246.0.0/30 >"$KDATA/cni/net.d/10-limitlab.conflist"
  # cgroup v1: kubelet 1.35 and later refuse it unless told.
  kubelet_yaml "$(node_ip)" "$SOCK" "$KDATA/pki/ca.crt" "failCgroupV1: false
$(cpu_policy)" >"$c/kubelet.yaml"
  # The values kubelet wants, seen only inside its mount namespace.
  echo 1 >"$KDATA/sysctl/overcommit_memory"
  echo 10 >"$KDATA/sysctl/panic"
  echo 1 >"$KDATA/sysctl/panic_on_oops"
}

# The node's address: given explicitly, since looking the name up would
# ask a resolver.
node_ip() { hostname -I | awk '{print $1}'; }

up() {
  [ -x "$KBIN/kubelet" ] || fail "no Kubernetes binaries in $KBIN: run k8s/build.sh"
  [ -f "${IMAGES:-}" ] || fail "IMAGES must name the OCI archive to import (limitlab image -o FILE -pause)"
  [ -d "$PIDS" ] && ls "$PIDS"/*.pid >/dev/null 2>&1 && fail "a test cluster is already running ($PIDS): stop it with k8s/cluster.sh down"
  rm -rf "$KDATA"; mkdir -p "$PIDS" "$LOGS" "$(dirname "$SOCK")"
  local t0; t0=$(date +%s.%N)
  pki; config
  local p=$KDATA/pki
  start etcd etcd --name limitlab --data-dir "$KDATA/etcd" \
    --listen-client-urls http://127.0.0.1:23790 --advertise-client-urls http://127.0.0.1:23790 \
    --listen-peer-urls http://127.0.0.1:23800 --initial-advertise-peer-urls http://127.0.0.1:23800 \
    --initial-cluster limitlab=http://127.0.0.1:23800
  until_ok 30 curl -sf http://127.0.0.1:23790/health || fail "etcd did not become healthy in 30 s"
  start kube-apiserver kube-apiserver --etcd-servers=http://127.0.0.1:23790 \
    --bind-address=127.0.0.1 --secure-port=$API_PORT --advertise-address=127.0.0.1 --endpoint-reconciler-type=none \
    --tls-cert-file="$p/apiserver.crt" --tls-private-key-file="$p/apiserver.key" --client-ca-file="$p/ca.crt" \
    --token-auth-file="$p/tokens.csv" --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction --allow-privileged=true \
    --service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$p/sa.pub" \
    --service-account-signing-key-file="$p/sa.key" --service-cluster-ip-range=10.97.0.0/24 \
    --kubelet-preferred-address-types=InternalIP \
    --kubelet-client-certificate="$p/kubelet-client.crt" --kubelet-client-key="$p/kubelet-client.key"
  until_ok 120 kubectl get --raw /readyz || fail "the API server was not ready in 120 s"
  # Without per-controller credentials kube-root-ca.crt is never published
  # and no token volume can mount.
  start kube-controller-manager kube-controller-manager --kubeconfig="$p/controller-manager.kubeconfig" \
    --authentication-kubeconfig="$p/controller-manager.kubeconfig" --authorization-kubeconfig="$p/controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=10257 --leader-elect=false --service-account-private-key-file="$p/sa.key" \
    --root-ca-file="$p/ca.crt" --use-service-account-credentials=true --allocate-node-cidrs=false
  start kube-scheduler kube-scheduler --kubeconfig="$p/scheduler.kubeconfig" \
    --authentication-kubeconfig="$p/scheduler.kubeconfig" --authorization-kubeconfig="$p/scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=10259 --leader-elect=false
  until_ok 120 kubectl -n default get serviceaccount default || fail "no default service account in 120 s"

  # /run/containerd is covered in the namespace; on a machine whose own
  # containerd never made it, its empty mount point is made here and
  # removed by down.
  [ -d /run/containerd ] || { mkdir /run/containerd && touch "$KDATA/made-run-containerd"; }
  start mntns unshare --mount --net --propagation private -- /bin/bash -c "
    ip link set lo up &&
    mount --bind $KDATA/sysctl/overcommit_memory /proc/sys/vm/overcommit_memory &&
    mount --bind $KDATA/sysctl/panic /proc/sys/kernel/panic &&
    mount --bind $KDATA/sysctl/panic_on_oops /proc/sys/kernel/panic_on_oops &&
    mount --bind $KDATA/var-lib /var/lib &&
    mount --bind $KDATA/var-log /var/log &&
    mount --bind $KDATA/run-containerd /run/containerd &&
    touch $KDATA/mntns.ready && exec sleep infinity"
  until_ok 10 test -e "$KDATA/mntns.ready" || fail "the private mount namespace did not come up"
  local ns="nsenter --target $(cat "$PIDS/mntns.pid") --mount --"
  # containerd, and so the pods' bridge, in the private network namespace:
  # pod to pod traffic is bridged there, under that namespace's empty
  # firewall, not this machine's (whose FORWARD policy Docker sets to DROP).
  start containerd nsenter --target "$(cat "$PIDS/mntns.pid")" --mount --net -- containerd --config "$KDATA/conf/containerd.toml"
  until_ok 30 ctr --address "$SOCK" version || fail "containerd did not answer in 30 s"
  # This machine to the pods: llk8s-h here, llk8s-n in the namespace, which
  # forwards (its own setting, inherited) to the pods' bridge.
  ip link add llk8s-h type veth peer name llk8s-n netns "$(cat "$PIDS/mntns.pid")"
  ip addr add 10.246.0.1/30 dev llk8s-h && ip link set llk8s-h up
  nsenter --target "$(cat "$PIDS/mntns.pid")" --net -- sh -c 'ip addr add 10.246.0.2/30 dev llk8s-n && ip link set llk8s-n up'
  ip route add 10.245.0.0/24 via 10.246.0.2 dev llk8s-h
  ctr --address "$SOCK" -n k8s.io images import "$IMAGES" >/dev/null || fail "importing $IMAGES failed"
  local ip; ip=$(node_ip)
  start kubelet $ns kubelet --config="$KDATA/conf/kubelet.yaml" --kubeconfig="$p/kubelet.kubeconfig" \
    --hostname-override="$NODE" --node-ip="$ip"
  until_ok 180 node_ready "$NODE" || fail "node $NODE was not Ready in 180 s"
  say "cluster up in $(echo "$(date +%s.%N) - $t0" | bc) s: node $NODE Ready, KUBECONFIG=$KUBECONFIG"
}

down() {
  bash "$(dirname "$0")/vmnode.sh" down || true
  [ -d "$PIDS" ] || { say "no test cluster"; return 0; }
  kubectl delete pods --all-namespaces --all --wait=true --timeout=30s >/dev/null 2>&1 || true
  stop kubelet
  local h; h=$(cat "$PIDS/mntns.pid" 2>/dev/null || true)
  if [ -n "$h" ] && [ -e "/proc/$h/ns/mnt" ]; then
    for t in $(ctr --address "$SOCK" -n k8s.io tasks ls -q 2>/dev/null); do
      ctr --address "$SOCK" -n k8s.io tasks kill -s KILL "$t" >/dev/null 2>&1 || true
    done
    stop containerd
    # Shims, pause and workload processes left in the namespace: found by
    # its inode, killed by PID.
    local nsid; nsid=$(readlink "/proc/$h/ns/mnt")
    for d in /proc/[0-9]*; do
      local p=${d#/proc/}
      [ "$p" = "$h" ] && continue
      [ "$(readlink "$d/ns/mnt" 2>/dev/null)" = "$nsid" ] && kill -9 "$p" 2>/dev/null && say "killed leftover $p"
    done
  fi
  stop mntns
  stop kube-scheduler; stop kube-controller-manager; stop kube-apiserver; stop etcd
  # rmdir refuses a cgroup with a process in it; deepest first.
  for s in /sys/fs/cgroup/*/kubepods; do
    [ -d "$s" ] && find "$s" -depth -type d -exec rmdir {} \; 2>/dev/null
    [ -d "$s" ] && echo "k8s: WARNING: $s is still there" >&2
  done
  ip link show llk8s0 >/dev/null 2>&1 && ip link del llk8s0
  # Its route goes with it.
  ip link show llk8s-h >/dev/null 2>&1 && ip link del llk8s-h
  # Mounts of the CRI's network namespaces and rootfs lived in the private
  # namespace, which is gone; their directories are removed with it.
  [ -f "$KDATA/made-run-containerd" ] && rmdir /run/containerd 2>/dev/null
  rm -rf "$(dirname "$SOCK")" "$KDATA"
  say "cluster stopped"
}

case "${1:-}" in
up) up ;;
down) down ;;
*) echo "usage: cluster.sh up|down" >&2; exit 2 ;;
esac
