#!/usr/bin/env bash
# docker26.sh up | down | fetch: Debian 13's Docker 26.1 and containerd 1.7,
# unpacked (trixie.sh) under ~/.cache/limitlab-engines and never installed,
# running beside this machine's own engine, which stays as it is:
#  - containerd with its own root, state and sockets, its CRI plugin off;
#  - dockerd with its own data root, exec root, pidfile and socket
#    ($D26_SOCK), under a cgroup parent of its own (/limitlab-d26), with no
#    bridge and no iptables rule (lanes need no network);
#  - the shims find bookworm's runc 1.1.5 in PATH (trixie's needs a newer
#    glibc than this machine's).
# Both are started with their PIDs kept and stopped by those PIDs; down
# removes what they left: their files and their cgroups.
set -euo pipefail
CACHE=${LIMITLAB_ENGINES_CACHE:-$HOME/.cache/limitlab-engines}
DIR=$CACHE/docker26.1-containerd1.7
RUN=/run/limitlab-d26
DATA=/var/lib/limitlab-d26
D26_SOCK=$RUN/docker.sock
PARENT=limitlab-d26
say() { echo "docker26: $*"; }
. "$(dirname "$0")/pids.sh"

# fetch: the unpacked tree, once, then cached.
fetch() {
  if [ ! -x "$DIR/usr/sbin/dockerd" ]; then
    say "unpacking Debian 13's docker.io and containerd into $DIR" >&2
    mkdir -p "$CACHE"
    bash "$(dirname "$0")/trixie.sh" "$DIR" docker.io containerd
  fi
}

up() {
  [ -e "$RUN/dockerd.pid" ] && { say "already running: $RUN (stop it with $0 down)" >&2; exit 1; }
  fetch
  command -v runc >/dev/null || { say "no runc in PATH: apt-get install -y runc" >&2; exit 1; }
  mkdir -p "$RUN" "$DATA"
  cat >"$RUN/containerd.toml" <<T
version = 2
root = "$DATA/containerd"
state = "$RUN/containerd"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$RUN/containerd.sock"
[ttrpc]
  address = "$RUN/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
T
  export PATH=$DIR/usr/bin:$DIR/usr/sbin:/usr/sbin:/usr/bin:/sbin:/bin
  setsid containerd --config "$RUN/containerd.toml" >"$RUN/containerd.log" 2>&1 </dev/null &
  echo $! >"$RUN/containerd.pid"
  for _ in $(seq 100); do [ -S "$RUN/containerd.sock" ] && break; sleep 0.1; done
  # Its own network namespace: a dockerd with --bridge=none deletes any
  # docker0 it sees, and this machine's own must stay.
  setsid unshare --net dockerd --containerd "$RUN/containerd.sock" --data-root "$DATA/docker" --exec-root "$RUN/exec" \
    --pidfile "$RUN/dockerd.pidfile" -H "unix://$D26_SOCK" --bridge=none --iptables=false --ip-masq=false \
    --cgroup-parent="$PARENT" >"$RUN/dockerd.log" 2>&1 </dev/null &
  echo $! >"$RUN/dockerd.pid"
  for _ in $(seq 300); do
    DOCKER_HOST=unix://$D26_SOCK docker version >/dev/null 2>&1 && break
    sleep 0.2
  done
  if ! DOCKER_HOST=unix://$D26_SOCK docker version >/dev/null 2>&1; then
    say "dockerd 26 did not answer in 60 s" >&2; tail -n 20 "$RUN/dockerd.log" "$RUN/containerd.log" >&2; down; exit 1
  fi
  say "$(DOCKER_HOST=unix://$D26_SOCK docker version --format 'Docker {{.Server.Version}}, API {{.Server.APIVersion}}') at unix://$D26_SOCK"
}

# stop NAME: TERM, then KILL after 15 s, by the PID it was started with.
stop() { stop_pid "$RUN/$1.pid" 15 >/dev/null; }

down() {
  [ -d "$RUN" ] || { say "not running"; return 0; }
  if [ -S "$D26_SOCK" ]; then
    ids=$(DOCKER_HOST=unix://$D26_SOCK docker ps -aq 2>/dev/null || true)
    [ -n "$ids" ] && DOCKER_HOST=unix://$D26_SOCK docker rm -f $ids >/dev/null 2>&1 || true
  fi
  stop dockerd
  # The shims of containers dockerd lost, by their containerd's PID.
  if [ -f "$RUN/containerd.pid" ]; then
    for p in $(pgrep -f "containerd-shim-runc-v2 .*-address $RUN/containerd.sock" || true); do kill -9 "$p" 2>/dev/null || true; done
    stop containerd
  fi
  for m in $(awk -v r="$RUN" -v d="$DATA" '$2 ~ "^(" r "|" d ")" {print $2}' /proc/mounts | sort -r); do umount "$m" 2>/dev/null || umount -l "$m" || true; done
  for s in /sys/fs/cgroup/*/"$PARENT"; do
    [ -d "$s" ] && find "$s" -depth -type d -exec rmdir {} \; 2>/dev/null
    [ -d "$s" ] && say "WARNING: $s is still there" >&2
  done
  rm -rf "$RUN" "$DATA"
  say "stopped"
}

case "${1:-}" in
up) up ;;
down) down ;;
sock) echo "unix://$D26_SOCK" ;;
fetch) fetch && echo "$DIR" ;;
*) echo "usage: docker26.sh up|down|sock|fetch" >&2; exit 2 ;;
esac
