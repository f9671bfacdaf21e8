#!/usr/bin/env bash
# trixie.sh DIR PACKAGE...: Debian 13's packages, downloaded through a source
# list of their own and unpacked into DIR with dpkg-deb, never installed.
# This machine's apt sources and package lists stay as they are. Trixie's
# runc is removed from DIR: it needs GLIBC 2.38, and the shims must find
# bookworm's runc in PATH.
set -euo pipefail
dir=$1; shift
apt=$(mktemp -d); trap 'rm -rf "$apt"' EXIT
mkdir -p "$apt/lists/partial" "$apt/debs"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" >"$apt/sources.list"
opts=(-o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists="$apt/lists"
  -o Dir::Cache::Archives="$apt/debs" -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
apt-get "${opts[@]}" update -q >/dev/null
(cd "$apt/debs" && apt-get "${opts[@]}" download "$@" >/dev/null)
rm -rf "$dir.new"; mkdir -p "$dir.new"
for d in "$apt"/debs/*.deb; do dpkg-deb -x "$d" "$dir.new"; done
rm -f "$dir.new/usr/bin/runc" "$dir.new/usr/sbin/runc"
rm -rf "$dir"; mv "$dir.new" "$dir"
