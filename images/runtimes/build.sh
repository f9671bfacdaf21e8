#!/usr/bin/env bash
# build.sh [DOCKER_HOST...] | build.sh --rootfs: the runtimes image (limitlab-runtimes-base),
# which the runtime-cpus lab runs: Debian 12's JDK 17 (a JRE), Node.js
# and Python, with a probe for each (Probe.java, probe.js, probe.py in
# /opt/limitlab), made from Debian's packages with mmdebstrap. Nothing is
# pulled from an image registry.
#  - The root filesystem is cached under ~/.cache/limitlab-runtimes, named
#    by a digest of this folder, and made again only when it changes.
#  - Java's probe is compiled in the chroot with the JDK, which is then
#    removed: the image keeps the JRE.
#  - It is imported into each engine named (the local one by default) as
#    limitlab-runtimes-base:DIGEST, tagged :latest; an engine that has that
#    digest already is left as it is. The server adds its own workload
#    binary on top (internal/engine/runtimes.go).
# --rootfs makes the root filesystem if need be and prints its path,
# importing it nowhere (vm/run.sh hands it to the VM's engine).
# Debian's sources are this machine's (LIMITLAB_RUNTIMES_SOURCES names
# another sources file).
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
cache=${LIMITLAB_RUNTIMES_CACHE:-$HOME/.cache/limitlab-runtimes}
sources=${LIMITLAB_RUNTIMES_SOURCES:-/etc/apt/sources.list.d/debian.sources}
digest=$(cat "$dir"/build.sh "$dir"/Probe.java "$dir"/probe.js "$dir"/probe.py | sha256sum | cut -c1-16)
rootfs=$cache/rootfs-$digest.tar

command -v mmdebstrap >/dev/null || { echo "runtimes: needs mmdebstrap (apt-get install mmdebstrap)" >&2; exit 1; }
if [ ! -s "$rootfs" ]; then
  mkdir -p "$cache"
  t0=$(date +%s)
  echo "runtimes: making the root filesystem with mmdebstrap ($sources)" >&2
  # The man pages are left out, but openjdk's alternatives need man1.
  mmdebstrap --quiet --variant=essential --include=openjdk-17-jdk-headless,nodejs,python3 \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-include=/usr/share/man/man1' \
    --essential-hook='mkdir -p "$1"/usr/share/man/man1' \
    --customize-hook="mkdir -p \"\$1\"/opt/limitlab && cp '$dir/Probe.java' '$dir/probe.js' '$dir/probe.py' \"\$1\"/opt/limitlab/" \
    --customize-hook='chroot "$1" javac -d /opt/limitlab /opt/limitlab/Probe.java' \
    --customize-hook='chroot "$1" dpkg --purge openjdk-17-jdk-headless' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
    bookworm "$cache/making-$digest.tar" "$sources" >/dev/null
  mv "$cache/making-$digest.tar" "$rootfs"
  # Older digests' root filesystems go.
  find "$cache" -name '*.tar' ! -name "rootfs-$digest.tar" -delete
  echo "runtimes: root filesystem made in $(( $(date +%s) - t0 )) s ($(du -h "$rootfs" | cut -f1))" >&2
fi

if [ "${1:-}" = --rootfs ]; then
  echo "$rootfs"
  exit 0
fi
[ $# -gt 0 ] || set -- ""
for host in "$@"; do
  d=(docker); [ -z "$host" ] || d=(docker -H "$host")
  if ! "${d[@]}" image inspect "limitlab-runtimes-base:$digest" >/dev/null 2>&1; then
    "${d[@]}" import --change 'USER 65534:65534' "$rootfs" "limitlab-runtimes-base:$digest" >/dev/null
  fi
  "${d[@]}" tag "limitlab-runtimes-base:$digest" limitlab-runtimes-base:latest
  echo "runtimes: limitlab-runtimes-base:$digest on ${host:-the local engine}"
done
