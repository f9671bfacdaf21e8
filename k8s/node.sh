# Sourced by cluster.sh and vmnode.sh: the configuration files of a node,
# the same for the host's node (cgroup v1) and the VM's (v2), each with
# the paths it sees.

# containerd_toml ROOT STATE SOCK DEBS CNI_CONF: containerd's CRI with the
# workload image's pause, runc from DEBS, no image pulled.
containerd_toml() {
  local root=$1 state=$2 sock=$3 debs=$4 cni=$5
  cat <<T
version = 2
root = "$root"
state = "$state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[debug]
  address = "$state/debug.sock"
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$root/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/limitlab/pause:1"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  netns_mounts_under_state_dir = true
  tolerate_missing_hugetlb_controller = true
  # This machine's bounding set lacks CAP_SYS_RESOURCE: a negative
  # oom_score_adj is refused, and runc fails without saying why.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "$debs/usr/sbin/runc"
        Root = "$state/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$debs/usr/lib/cni"
    conf_dir = "$cni"
    max_conf_num = 1
T
}

# cni_conflist IPAM_DIR SUBNET ROUTE: the pods' bridge, without
# masquerading; pods reach each other and, by ROUTE, the host's end of
# the node's link, nothing else.
cni_conflist() {
  cat <<T
{"cniVersion": "0.4.0", "name": "limitlab-test", "plugins": [
  {"type": "bridge", "bridge": "llk8s0", "isGateway": true, "ipMasq": false, "hairpinMode": false,
   "ipam": {"type": "host-local", "dataDir": "$1", "ranges": [[{"subnet": "$2"}]],
     "routes": [{"dst": "$3"}]}}]}
T
}

# kubelet_yaml ADDRESS SOCK CA [EXTRA]: kubelet serves on the node's own
# address (the API server reaches it there for pod logs), authenticated,
# never anonymously.
kubelet_yaml() {
  cat <<T
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $1
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
containerRuntimeEndpoint: unix://$2
cgroupDriver: cgroupfs
cgroupsPerQOS: true
enforceNodeAllocatable: ["pods"]
failSwapOn: true
makeIPTablesUtilChains: false
protectKernelDefaults: true
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$3"}
authorization: {mode: Webhook}
clusterDomain: cluster.local
registerNode: true
${4:-}
T
}

# cpu_policy: kubelet's CPU manager lines for CPU_POLICY: with static, a
# tenth of a CPU kept for the system, which reserves a whole one, CPU 0,
# and leaves 1.9 allocatable.
cpu_policy() {
  [ "${CPU_POLICY:-none}" = static ] || return 0
  printf 'cpuManagerPolicy: static\nkubeReserved: {cpu: "100m"}\n'
}
