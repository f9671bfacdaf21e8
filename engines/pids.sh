# Sourced by the scripts that start daemons of their own (k8s/cluster.sh,
# engines/docker26.sh): each is started with its PID kept in a file, and
# stopped by that PID alone.

# stop_pid FILE [SECONDS]: TERM to the process whose PID FILE holds, then
# KILL after SECONDS (10) if it is still there; FILE is removed. It prints
# the PID it stopped, nothing if there was none.
stop_pid() {
  local f=$1 wait=${2:-10} p
  [ -f "$f" ] || return 0
  p=$(cat "$f")
  if kill -0 "$p" 2>/dev/null; then
    kill "$p" 2>/dev/null || true
    for _ in $(seq $((wait * 5))); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$p" 2>/dev/null || true
    echo "$p"
  fi
  rm -f "$f"
}
