#!/usr/bin/env bash
# scripts/vm/run.sh - boot a throwaway QEMU guest with a chosen multi-socket NUMA layout,
# run one shell snippet in it with the given static files, and carry back its stdout,
# stderr and exit status.
#
#   scripts/vm/run.sh [--arch x86_64|arm64|arm|s390x|riscv64] [--preset NAME] [--timeout SECS]
#                     [--tcg multi|single] [--steerd PATH] [--file PATH]...
#                     [--nic TAP,QUEUES[,NODE]] [--netns NAME] [--stdout-file PATH]
#                     [--verbose] [--keep] SNIPPET
#
# The snippet runs as `sh -c SNIPPET` (busybox) in /job, where every --file is copied
# (and the --steerd binary, as /job/steerd) and which is first on PATH. Exit status: the
# snippet's own; 124 when the guest ran past --timeout; 125 when it stopped without
# reporting a status (kernel panic, QEMU error); 2 for bad usage or a missing tool.
#
# Guest serial lines: console (kernel log; shown with --verbose or when the guest fails),
# then stdout, stderr and the exit status, each on its own port written raw, so nothing
# is translated and closing the port at the end drains it. x86 has four 16550 UARTs
# (ttyS0 console, ttyS1-3 the channels). arm64's virt machine has one PL011 (ttyAMA0,
# the console), so a pci-serial-4x card supplies ttyS0-3 and ttyS1-3 are used the same way.
# s390x has no UART: the console is the SCLP line-mode console (ttysclp0) and the channels
# are three virtio consoles (hvc0-2) on a virtio-serial-ccw device. riscv64's virt machine
# has one 16550 (ttyS0, the console); its channels are hvc0-2 on virtio-serial-pci.
#
# --nic TAP,QUEUES[,NODE] gives the guest a multi-queue virtio-net NIC: QUEUES queue
# pairs on the host's existing multi-queue tap device TAP (vhost off, one MSI-X vector
# per queue and direction plus config). With NODE (x86_64 only) it sits behind a PCI
# expander bridge whose ACPI proximity is NUMA node NODE, so the guest's /sys reports the
# node, local_cpulist and msi_irqs of a real PCI device; without NODE, on the root bus.
# The driver's modules (fetch.sh) are shipped in /lib/modules/nic with `order`;
# guest.sh's nic_up loads them. --netns runs QEMU inside that network namespace (where
# TAP lives). --stdout-file writes the guest's stdout to PATH as it arrives, for a host
# that reacts to it while the guest runs.
#
# Presets (the layouts steerd is for; vCPUs are host threads under TCG, so timing inside
# means nothing, only behaviour):
#   x86_64 kunpeng920-2x2  8 CPUs: 2 sockets x 2 dies x 2 cores, a NUMA node per die,
#                          Kunpeng 920 SLIT 10/12 (same socket)/20,22,24 (other socket)
#   x86_64 xeon-2s-smt     8 CPUs: 2 sockets x 2 cores x 2 threads, a node per socket,
#                          SLIT 10/21; siblings are adjacent (0-1), QEMU's numbering
#   x86_64 numa4-smt32     32 CPUs: 2 sockets x 2 dies x 4 cores x 2 threads, 4 nodes,
#                          Kunpeng SLIT
#   arm64  kunpeng920-2x2  16 CPUs: 2 sockets x 2 nodes, 4-core clusters, Kunpeng SLIT
#   arm64  kunpeng920-32   32 CPUs: as above with two 4-core clusters per node
#   arm    virt-4          4 CPUs of 32-bit ARM (Cortex-A15, LPAE kernel), one socket; no
#                          NUMA (32-bit ARM kernels have none: no node directory)
#   s390x  ccw-4           4 CPUs of big-endian s390x (s390-ccw-virtio, Debian 12 kernel)
#   riscv64 virt-4         4 CPUs of RISC-V (virt, QEMU's built-in OpenSBI, Debian 13
#                          kernel: riscv64 is not a Debian 12 architecture)
# --tcg single runs every vCPU on one host thread: no two vCPUs ever run at once, but a
# 16-vCPU arm64 guest boots about twice as fast (the kernel's boot-time code patching
# broadcasts TLB flushes that multi-threaded TCG must synchronise over every vCPU).
# Environment: STEERD_VM_CACHE (kernel and busybox cache, see fetch.sh).
set -euo pipefail

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0" >&2; exit 2; }
fail() { echo "vm/run.sh: $*" >&2; exit 2; }

arch=x86_64 preset=kunpeng920-2x2 timeout=120 verbose=0 keep=0 mem=1024 tcg=multi
files=() steerd="" nic="" netns="" stdout_file=""
while [ $# -gt 0 ]; do
    case $1 in
        --arch) arch=${2:?}; shift 2 ;;
        --preset) preset=${2:?}; shift 2 ;;
        --timeout) timeout=${2:?}; shift 2 ;;
        --mem) mem=${2:?}; shift 2 ;;
        --tcg) tcg=${2:?}; shift 2 ;;
        --file) files+=("${2:?}"); shift 2 ;;
        --steerd) steerd=${2:?}; files+=("$2"); shift 2 ;;
        --nic) nic=${2:?}; shift 2 ;;
        --netns) netns=${2:?}; shift 2 ;;
        --stdout-file) stdout_file=${2:?}; shift 2 ;;
        --verbose) verbose=1; shift ;;
        --keep) keep=1; shift ;;
        -h | --help) usage ;;
        --) shift; break ;;
        -*) fail "unknown option $1" ;;
        *) break ;;
    esac
done
[ $# = 1 ] || usage
snippet=$1
[[ $timeout =~ ^[0-9]+$ && $mem =~ ^[0-9]+$ ]] || fail "--timeout and --mem take integers"
[[ $tcg == multi || $tcg == single ]] || fail "--tcg takes multi or single"
here=$(cd "$(dirname "$0")" && pwd)

case $arch in
    x86_64 | amd64) arch=x86_64 qemu=qemu-system-x86_64 elf_machine=3e00 ;;
    arm64 | aarch64) arch=arm64 qemu=qemu-system-aarch64 elf_machine=b700 ;;
    arm | armhf | armv7) arch=arm qemu=qemu-system-arm elf_machine=2800 ;;
    s390x) qemu=qemu-system-s390x elf_machine=0016 ;;
    riscv64) qemu=qemu-system-riscv64 elf_machine=f300 ;;
    *) fail "--arch must be x86_64, arm64, arm, s390x or riscv64" ;;
esac
command -v $qemu >/dev/null ||
    fail "$qemu not found (Debian: qemu-system-x86 / qemu-system-arm / qemu-system-misc)"
command -v cpio >/dev/null || fail "cpio not found"

# Every ELF shipped must be static and built for the guest: e_machine at offset 18, and
# no PT_INTERP program header (type 3) among the first program headers.
for f in "${files[@]}"; do
    [ -f "$f" ] || fail "no such file: $f"
    [ "$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ] || continue
    [ "$(od -An -tx1 -j 18 -N 2 "$f" | tr -d ' \n')" = $elf_machine ] ||
        fail "$f is not built for $arch"
    if command -v readelf >/dev/null && readelf -lW "$f" | grep -q 'program interpreter'; then
        fail "$f is dynamically linked; the guest has no libraries (build it with scripts/static.sh)"
    fi
done

cache=$("$here/fetch.sh" $arch) || fail "no guest kernel for $arch (scripts/vm/fetch.sh, above)"
kernel=$cache/kernel
[ $arch = arm64 ] || [ ! -s "$cache/vmlinux" ] || kernel=$cache/vmlinux

# ---------------------------------------------------------------- layout
# QEMU numbers CPUs socket, then die/cluster, then core, then thread. Memory is split
# evenly over the nodes; node i owns `per` consecutive CPUs.
topo=()
nodes() { # nodes COUNT CPUS_PER_NODE
    local i m=$((mem / $1))
    for ((i = 0; i < $1; i++)); do
        topo+=(-object "memory-backend-ram,id=m$i,size=${m}M"
            -numa "node,nodeid=$i,cpus=$((i * $2))-$((i * $2 + $2 - 1)),memdev=m$i")
    done
}
distances() { # SRC DST VALUE triples; QEMU fills in the symmetric entry
    while [ $# -ge 3 ]; do topo+=(-numa "dist,src=$1,dst=$2,val=$3"); shift 3; done
}
kunpeng_slit() { distances 0 1 12 0 2 20 0 3 22 1 2 22 1 3 24 2 3 12; }
case $arch:$preset in
    x86_64:kunpeng920-2x2) topo=(-smp 8,sockets=2,dies=2,cores=2,threads=1); nodes 4 2; kunpeng_slit ;;
    x86_64:xeon-2s-smt) topo=(-smp 8,sockets=2,dies=1,cores=2,threads=2); nodes 2 4; distances 0 1 21 ;;
    x86_64:numa4-smt32) topo=(-smp 32,sockets=2,dies=2,cores=4,threads=2); nodes 4 8; kunpeng_slit ;;
    arm64:kunpeng920-2x2) topo=(-smp 16,sockets=2,clusters=2,cores=4,threads=1); nodes 4 4; kunpeng_slit ;;
    arm64:kunpeng920-32) topo=(-smp 32,sockets=2,clusters=4,cores=4,threads=1); nodes 4 8; kunpeng_slit ;;
    arm:virt-4 | s390x:ccw-4 | riscv64:virt-4) topo=(-smp 4) ;;
    *) fail "no preset '$preset' for $arch" ;;
esac

# ---------------------------------------------------------------- NIC
nic_args=()
if [ -n "$nic" ]; then
    IFS=, read -r tap queues nic_node <<<"$nic"
    [[ -n $tap && $queues =~ ^[0-9]+$ && $nic_node =~ ^[0-9]*$ ]] || fail "--nic takes TAP,QUEUES[,NODE]"
    [ -s "$cache/modules/order" ] || fail "no NIC modules in $cache/modules (scripts/vm/fetch.sh)"
    # arm64 virt booted with -kernel describes PCI by device tree, which gives the host
    # bridge no NUMA node; an expander bridge (pxb-pcie) needs ACPI, i.e. UEFI firmware.
    [[ $arch == x86_64 || -z $nic_node ]] || fail "--nic: no NUMA node for an arm64 guest's NIC (device tree)"
    nic_bus=""
    if [ -n "$nic_node" ]; then
        # pxb: a second PCI root bus (number 32) with its own _PXM; the NIC sits in slot 1
        # of it (QEMU docs/pci_expander_bridge.txt).
        nic_args=(-device "pxb,id=nicbus,bus_nr=32,numa_node=$nic_node,bus=pci.0")
        nic_bus=bus=nicbus,addr=0x1,
    fi
    nic_args+=(-netdev "tap,id=nic0,ifname=$tap,script=no,downscript=no,queues=$queues,vhost=off"
        -device "virtio-net-pci,netdev=nic0,${nic_bus}mq=on,vectors=$((2 * queues + 2)),mac=52:54:00:5e:00:02")
fi

# ---------------------------------------------------------------- initramfs
work=$(mktemp -d "${TMPDIR:-/tmp}/steerd-vm.XXXXXX")
qemu_pid=""
finish() {
    [ -z "$qemu_pid" ] || kill "$qemu_pid" 2>/dev/null || true
    if [ $keep = 1 ]; then echo "vm/run.sh: kept $work" >&2; else rm -rf "$work"; fi
}
trap finish EXIT
trap 'exit 130' INT TERM

root=$work/root
mkdir -p "$root"/{bin,dev,proc,sys,tmp,run,job,etc,root}
cp "$cache/busybox" "$root/bin/busybox"
for f in "${files[@]}"; do install -m 755 "$f" "$root/job/"; done
[ -z "$steerd" ] || install -m 755 "$steerd" "$root/job/steerd"
[ -z "$nic" ] || { mkdir -p "$root/lib/modules" && cp -r "$cache/modules" "$root/lib/modules/nic"; }
printf '%s\n' "$snippet" >"$root/job/.snippet"
echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
echo 'root:x:0:' >"$root/etc/group"
# The guest devices the snippet's stdout and stderr and its status go to; the virtio
# console's driver (fetch.sh) goes along where the kernel has it as a module.
case $arch in
    s390x | riscv64)
        echo 'out=/dev/hvc0 err=/dev/hvc1 status=/dev/hvc2'
        mkdir -p "$root/lib/modules" && cp -r "$cache/console" "$root/lib/modules/console"
        ;;
    *) echo 'out=/dev/ttyS1 err=/dev/ttyS2 status=/dev/ttyS3' ;;
esac >"$root/etc/channels"
# PID 1: busybox installs its own applet links, so the host never has to run a foreign
# busybox to list them.
cat >"$root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/job:/bin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mkdir -p /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup
ip link set lo up
. /etc/channels
if [ -d /lib/modules/console ]; then
    for m in $(cat /lib/modules/console/order); do insmod /lib/modules/console/$m.ko; done
    i=0
    while [ ! -e $status ] && [ $i -lt 100 ]; do usleep 50000; i=$((i + 1)); done
fi
for port in $out $err $status; do stty -F $port raw -echo; done
cd /job
sh /job/.snippet </dev/null >$out 2>$err
echo "STEERD_VM_STATUS=$?" >$status
sync
poweroff -f
INIT
chmod 755 "$root/init"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$work/initramfs"

# ---------------------------------------------------------------- boot
for ch in console stdout stderr status; do : >"$work/$ch"; done
out=$work/stdout
[ -z "$stdout_file" ] || { : >"$stdout_file" && out=$(realpath "$stdout_file"); }
flags="quiet loglevel=3 panic=-1 oops=panic random.trust_cpu=on rdinit=/init"
cmd=($qemu -nodefaults -no-user-config -display none -no-reboot -m "$mem" "${topo[@]}"
    -kernel "$kernel" -initrd "$work/initramfs" "${nic_args[@]}")
[ -z "$netns" ] || cmd=(ip netns exec "$netns" "${cmd[@]}")
if [ $arch = x86_64 ]; then
    # vendor=GenuineIntel: QEMU then exposes CPUID leaf 0x1F and the guest sees the dies.
    # tsc=reliable skips the per-CPU TSC sync check (slow under TCG).
    cmd+=(-machine pc -accel tcg,thread=$tcg -cpu max,vendor=GenuineIntel
        -append "console=ttyS0 tsc=reliable $flags")
    cmd+=(-serial "file:$work/console" -serial "file:$out" -serial "file:$work/stderr"
        -serial "file:$work/status")
elif [ $arch = s390x ] || [ $arch = riscv64 ]; then
    if [ $arch = s390x ]; then
        cmd+=(-machine s390-ccw-virtio -accel tcg,thread=$tcg -cpu max
            -append "console=ttysclp0 $flags"
            -chardev "file,id=console,path=$work/console" -device sclpconsole,chardev=console
            -device virtio-serial-ccw,id=channels)
    else
        # -bios default: QEMU's own OpenSBI, which starts the kernel in supervisor mode.
        cmd+=(-machine virt -accel tcg,thread=$tcg -cpu rv64 -bios default
            -append "console=ttyS0 $flags" -serial "file:$work/console"
            -device virtio-serial-pci,id=channels)
    fi
    cmd+=(-chardev "file,id=stdout,path=$out")
    for ch in stderr status; do cmd+=(-chardev "file,id=$ch,path=$work/$ch"); done
    for ch in stdout stderr status; do cmd+=(-device "virtconsole,bus=channels.0,chardev=$ch"); done
else
    if [ $arch = arm64 ]; then
        # GICv3: GICv2 stops at 8 CPUs. pauth=off: pointer authentication emulation is slow.
        cmd+=(-machine virt,gic-version=3 -accel tcg,thread=$tcg -cpu max,pauth=off)
    else
        # 32-bit: GICv2 (up to 8 CPUs); highmem: the LPAE kernel reaches the devices QEMU
        # places above 4 GiB.
        cmd+=(-machine virt,highmem=on -accel tcg,thread=$tcg -cpu cortex-a15)
    fi
    cmd+=(-append "console=ttyAMA0 $flags" -serial "file:$work/console"
        -chardev null,id=unused)
    cmd+=(-chardev "file,id=stdout,path=$out")
    for ch in stderr status; do cmd+=(-chardev "file,id=$ch,path=$work/$ch"); done
    cmd+=(-device pci-serial-4x,chardev1=unused,chardev2=stdout,chardev3=stderr,chardev4=status)
fi

start=$(date +%s%N)
timeout "$timeout" "${cmd[@]}" </dev/null >"$work/qemu.log" 2>&1 &
qemu_pid=$!
wait $qemu_pid && qemu_rc=0 || qemu_rc=$?
qemu_pid=""
elapsed_ms=$((($(date +%s%N) - start) / 1000000))

cat "$out"
cat "$work/stderr" >&2
status=$(sed -n 's/^STEERD_VM_STATUS=\([0-9]*\).*/\1/p' "$work/status" | tail -n 1)
[ $verbose = 0 ] || {
    tr -d '\r' <"$work/console" >&2
    echo "vm/run.sh: $arch $preset: ${elapsed_ms} ms, status ${status:-none}" >&2
}
[ -z "$status" ] || exit "$status"
if [ $qemu_rc = 124 ]; then
    echo "vm/run.sh: $arch $preset: guest still running after ${timeout}s; console tail:" >&2
    rc=124
else
    echo "vm/run.sh: $arch $preset: guest stopped (qemu status $qemu_rc) without a status; console tail:" >&2
    rc=125
fi
[ $verbose = 1 ] || tr -d '\r' <"$work/console" | tail -n 20 >&2
cat "$work/qemu.log" >&2
exit $rc
