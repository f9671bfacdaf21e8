#!/usr/bin/env bash
# What the tests must leave of this machine as they found it: its network
# links (docker0 among them) and the cgroups at the top of each
# hierarchy. `hostcheck.sh save FILE` notes them; `hostcheck.sh compare
# FILE` fails, saying what changed, if they differ. The machine engine's
# own cgroup (docker), which it makes at its first container and keeps,
# is not counted.
set -euo pipefail

state() {
  ip -o link show | awk -F': ' '{print "link " $2}' | sed 's/@.*//' | sort
  for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
    find "$h" -mindepth 1 -maxdepth 1 -type d ! -name docker 2>/dev/null | sed 's/^/cgroup /'
  done | sort -u
}

case "${1:-}" in
save) state >"$2" ;;
compare)
  if ! diff <(cat "$2") <(state) >"$2.diff"; then
    echo "hostcheck: FAIL: the machine is not as the tests found it (< before, > after):" >&2
    cat "$2.diff" >&2
    exit 1
  fi
  echo "hostcheck: links and cgroups as they were"
  ;;
*) echo "usage: hostcheck.sh save|compare FILE" >&2; exit 2 ;;
esac
