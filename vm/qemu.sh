# vm/qemu.sh (sourced): the one way both VMs start and the one retry of a
# kernel panic, for the VM of make test-v2 (vm/run.sh) and the test
# cluster's second node (k8s/vmnode.sh).
#
# Debian's kernel (vm/kernel.sh) runs under qemu's TCG with two vCPUs.
# Under TCG it has oopsed on a stale breakpoint while patching its own code
# (int3 in sched_clock_cpu while booting, in dequeue_entities and
# pick_task_fair once a run's first CPU quota came; 2026-12-06): in two of
# three boots of the cluster's node with a qemu thread per vCPU, and twice
# in the test-v2 VM's. So the default is the two vCPUs taking turns on one
# thread of qemu's (thread=single), and both VMs retry a panic the same
# way (vm_once_more_after_panic). A caller that measured the cost of the
# default too high for what it runs names its own in VM_ACCEL, and says
# why (vm/run.sh); LIMITLAB_VM_ACCEL overrides both, for both VMs.
VM_ACCEL_DEFAULT='-accel tcg,thread=single'

# vm_accel: what the VM boots with.
vm_accel() { echo "${LIMITLAB_VM_ACCEL:-${VM_ACCEL:-$VM_ACCEL_DEFAULT}}"; }

# vm_qemu KDIR MEMORY CONSOLE APPEND [QEMU ARGS...]: replaces the shell
# (call it in a shell of its own) with qemu in the foreground, booting KDIR's kernel and initramfs with two vCPUs and
# MEMORY, no display and no reboot (a panic ends it, panic=-1), this
# machine's root (mount tag host) and the repository (repo) read-only over
# 9p. The console is on standard output and, unless CONSOLE is empty, kept
# in CONSOLE whole when qemu exits. APPEND is added to the kernel's command
# line: the guest's own switches.
vm_qemu() {
  local kdir=$1 mem=$2 console=$3 append=$4 repo
  shift 4
  repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  local chardev=stdio,id=con
  [ -z "$console" ] || chardev="$chardev,logfile=$console"
  # shellcheck disable=SC2046 # the accel switch is words on purpose
  exec qemu-system-x86_64 $(vm_accel) -cpu max -smp 2 -m "$mem" \
    -nographic -no-reboot -monitor none \
    -chardev "$chardev" -serial chardev:con \
    -kernel "$kdir/vmlinuz" -initrd "$kdir/initramfs.cpio.gz" \
    -append "console=ttyS0 panic=-1 loglevel=4 $append" \
    -virtfs local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap \
    -virtfs "local,path=$repo,mount_tag=repo,security_model=none,readonly=on,multidevs=remap" \
    "$@" </dev/null
}

# vm_panicked CONSOLE: true when the console shows a kernel panic.
vm_panicked() { [ -f "$1" ] && grep -q 'Kernel panic' "$1"; }

# vm_once_more_after_panic PREFIX CONSOLE RESET CMD...: runs CMD. When it
# fails and CONSOLE shows a kernel panic, the console's last lines are
# shown and it is kept as CONSOLE.panicked, RESET runs (it clears what the
# first VM left), and CMD runs once more on a VM booted again. Only a
# panic is retried, and only once; CMD's status is returned.
vm_once_more_after_panic() {
  local prefix=$1 console=$2 reset=$3 rc=0
  shift 3
  "$@" || rc=$?
  [ "$rc" != 0 ] && vm_panicked "$console" || return "$rc"
  echo "$prefix: the VM's kernel panicked; its console's last lines (kept as $console.panicked):" >&2
  tail -n 40 "$console" | sed "s/^/$prefix:   /" >&2
  cp "$console" "$console.panicked"
  $reset
  echo "$prefix: once more, on the VM booted again" >&2
  "$@"
}
