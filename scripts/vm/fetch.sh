#!/usr/bin/env bash
# scripts/vm/fetch.sh ARCH - make sure the VM cache holds a Debian kernel and a static
# busybox for ARCH (x86_64, arm64, arm: 32-bit ARM, Debian armhf, s390x or riscv64),
# fetching them once with `apt-get download`. riscv64 is not a Debian 12 architecture: its
# kernel and busybox come from Debian 13 (trixie), on the same deb.debian.org.
#
# Cache layout ($STEERD_VM_CACHE, default <repo>/vm-cache):
#   amd64/kernel    bzImage (linux-image-*-amd64's /boot/vmlinuz-*)
#   amd64/vmlinux   the same kernel uncompressed (ELF with a PVH entry note) if it
#                   could be extracted: QEMU boots it directly, skipping ~3 s of
#                   in-guest xz decompression under TCG
#   arm64/kernel    Image (Debian's arm64 package ships it uncompressed)
#   armhf/kernel    zImage of linux-image-armmp-lpae (LPAE: more than 4 GiB of physical
#                   address space, as QEMU's virt machine places its devices)
#   s390x/kernel    linux-image-s390x's image (bootable by qemu-system-s390x -kernel)
#   riscv64/kernel  trixie's linux-image-riscv64 Image (booted by QEMU's built-in OpenSBI)
#   */busybox       busybox-static's /bin/busybox for that architecture
#   */version       the kernel package name
#   */modules/      the kernel's virtio-net driver for the NIC tests: virtio_pci and
#                   virtio_net with every module they depend on, and `order`, their
#                   names dependencies first (what insmod needs; the package ships no
#                   modules.dep). A module the package does not hold is taken to be
#                   built into the kernel.
#   s390x/console/, riscv64/console/
#                   the same for the virtio console (virtio_console and its transport:
#                   virtio_ccw, virtio_pci), the channels of those guests
#
# apt runs with a private state directory per architecture (its own lists, cache and an
# empty dpkg status) and APT::Architecture set for those commands only, so the host's
# dpkg architecture list and package lists are never changed. Concurrent callers are
# serialised with flock. Prints nothing on success but what it fetched.
set -euo pipefail

arch=${1:?usage: fetch.sh x86_64|arm64|arm|s390x|riscv64}
suite=""
case $arch in
    x86_64 | amd64) deb_arch=amd64 flavour=amd64 ;;
    arm64 | aarch64) deb_arch=arm64 flavour=arm64 ;;
    arm | armhf | armv7) deb_arch=armhf flavour=armmp-lpae ;;
    s390x) deb_arch=s390x flavour=s390x ;;
    riscv64) deb_arch=riscv64 flavour=riscv64 suite=trixie ;;
    *) echo "fetch.sh: unknown architecture '$arch' (x86_64, arm64, arm, s390x or riscv64)" >&2; exit 2 ;;
esac
repo=$(cd "$(dirname "$0")/../.." && pwd)
dir=${STEERD_VM_CACHE:-$repo/vm-cache}/$deb_arch
mkdir -p "$dir"

complete() {
    [ -s "$dir/kernel" ] && [ -x "$dir/busybox" ] && [ -s "$dir/modules/order" ] &&
        case $deb_arch in s390x | riscv64) [ -e "$dir/console/order" ] ;; esac
}
complete && exit 0

exec 8>"$dir/.lock"
flock 8
complete && exit 0   # another caller fetched it while we waited

for tool in apt-get apt-cache dpkg-deb tar; do
    command -v $tool >/dev/null || { echo "fetch.sh: $tool not found" >&2; exit 1; }
done

apt_state=$dir/apt
mkdir -p "$apt_state/lists/partial" "$apt_state/archives/partial" "$apt_state/dl"
: >"$apt_state/status"
apt_opts=(-q -o "Dir::State=$apt_state" -o "Dir::State::Lists=$apt_state/lists"
    -o "Dir::State::status=$apt_state/status" -o "Dir::Cache=$apt_state"
    -o "Dir::Cache::Archives=$apt_state/archives"
    -o "APT::Architecture=$deb_arch" -o "APT::Architectures::=$deb_arch"
    -o Acquire::Languages=none)
[ "$(id -u)" != 0 ] || apt_opts+=(-o APT::Sandbox::User=root)
if [ -n "$suite" ]; then
    # A release other than the host's: a sources list of its own (signed by the same
    # Debian archive keys) in place of the host's.
    printf 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian %s main\n' \
        "$suite" >"$apt_state/sources.list"
    apt_opts+=(-o "Dir::Etc::SourceList=$apt_state/sources.list" -o "Dir::Etc::SourceParts=$apt_state/no-parts")
fi

echo "fetch.sh: fetching a $deb_arch kernel and busybox-static with apt-get (kept in $dir)" >&2
apt-get "${apt_opts[@]}" update >"$apt_state/update.log" 2>&1 || {
    tail -n 5 "$apt_state/update.log" >&2
    echo "fetch.sh: apt-get update for $deb_arch failed" >&2
    exit 1
}
kpkg=$(apt-cache "${apt_opts[@]}" depends "linux-image-$flavour" |
    awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
[ -n "$kpkg" ] || { echo "fetch.sh: linux-image-$flavour names no kernel package" >&2; exit 1; }
rm -f "$apt_state"/dl/*.deb
(cd "$apt_state/dl" && apt-get "${apt_opts[@]}" download "$kpkg" busybox-static) \
    >"$apt_state/download.log" 2>&1 || {
    tail -n 5 "$apt_state/download.log" >&2
    echo "fetch.sh: apt-get download $kpkg busybox-static failed" >&2
    exit 1
}

# Only the kernel file, busybox and the virtio modules below are kept; the rest of the .debs
# is not.
dpkg-deb --fsys-tarfile "$apt_state"/dl/linux-image-*.deb |
    tar -xO --wildcards './boot/vmlinu[xz]-*' >"$dir/kernel.new"
dpkg-deb --fsys-tarfile "$apt_state"/dl/busybox-static_*.deb |
    tar -xO --wildcards './*bin/busybox' >"$dir/busybox.new"
chmod 755 "$dir/busybox.new"

# The NIC modules. Each module names what it needs in its .modinfo section
# (`depends=a,b`, NUL-terminated strings); dependencies are copied and listed first.
# Debian 13 keeps them under /usr/lib/modules, xz-compressed (.ko.xz): they are unpacked
# here, so the guest's busybox insmod gets plain .ko files. A directory that holds nothing
# in this kernel (drivers/s390 but on s390x) is no error; a missing virtio_net is, below.
tree=$apt_state/tree
mkdir -p "$tree"
dpkg-deb --fsys-tarfile "$apt_state"/dl/linux-image-*.deb >"$apt_state/kernel.tar"
lib=./lib
tar -tf "$apt_state/kernel.tar" | grep '^\./usr/lib/modules/' >/dev/null && lib=./usr/lib
tar -x -C "$tree" -f "$apt_state/kernel.tar" --wildcards --no-wildcards-match-slash \
    "$lib/modules/*/kernel/drivers/virtio/*.ko*" "$lib/modules/*/kernel/drivers/net/*.ko*" \
    "$lib/modules/*/kernel/net/core/*.ko*" "$lib/modules/*/kernel/drivers/char/*.ko*" \
    "$lib/modules/*/kernel/drivers/s390/virtio/*.ko*" 2>/dev/null || true
find "$tree" -name '*.ko.xz' -exec xz -dq {} +
rm -f "$apt_state/kernel.tar"
# modules_into DIR NAME...: the modules NAME and what they depend on, into DIR.new, with
# DIR.new/order; then DIR.new replaces DIR.
modules_into() {
    local to=$1 order=" "
    shift
    rm -rf "$to.new"
    mkdir -p "$to.new"
    add_module() {
        local name=$1 file dep
        case $order in *" $name "*) return 0 ;; esac
        file=$(find "$tree" \( -name "$name.ko" -o -name "${name//_/-}.ko" \) | head -n 1)
        [ -n "$file" ] || return 0
        for dep in $(tr '\0' '\n' <"$file" | sed -n 's/^depends=//p' | tr , ' '); do
            add_module "$dep"
        done
        cp "$file" "$to.new/$name.ko"
        order="$order$name "
    }
    for name in "$@"; do add_module "$name"; done
    echo $order | tr ' ' '\n' >"$to.new/order"
    rm -rf "$to"
    mv "$to.new" "$to"
}
modules_into "$dir/modules" virtio_pci virtio_net
[ -e "$dir/modules/virtio_net.ko" ] || {
    echo "fetch.sh: $kpkg holds no virtio_net module" >&2
    exit 1
}
# s390x and riscv64 guests talk to the host over virtio consoles (scripts/vm/run.sh).
case $deb_arch in
    s390x) modules_into "$dir/console" virtio_ccw virtio_console ;;
    riscv64) modules_into "$dir/console" virtio_pci virtio_console ;;
esac
[ -s "$dir/kernel.new" ] && [ -s "$dir/busybox.new" ] || {
    echo "fetch.sh: the downloaded packages hold no kernel or no busybox" >&2
    exit 1
}

# x86: Debian compresses the bzImage payload with xz. The payload starts at the first xz
# stream magic (FD 37 7A 58 5A 00); what follows the stream is ignored by xz -dc's
# complaint. Keep the result only if it is an ELF file (the PVH-bootable vmlinux).
if [ $deb_arch = amd64 ] && command -v xz >/dev/null; then
    at=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$dir/kernel.new" | head -n 1 | cut -d: -f1 || true)
    if [ -n "$at" ]; then
        tail -c +$((at + 1)) "$dir/kernel.new" | xz -dcq >"$dir/vmlinux.new" 2>/dev/null || true
        if [ "$(head -c 4 "$dir/vmlinux.new" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ]; then
            mv -f "$dir/vmlinux.new" "$dir/vmlinux"
        fi
        rm -f "$dir/vmlinux.new"
    fi
fi
echo "$kpkg" >"$dir/version"
mv -f "$dir/busybox.new" "$dir/busybox"
mv -f "$dir/kernel.new" "$dir/kernel"
rm -rf "$apt_state"
echo "fetch.sh: $deb_arch ready: $kpkg" >&2
