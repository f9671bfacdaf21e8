#!/usr/bin/env bash
# Builds (once, then cached) what the test cluster runs: the Kubernetes
# binaries from the Go module proxy through a wrapper module, and Debian's
# etcd, runc and CNI plugins and Debian 13's containerd 1.7 unpacked, never
# installed.
set -euo pipefail
. "$(dirname "$0")/env.sh"
mkdir -p "$CACHE"

if [ ! -x "$DEBS/usr/bin/etcd" ] || [ ! -x "$DEBS/usr/bin/containerd" ]; then
  say "unpacking Debian 12's etcd-server, runc and CNI plugins, and Debian 13's containerd 1.7"
  w=$(mktemp -d); trap 'rm -rf "$w"' EXIT
  # A fresh machine may have no package lists yet.
  pkgs="etcd-server runc containernetworking-plugins"
  (cd "$w" && { apt-get download $pkgs >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null && apt-get download $pkgs >/dev/null; }; })
  bash "$(dirname "$0")/../engines/trixie.sh" "$w/trixie" containerd
  mkdir -p "$DEBS.new"
  for d in "$w"/*.deb; do dpkg-deb -x "$d" "$DEBS.new"; done
  cp -a "$w/trixie/." "$DEBS.new/"
  rm -rf "$DEBS"; mv "$DEBS.new" "$DEBS"
fi

cmds="kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl"
missing=0
for c in $cmds; do [ -x "$KBIN/$c" ] || missing=1; done
[ $missing = 0 ] && { say "Kubernetes $K8S_VERSION binaries cached in $KBIN"; exit 0; }

# k8s.io/kubernetes refers to its staging modules (k8s.io/api, client-go, …)
# as v0.0.0 => ./staging: the wrapper replaces each with its release, v0.X.Y.
mod=$CACHE/mod-$K8S_VERSION
mkdir -p "$mod"
export GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN=local
(
  cd "$mod"
  upstream=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
  staging=$(sed -n 's#^\t\(k8s\.io/[a-z0-9-]*\) => \./staging/.*#\1#p' "$upstream")
  {
    echo "module limitlab.local/k8s"
    grep -E '^(go|godebug) ' "$upstream"
    echo "require k8s.io/kubernetes $K8S_VERSION"
    awk '/^require \(/{f=1;next} f&&/^\)/{f=0} f' "$upstream" | grep -v ' v0\.0\.0$' | sed 's#// indirect##; s#^#require #'
    for m in $staging; do echo "replace $m => $m v0.${K8S_VERSION#v1.}"; done
  } > go.mod
  minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  ld="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  mkdir -p "$KBIN.new"
  for c in $cmds; do
    s=$(date +%s)
    say "building $c $K8S_VERSION (the first build takes minutes)"
    nice -n 19 go build -trimpath -ldflags "$ld" -o "$KBIN.new/$c" "k8s.io/kubernetes/cmd/$c"
    say "built $c in $(( $(date +%s) - s )) s"
  done
  rm -rf "$KBIN"; mv "$KBIN.new" "$KBIN"
)
