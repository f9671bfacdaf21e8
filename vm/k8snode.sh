#!/bin/bash
# Runs inside the cgroup v2 VM as a node of the test cluster (k8s/vmnode.sh
# boots it with limitlab.guest=k8snode.sh), chrooted into the host's root
# read-only over 9p. /mnt/out holds the node's configuration, its
# kubeconfig and the images; /mnt/k8s the host's cache of containerd,
# runc, the CNI plugins and kubelet. It brings up the VM's end of its
# link, runs containerd and kubelet in a cgroup of their own, and waits
# until the host asks it to stop (/mnt/out/stop).
set -u
out=/mnt/out
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
log() { echo "limitlab-node: $*"; }
. $out/node.env
export PATH=$KBIN:$DEBS/usr/bin:$DEBS/usr/sbin:$PATH

mkdir -p /mnt/k8s
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose k8s /mnt/k8s || { log "mount the binaries' cache failed"; exit 1; }
ip link set eth0 up && ip addr add "$NODE_IP/24" dev eth0 && ip route add default via "$GATEWAY" || { log "no network"; exit 1; }
# The VM's own kernel: the values kubelet insists on (protectKernelDefaults
# keeps it from writing them), and forwarding to the pods' bridge.
sysctl -qw vm.overcommit_memory=1 kernel.panic=10 kernel.panic_on_oops=1 net.ipv4.ip_forward=1

# containerd and kubelet in a cgroup of their own, as systemd would run
# them, beside the kubepods tree kubelet makes.
mkdir -p /sys/fs/cgroup/system /run/limitlab-node/cni
# kubelet keeps its state under /var/lib/kubelet, whatever its root dir
# says: /var/lib, the host's and read-only, is covered with a tmpfs, and
# the VM's disk mounted again under it.
mount -t tmpfs -o mode=0755 tmpfs /var/lib && mkdir -p /var/lib/docker /var/lib/kubelet &&
  mount -t ext4 /dev/vda /var/lib/docker && mkdir -p /var/lib/docker/kubelet /var/lib/docker/cni &&
  mount --bind /var/lib/docker/kubelet /var/lib/kubelet || { log "no /var/lib"; exit 1; }
echo $$ >/sys/fs/cgroup/system/cgroup.procs
cp $out/conf/10-limitlab.conflist /run/limitlab-node/cni/
sock=/run/limitlab-node/containerd/containerd.sock
containerd --config $out/conf/containerd.toml >$out/containerd.log 2>&1 &
for i in $(seq 1 120); do ctr --address $sock version >/dev/null 2>&1 && break; sleep 1; done
ctr --address $sock version >/dev/null 2>&1 || { log "containerd did not answer in 120 s"; tail -n 30 $out/containerd.log; exit 1; }
log "containerd up after ${i}s; importing the images"
ctr --address $sock -n k8s.io images import $out/images.tar >/dev/null || { log "importing the images failed"; exit 1; }
kubelet --config=$out/conf/kubelet.yaml --kubeconfig=$out/kubelet.kubeconfig \
  --hostname-override="$NODE" --node-ip="$NODE_IP" >$out/kubelet.log 2>&1 &
kl=$!
log "kubelet started as $NODE ($(kubelet --version))"
until [ -e $out/stop ]; do
  if ! kill -0 $kl 2>/dev/null; then
    log "kubelet exited"; tail -n 40 $out/kubelet.log; break
  fi
  sleep 1
done
kill $kl 2>/dev/null
log "done"
