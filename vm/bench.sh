#!/bin/bash
# make bench-v2: the v1/v2 table in docs/benchmarks.md. The tests of the
# v2 suite (vm/suite.sh) run on this host, cgroup v1, then in the cgroup v2
# VM (vm/run.sh); each "figure:" line they log becomes a row, the two
# columns side by side. The VM emulates its CPUs (TCG), so its column is
# marked so: ratios compare, absolute times do not.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
doc=${1:-docs/benchmarks.md}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. vm/suite.sh

echo "bench-v2: the suite on this host (cgroup v1)"
for pkg in engine runner; do
  re=V2_$(echo "$pkg" | tr a-z A-Z)_TESTS
  go test -count=1 -v -timeout 30m -run "${!re}" "./internal/$pkg" >"$tmp/v1-$pkg.log" 2>&1 || echo "bench-v2: some v1 tests of $pkg failed (their figures are still listed)"
done
grep -ah 'figure: ' "$tmp"/v1-*.log | sed 's/.*figure: //' >"$tmp/v1.txt" || true
host=$(docker version --format 'Docker {{.Server.Version}}' 2>/dev/null || echo Docker)

echo "bench-v2: the suite in the VM (cgroup v2)"
LIMITLAB_V2_FIGURES="$tmp/v2.txt" vm/run.sh || echo "bench-v2: some v2 tests failed (their figures are still listed)"
[ -s "$tmp/v2.txt" ] || { echo "bench-v2: the VM reported no figures" >&2; exit 1; }

{
  echo "Measured by \`make bench-v2\` on $(date -u +%Y-%m-%d): the same tests on this host ($host, cgroup v1, $(uname -r)) and in the VM (cgroup v2, Debian's kernel $(basename "$(ls -d "${LIMITLAB_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/limitlab-vm}"/*/ | head -n 1)"), the same dockerd, BFQ on its disk). **The v2 column is measured under emulation** (qemu TCG, 2 vCPUs on this host's 2 cores, the labs' fixed CPU work scaled to a quarter): compare ratios and shares, not times."
  echo
  echo "| Figure | cgroup v1 (this host) | cgroup v2 (VM, emulated) |"
  echo "| --- | --- | --- |"
  awk -F' [|] ' '
    FNR == NR { v1[$1] = $2; if (!($1 in seen)) { seen[$1] = 1; order[n++] = $1 }; next }
    { v2[$1] = $2; if (!($1 in seen)) { seen[$1] = 1; order[n++] = $1 } }
    END { for (i = 0; i < n; i++) { k = order[i]; a = (k in v1) ? v1[k] : "—"; b = (k in v2) ? v2[k] : "—"; print "| " k " | " a " | " b " |" } }
  ' "$tmp/v1.txt" "$tmp/v2.txt"
} >"$tmp/table.md"

begin='<!-- v1v2:begin -->'
end='<!-- v1v2:end -->'
grep -q "$begin" "$doc" || printf '\n## cgroup v1 and v2 side by side (`make bench-v2`)\n\n%s\n%s\n' "$begin" "$end" >>"$doc"
awk -v begin="$begin" -v end="$end" -v table="$tmp/table.md" '
  $0 == begin { print; while ((getline line < table) > 0) print line; skip = 1; next }
  $0 == end { skip = 0 }
  !skip { print }
' "$doc" >"$tmp/doc" && cp "$tmp/doc" "$doc"
echo "bench-v2: wrote the table into $doc"
