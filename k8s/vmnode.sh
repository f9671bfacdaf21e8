#!/usr/bin/env bash
# vmnode.sh up | down: the cgroup v2 VM (vm/) as the test cluster's second
# node, NODE2, beside the host's own (cgroup v1). cluster.sh up first.
#  - The VM boots Debian's kernel 6.12 under TCG (vm/kernel.sh), sees this
#    machine's root read-only over 9p, and runs the same containerd, runc,
#    CNI plugins and kubelet as the host's node (vm/k8snode.sh), on a disk
#    of its own, with the configuration node.sh writes for both.
#  - Its network is one of its own: a tap in a network namespace held by a
#    process started here, joined to this machine by a veth pair. This
#    machine routes the VM and its pods' subnet there and nothing else;
#    the namespace forwards between the two; the VM's pods reach only this
#    machine's end of the pair. The VM reaches the API server (on loopback)
#    through a socat on that end.
#  - CPU_POLICY=static starts its kubelet with the static CPU manager, as
#    cluster.sh does the host's.
#  - Every process is started with its PID kept and stopped by it; down
#    removes the node from the cluster, the pair (and its routes) and the
#    VM's folder.
set -euo pipefail
cd "$(dirname "$0")/.."
. k8s/env.sh
. k8s/node.sh
. vm/qemu.sh

fail() {
  echo "k8s: vm node: $1" >&2
  [ -f "$LOGS/vm.log" ] && { echo "--- the VM's console" >&2; tail -n 40 "$LOGS/vm.log" >&2; }
  for l in "$VMDIR"/*.log; do [ -f "$l" ] && { echo "--- $l" >&2; tail -n 20 "$l" >&2; }; done
  exit 1
}

# The node's files, as the VM sees them: this folder is its /mnt/out, the
# cache of binaries its /mnt/k8s (vm/k8snode.sh mounts it).
guest_config() {
  local g=/mnt/out k=/mnt/k8s
  local gdebs=$k/${DEBS#"$CACHE"/} gkbin=$k/${KBIN#"$CACHE"/}
  mkdir -p "$VMDIR/conf"
  containerd_toml /var/lib/docker/containerd /run/limitlab-node/containerd /run/limitlab-node/containerd/containerd.sock "$gdebs" /run/limitlab-node/cni >"$VMDIR/conf/containerd.toml"
  cni_conflist /var/lib/docker/cni "$VM_PODS" "$VMNET_HOST/32" >"$VMDIR/conf/10-limitlab.conflist"
  # cgroup v2: failCgroupV1 stays at its default, which refuses v1.
  kubelet_yaml "$VM_IP" /run/limitlab-node/containerd/containerd.sock "$g/ca.crt" "$(cpu_policy)" >"$VMDIR/conf/kubelet.yaml"
  cp "$KDATA/pki/ca.crt" "$VMDIR/ca.crt"
  sed -e "s#https://127.0.0.1:$API_PORT#https://$VMNET_HOST:$API_PORT#" -e "s#$KDATA/pki/ca.crt#$g/ca.crt#" \
    "$KDATA/pki/kubelet2.kubeconfig" >"$VMDIR/kubelet.kubeconfig"
  cp "$IMAGES" "$VMDIR/images.tar"
  cat >"$VMDIR/node.env" <<T
NODE=$NODE2
NODE_IP=$VM_IP
GATEWAY=$VM_GW
DEBS=$gdebs
KBIN=$gkbin
T
}

# own_netns PID: true once PID has a network namespace of its own.
own_netns() { [ "$(readlink "/proc/$1/ns/net")" != "$(readlink /proc/self/ns/net)" ]; }

# The namespace, its tap, and the pair; the routes go with the pair.
network() {
  start vmnet unshare --net -- sleep infinity
  local ns; ns=$(cat "$PIDS/vmnet.pid")
  until_ok 10 own_netns "$ns" || fail "no network namespace"
  ip link add llvm-h type veth peer name llvm-n netns "$ns"
  ip addr add "$VMNET_HOST/30" dev llvm-h && ip link set llvm-h up
  nsenter --target "$ns" --net -- sh -c "
    ip link set lo up &&
    ip addr add $VMNET_NS/30 dev llvm-n && ip link set llvm-n up &&
    ip tuntap add dev llvm-tap mode tap &&
    ip addr add $VM_GW/24 dev llvm-tap && ip link set llvm-tap up &&
    ip route add default via $VMNET_HOST &&
    ip route add $VM_PODS via $VM_IP &&
    echo 1 >/proc/sys/net/ipv4/ip_forward" || fail "the VM's network namespace"
  ip route add "${VM_GW%.*}.0/24" via "$VMNET_NS" dev llvm-h
  ip route add "$VM_PODS" via "$VMNET_NS" dev llvm-h
  start vm-api socat "TCP-LISTEN:$API_PORT,bind=$VMNET_HOST,reuseaddr,fork" "TCP:127.0.0.1:$API_PORT"
}

# boot KDIR: the VM's qemu (vm/qemu.sh), in the link's network namespace,
# its console in $LOGS/vm.log.
boot() {
  start vm nsenter --target "$(cat "$PIDS/vmnet.pid")" --net -- bash -c '. vm/qemu.sh; vm_qemu "$@"' vm "$1" 3G "" \
    "limitlab.guest=k8snode.sh limitlab.bfq_low_latency=0 limitlab.bfq_strict=1" \
    -virtfs "local,path=$VMDIR,mount_tag=out,security_model=none" \
    -virtfs "local,path=$CACHE,mount_tag=k8s,security_model=none,readonly=on,multidevs=remap" \
    -drive "file=$VMDIR/disk.img,if=virtio,format=raw,cache=none,aio=threads" \
    -netdev tap,id=n0,ifname=llvm-tap,script=no,downscript=no -device virtio-net-pci,netdev=n0
}

# wait_ready: until the VM's node is Ready; it fails if its qemu stops
# first (k8s/run.sh boots it again after a kernel panic), or after 600 s.
wait_ready() {
  local end=$(( $(date +%s) + 600 ))
  until node_ready "$NODE2"; do
    kill -0 "$(cat "$PIDS/vm.pid")" 2>/dev/null || fail "the VM stopped before $NODE2 was Ready"
    [ "$(date +%s)" -lt $end ] || fail "node $NODE2 was not Ready in 600 s"
    sleep 1
  done
}

up() {
  [ -f "$PIDS/kube-apiserver.pid" ] || fail "no test cluster: k8s/cluster.sh up first"
  [ -f "${IMAGES:-}" ] || fail "IMAGES must name the OCI archive to import"
  [ -f "$PIDS/vm.pid" ] && fail "the VM node is already up: k8s/vmnode.sh down"
  for tool in qemu-system-x86_64 socat mkfs.ext4; do command -v "$tool" >/dev/null || fail "needs $tool"; done
  local kdir t0; kdir=$(vm/kernel.sh); t0=$(date +%s.%N)
  rm -rf "$VMDIR"; mkdir -p "$VMDIR"; chmod 700 "$VMDIR"
  guest_config
  truncate -s 8G "$VMDIR/disk.img"
  mkfs.ext4 -q -F "$VMDIR/disk.img"
  network
  say "booting the VM node $NODE2 ($(basename "$kdir"), TCG, 2 vCPUs, $(vm_accel))"
  boot "$kdir"
  wait_ready
  say "VM node up in $(echo "$(date +%s.%N) - $t0" | bc) s: $NODE2 Ready, $(kubectl get node "$NODE2" -o 'jsonpath={.status.nodeInfo.kernelVersion}, {.status.nodeInfo.containerRuntimeVersion}')"
}

down() {
  [ -f "$PIDS/vm.pid" ] || [ -f "$PIDS/vmnet.pid" ] || { rm -rf "$VMDIR"; return 0; }
  kubectl delete pods --all-namespaces --field-selector "spec.nodeName=$NODE2" --wait=true --timeout=60s >/dev/null 2>&1 || true
  # The VM powers itself off once told; its qemu is stopped by PID after.
  [ -d "$VMDIR" ] && touch "$VMDIR/stop"
  local p; p=$(cat "$PIDS/vm.pid" 2>/dev/null || true)
  [ -n "$p" ] && for _ in $(seq 150); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
  stop vm
  # socat's children, one per connection, are in its session.
  p=$(cat "$PIDS/vm-api.pid" 2>/dev/null || true)
  stop vm-api
  [ -n "$p" ] && pkill -9 -s "$p" socat 2>/dev/null || true
  stop vmnet
  ip link show llvm-h >/dev/null 2>&1 && ip link del llvm-h
  kubectl delete node "$NODE2" --ignore-not-found >/dev/null 2>&1 || true
  rm -rf "$VMDIR"
  say "VM node stopped"
}

case "${1:-}" in
up) up ;;
down) down ;;
*) echo "usage: vmnode.sh up|down" >&2; exit 2 ;;
esac
