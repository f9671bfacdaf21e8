#!/usr/bin/env bash
# make test-docker26: the engine suite's core against Debian 13's Docker
# 26.1 and containerd 1.7, started beside this machine's Docker 20.10
# (docker26.sh) and always stopped on the way out: hardening read back,
# every limit's cgroup file, both stats sources, one lab of each family to
# its verdict, a live update, stopping and reaping. It fails if a test
# fails or if the engine leaves a container, a process or a cgroup.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH CGO_ENABLED=0
finish() {
  rc=$?
  bash engines/docker26.sh down || rc=1
  if ls -d /sys/fs/cgroup/*/limitlab-d26 2>/dev/null | grep -q .; then
    echo "docker26: FAIL: cgroups left under limitlab-d26" >&2; rc=1
  fi
  exit $rc
}
trap finish EXIT
bash engines/docker26.sh up
export DOCKER_HOST=$(bash engines/docker26.sh sock)
# The engine's own: its files, counters and stats against the kernel's.
go test -count=1 -p 1 -v -run '^(TestKernelFilesReadBack|TestCountersAgainstKernelFiles|TestEngineStatsAgainstCgroupFiles|TestIOCapabilitiesAreProbed|TestCgroupFiles)$' ./internal/engine
# Runs: hardening, the stats fallback, a live update, stop and reap.
go test -count=1 -p 1 -v -run '^(TestContainerIsHardened|TestEngineStatsFallback|TestLiveLimitChange|TestLiveMemoryChangeInNextSample|TestStopKillsAndRemoves|TestReapRemovesLeftovers|TestMemoryLab)$' ./internal/runner
# The runtimes' matrix, with its image imported into this engine.
images/runtimes/build.sh "$DOCKER_HOST"
go test -count=1 -p 1 -v -run '^TestRuntimeCPUsLab$' ./internal/runner
# One lab of each family: CPU, block IO (memory above).
go test -count=1 -p 1 -v -run '^(TestCPULabs|TestIOLabs)$/^(cpus-ladder|io-write-bps)$' ./internal/runner
left=$(docker ps -aq --filter label=io.limitlab.run | wc -l)
[ "$left" = 0 ] || { echo "docker26: FAIL: $left labelled containers left" >&2; exit 1; }
echo "docker26: the core suite passed on $(docker version --format 'Docker {{.Server.Version}} (API {{.Server.APIVersion}})')"
