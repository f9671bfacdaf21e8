#!/bin/bash
# Builds what the cgroup v2 test VM boots, into a cache that later runs
# reuse: Debian's kernel (the version $LIMITLAB_VM_KERNEL, linux-image-6.12-amd64
# by default, depends on: Debian 12 serves 6.12 beside its own 6.1;
# downloaded with apt and unpacked, never installed) and an initramfs of
# busybox-static, the modules the VM needs, and vm/init. Nothing prebuilt
# comes from anywhere but Debian's packages. Prints the cache folder.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${LIMITLAB_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/limitlab-vm}
mkdir -p "$cache"
log() { echo "vm: $*" >&2; }

meta=${LIMITLAB_VM_KERNEL:-linux-image-6.12-amd64}
pkg=$(apt-cache depends "$meta" 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -n 1)
if [ -z "$pkg" ]; then
  log "apt knows no $meta yet: apt-get update"
  apt-get update >&2
  pkg=$(apt-cache depends "$meta" | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -n 1)
fi
[ -n "$pkg" ] || { log "no kernel package: $meta depends on nothing apt can name"; exit 1; }
kver=${pkg#linux-image-}
kdir=$cache/$kver
if [ ! -f "$kdir/vmlinuz" ]; then
  log "downloading $pkg"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && apt-get download "$pkg" >&2) || { apt-get update >&2 && (cd "$tmp" && apt-get download "$pkg" >&2); }
  dpkg-deb -x "$tmp"/"$pkg"_*.deb "$tmp/root"
  depmod -b "$tmp/root" "$kver"
  rm -rf "$kdir.part" && mkdir -p "$kdir.part"
  cp "$tmp/root/boot/vmlinuz-$kver" "$kdir.part/vmlinuz"
  mkdir -p "$kdir.part/lib/modules"
  cp -a "$tmp/root/lib/modules/$kver" "$kdir.part/lib/modules/"
  rm -rf "$kdir" && mv "$kdir.part" "$kdir"
fi

# The initramfs is rebuilt whenever vm/init or busybox is newer than it.
initrd=$kdir/initramfs.cpio.gz
if [ ! -f "$initrd" ] || [ "$here/init" -nt "$initrd" ] || [ "$here/kernel.sh" -nt "$initrd" ] || [ /bin/busybox -nt "$initrd" ]; then
  dpkg -s busybox-static >/dev/null 2>&1 || { log "needs a static busybox: apt-get install busybox-static"; exit 1; }
  log "building the initramfs for $kver"
  stage=$(mktemp -d)
  mkdir -p "$stage"/{bin,proc,sys,dev,newroot,modules}
  cp /bin/busybox "$stage/bin/busybox"
  cp "$here/init" "$stage/init"
  chmod +x "$stage/init"
  # Each module once, in the order modprobe would load them.
  # virtio_net, bridge and veth: the VM as a Kubernetes node (k8s/vmnode.sh),
  # its pods on a CNI bridge.
  for m in virtio_pci virtio_blk 9pnet_virtio 9p overlay ext4 bfq virtio_net bridge veth; do
    modprobe --show-depends -d "$kdir" -S "$kver" "$m"
  done | awk '$1 == "insmod" && !seen[$2]++ {print $2}' >"$stage/paths"
  : >"$stage/modules.order"
  # 6.12's modules are xz-compressed, which busybox's insmod hands the
  # kernel as they are first ("Invalid ELF header magic") before it
  # decompresses them itself: they go in decompressed.
  while read -r ko; do
    name=$(basename "$ko" .xz)
    case $ko in
    *.xz) xz -dc "$ko" >"$stage/modules/$name" ;;
    *) cp "$ko" "$stage/modules/" ;;
    esac
    echo "$name" >>"$stage/modules.order"
  done <"$stage/paths"
  rm "$stage/paths"
  (cd "$stage" && find . | cpio -o -H newc --quiet | gzip -1) >"$initrd.part"
  mv "$initrd.part" "$initrd"
  rm -rf "$stage"
fi
echo "$kdir"
