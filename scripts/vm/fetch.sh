#!/usr/bin/env bash
# scripts/vm/fetch.sh ARCH - make sure the VM cache holds a Debian kernel and a static
# busybox for ARCH (x86_64, arm64 or arm: 32-bit ARM, Debian armhf), fetching them once
# with `apt-get download`.
#
# Cache layout ($STEERD_VM_CACHE, default <repo>/vm-cache):
#   amd64/kernel    bzImage (linux-image-*-amd64's /boot/vmlinuz-*)
#   amd64/vmlinux   the same kernel uncompressed (ELF with a PVH entry note) if it
#                   could be extracted: QEMU boots it directly, skipping ~3 s of
#                   in-guest xz decompression under TCG
#   arm64/kernel    Image (Debian's arm64 package ships it uncompressed)
#   armhf/kernel    zImage of linux-image-armmp-lpae (LPAE: more than 4 GiB of physical
#                   address space, as QEMU's virt machine places its devices)
#   */busybox       busybox-static's /bin/busybox for that architecture
#   */version       the kernel package name
#   */modules/      the kernel's virtio-net driver for the NIC tests: virtio_pci and
#                   virtio_net with every module they depend on, and `order`, their
#                   names dependencies first (what insmod needs; the package ships no
#                   modules.dep). A module the package does not hold is taken to be
#                   built into the kernel.
#
# apt runs with a private state directory per architecture (its own lists, cache and an
# empty dpkg status) and APT::Architecture set for those commands only, so the host's
# dpkg architecture list and package lists are never changed. Concurrent callers are
# serialised with flock. Prints nothing on success but what it fetched.
set -euo pipefail

arch=${1:?usage: fetch.sh x86_64|arm64|arm}
case $arch in
    x86_64 | amd64) deb_arch=amd64 flavour=amd64 ;;
    arm64 | aarch64) deb_arch=arm64 flavour=arm64 ;;
    arm | armhf | armv7) deb_arch=armhf flavour=armmp-lpae ;;
    *) echo "fetch.sh: unknown architecture '$arch' (x86_64, arm64 or arm)" >&2; exit 2 ;;
esac
repo=$(cd "$(dirname "$0")/../.." && pwd)
dir=${STEERD_VM_CACHE:-$repo/vm-cache}/$deb_arch
mkdir -p "$dir"

complete() { [ -s "$dir/kernel" ] && [ -x "$dir/busybox" ] && [ -s "$dir/modules/order" ]; }
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

# Only the kernel file, busybox and the NIC modules below are kept; the rest of the .debs
# is not.
dpkg-deb --fsys-tarfile "$apt_state"/dl/linux-image-*.deb |
    tar -xO --wildcards './boot/vmlinuz-*' >"$dir/kernel.new"
dpkg-deb --fsys-tarfile "$apt_state"/dl/busybox-static_*.deb |
    tar -xO ./bin/busybox >"$dir/busybox.new"
chmod 755 "$dir/busybox.new"

# The NIC modules. Each module names what it needs in its .modinfo section
# (`depends=a,b`, NUL-terminated strings); dependencies are copied and listed first.
tree=$apt_state/tree
mkdir -p "$tree"
dpkg-deb --fsys-tarfile "$apt_state"/dl/linux-image-*.deb |
    tar -x -C "$tree" --wildcards --no-wildcards-match-slash \
        './lib/modules/*/kernel/drivers/virtio/*.ko' './lib/modules/*/kernel/drivers/net/*.ko' \
        './lib/modules/*/kernel/net/core/*.ko'
rm -rf "$dir/modules.new"
mkdir -p "$dir/modules.new"
order=" "
add_module() {
    local name=$1 file dep
    case $order in *" $name "*) return 0 ;; esac
    file=$(find "$tree" \( -name "$name.ko" -o -name "${name//_/-}.ko" \) | head -n 1)
    [ -n "$file" ] || return 0
    for dep in $(tr '\0' '\n' <"$file" | sed -n 's/^depends=//p' | tr , ' '); do
        add_module "$dep"
    done
    cp "$file" "$dir/modules.new/$name.ko"
    order="$order$name "
}
add_module virtio_pci
add_module virtio_net
[ -e "$dir/modules.new/virtio_net.ko" ] || {
    echo "fetch.sh: $kpkg holds no virtio_net module" >&2
    exit 1
}
echo $order | tr ' ' '\n' >"$dir/modules.new/order"
rm -rf "$dir/modules"
mv "$dir/modules.new" "$dir/modules"
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
