#!/usr/bin/env bash
# scripts/vm/fetch.sh ARCH - make sure the machine's CI cache holds a Debian kernel and a
# static busybox for ARCH (x86_64, arm64, arm: 32-bit ARM, Debian armhf, s390x or riscv64),
# fetching them once with `apt-get download` from Debian 12's main component only
# (scripts/fetch/deb.sh: a private apt for that one suite, retried, one line on failure).
# riscv64 is not a Debian 12 architecture: its kernel and busybox come from Debian 13's
# (trixie) main, on the same mirror. Prints the entry's directory.
#
# Cache layout: $STEERD_VM_CACHE/ARCH if set, else <cache>/vm/ARCH-KEY, with <cache> as
# scripts/fetch/cache.sh gives it and KEY a hash of this script and the fetch library, so
# a change to either fetches anew. The entry is sealed (cache.sh): a truncated or
# half-written file is noticed and the entry fetched again.
#   kernel      bzImage (linux-image-*-amd64's /boot/vmlinuz-*)
#   vmlinux     amd64: the same kernel uncompressed (ELF with a PVH entry note) if it
#               could be extracted: QEMU boots it directly, skipping ~3 s of in-guest
#               xz decompression under TCG
#               (arm64's kernel is Image, shipped uncompressed; armhf's the zImage of
#               linux-image-armmp-lpae: LPAE, more than 4 GiB of physical address space,
#               as QEMU's virt machine places its devices; s390x's is bootable by
#               qemu-system-s390x -kernel; riscv64's Image is booted by QEMU's OpenSBI)
#   busybox     busybox-static's /bin/busybox for that architecture
#   version     the kernel package name
#   modules/    the kernel's virtio-net driver for the NIC tests: virtio_pci and
#               virtio_net with every module they depend on, and `order`, their
#               names dependencies first (what insmod needs; the package ships no
#               modules.dep). A module the package does not hold is taken to be
#               built into the kernel.
#   console/    s390x and riscv64: the same for the virtio console (virtio_console and its
#               transport: virtio_ccw, virtio_pci), the channels of those guests
#
# Concurrent callers are serialised with flock.
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
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../fetch/cache.sh"
. "$here/../fetch/deb.sh"
if [ -n "${STEERD_VM_CACHE:-}" ]; then
    dir=$STEERD_VM_CACHE/$deb_arch
else
    dir=$(cache_root)/vm/$deb_arch-$(cache_key "$0" "$here/../fetch/deb.sh" "$here/../fetch/cache.sh")
fi
mkdir -p "$(dirname "$dir")"
complete() {
    cache_valid "$dir" && [ -s "$dir/kernel" ] && [ -x "$dir/busybox" ] && [ -s "$dir/modules/order" ] &&
        case $deb_arch in s390x | riscv64) [ -e "$dir/console/order" ] ;; esac
}
complete && { echo "$dir"; exit 0; }

exec 8>"$dir.lock"
flock 8
complete && { echo "$dir"; exit 0; }   # another caller fetched it while we waited
[ ! -e "$dir" ] || echo "fetch.sh: $dir is incomplete or changed since it was made: fetching it again" >&2
rm -rf "$dir"
mkdir -p "$dir"

for tool in apt-get apt-cache dpkg-deb tar sha256sum; do
    command -v $tool >/dev/null || { echo "fetch.sh: $tool not found" >&2; exit 1; }
done

apt_state=$dir/apt
deb_init "$apt_state" "$deb_arch" "${suite:-bookworm}" main
echo "fetch.sh: fetching a $deb_arch kernel and busybox-static from $(deb_where) (kept in $dir)" >&2
deb_update || exit 1
kpkg=$(apt-cache "${DEB_APT[@]}" depends "linux-image-$flavour" |
    awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
[ -n "$kpkg" ] || { echo "fetch.sh: linux-image-$flavour names no kernel package in $(deb_where)" >&2; exit 1; }
deb_download "$apt_state/dl" "$kpkg" busybox-static || exit 1

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
cache_seal "$dir"
[ -n "${STEERD_VM_CACHE:-}" ] || cache_prune "$(dirname "$dir")" "$deb_arch-" "$dir"
echo "fetch.sh: $deb_arch ready: $kpkg" >&2
echo "$dir"
