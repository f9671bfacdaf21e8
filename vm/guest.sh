#!/bin/bash
# Runs inside the cgroup v2 test VM, chrooted into the host's root (read-only
# over 9p), with the checkout on /mnt/repo and the results share on
# /mnt/out. It starts the host's own dockerd
# against the VM's kernel, then runs each test binary that vm/run.sh built
# into /mnt/out/bin, with the tests named beside it, from its package's folder.
set -u
repo=$1
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root
log() { echo "limitlab-vm: $*"; }

# dockerd runs in a cgroup of its own, as systemd runs docker.service: the
# engine decides what the kernel supports (swap limits among them) from the
# files of its own cgroup, and the root's has none of them.
mkdir -p /sys/fs/cgroup/dockerd
echo $$ >/sys/fs/cgroup/dockerd/cgroup.procs
log "starting dockerd"
dockerd --iptables=false --ip-masq=false --bridge=none --storage-driver=overlay2 >/var/log/dockerd.log 2>&1 &
for i in $(seq 1 120); do
  docker info >/dev/null 2>&1 && break
  sleep 1
done
if ! docker info >/dev/null 2>&1; then
  log "dockerd did not answer within 120 s"
  tail -n 40 /var/log/dockerd.log
  cp /var/log/dockerd.log /mnt/out/ 2>/dev/null
  exit 1
fi
log "dockerd up after ${i}s: $(docker info --format 'Docker {{.ServerVersion}}, cgroup v{{.CgroupVersion}}, {{.Driver}}, {{.CgroupDriver}}, {{.NCPU}} CPUs')"
docker info --format '{{.CgroupVersion}}' >/mnt/out/cgroup-version
# The runtime-cpus lab's image, from the root filesystem vm/run.sh made.
if [ -f /mnt/out/runtimes.tar ]; then
  t0=$(date +%s)
  docker import --change 'USER 65534:65534' /mnt/out/runtimes.tar limitlab-runtimes-base:latest >/dev/null &&
    log "the runtimes image imported in $(( $(date +%s) - t0 )) s"
fi

export LIMITLAB_TEST_BINARY=/mnt/out/bin/limitlab LIMITLAB_EXPECT_CGROUP=2 LIMITLAB_V2_OUT=/mnt/out
# Under emulation fixed CPU work runs about six times slower: the labs do a
# quarter of it, and judge the same ratios (enginetest.scaleCPUWork).
export LIMITLAB_TEST_SCALE=${LIMITLAB_TEST_SCALE:-0.25}
# Emulated CPU time is diluted by the host's scheduling of the vCPU
# threads: the CPU-time verdicts are judged and logged, not required to
# hold (enginetest.CheckVerdict); block IO verdicts must hold.
export LIMITLAB_TEST_EMULATED_CPU=1
# LIMITLAB_VM_SCRIPT (vm/run.sh) runs a script of one's own in the VM
# instead, to explore it.
if [ -f /mnt/out/script ]; then
  log "running the script"
  bash /mnt/out/script 2>&1 | tee /mnt/out/script.log
fi
for t in /mnt/out/bin/*.test; do
  [ -f /mnt/out/script ] && break
  pkg=$(basename "$t" .test)
  dir=$(cat "/mnt/out/bin/$pkg.dir")
  run=$(cat "/mnt/out/bin/$pkg.run")
  log "running $pkg: $run"
  (cd "$repo/$dir" && "$t" -test.v -test.count=1 -test.timeout=60m -test.run "$run") 2>&1 | tee "/mnt/out/$pkg.log"
  echo "${PIPESTATUS[0]}" >"/mnt/out/$pkg.rc"
  log "$pkg exited $(cat "/mnt/out/$pkg.rc")"
done
left=$(docker ps -aq --filter label=io.limitlab.run | wc -l)
echo "$left" >/mnt/out/left
log "containers left on the VM's engine: $left"
kill %1 2>/dev/null
wait
cp /var/log/dockerd.log /mnt/out/ 2>/dev/null

# Docker 26.1 and containerd 1.7 (Debian 13's, from the results share,
# vm/run.sh), on the same disk, in a cgroup of their own: the core tests
# named in each binary's .d26 file run against it.
d26=/mnt/out/d26
if [ -x "$d26/usr/sbin/dockerd" ] && [ ! -f /mnt/out/script ]; then
  mkdir -p /sys/fs/cgroup/dockerd26 /run/d26 /var/lib/docker/d26
  echo $$ >/sys/fs/cgroup/dockerd26/cgroup.procs
  cat >/run/d26/containerd.toml <<T
version = 2
root = "/var/lib/docker/d26/containerd"
state = "/run/d26/containerd"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "/run/d26/containerd.sock"
[ttrpc]
  address = "/run/d26/containerd.sock.ttrpc"
T
  PATH=$d26/usr/bin:$d26/usr/sbin:$PATH containerd --config /run/d26/containerd.toml >/var/log/containerd26.log 2>&1 &
  c26=$!
  PATH=$d26/usr/bin:$d26/usr/sbin:$PATH dockerd --containerd /run/d26/containerd.sock --data-root /var/lib/docker/d26/docker \
    --exec-root /run/d26/exec --pidfile /run/d26/dockerd.pid -H unix:///run/d26/docker.sock \
    --iptables=false --ip-masq=false --bridge=none --storage-driver=overlay2 >/var/log/dockerd26.log 2>&1 &
  dk26=$!
  export DOCKER_HOST=unix:///run/d26/docker.sock
  for i in $(seq 1 120); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  if docker info >/dev/null 2>&1; then
    docker version --format 'Docker {{.Server.Version}} (API {{.Server.APIVersion}})' >/mnt/out/d26-version
    log "dockerd 26 up after ${i}s: $(docker info --format 'Docker {{.ServerVersion}}, cgroup v{{.CgroupVersion}}, {{.Driver}}, {{.CgroupDriver}}, containerd {{.ContainerdCommit.ID}}')"
    for f in /mnt/out/bin/*.d26; do
      pkg=$(basename "$f" .d26)
      dir=$(cat "/mnt/out/bin/$pkg.dir")
      log "running $pkg on Docker 26: $(cat "$f")"
      (cd "$repo/$dir" && "/mnt/out/bin/$pkg.test" -test.v -test.count=1 -test.timeout=30m -test.run "$(cat "$f")") 2>&1 | tee "/mnt/out/$pkg-d26.log"
      echo "${PIPESTATUS[0]}" >"/mnt/out/$pkg-d26.rc"
    done
    docker ps -aq --filter label=io.limitlab.run | wc -l >/mnt/out/left-d26
  else
    log "dockerd 26 did not answer within 120 s"
    tail -n 40 /var/log/dockerd26.log /var/log/containerd26.log
  fi
  kill "$dk26" 2>/dev/null
  wait "$dk26"
  kill "$c26" 2>/dev/null
  wait
  cp /var/log/dockerd26.log /var/log/containerd26.log /mnt/out/ 2>/dev/null
fi
log "done"
