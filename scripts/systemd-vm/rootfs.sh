#!/usr/bin/env bash
# scripts/systemd-vm/rootfs.sh [CACHE_DIR] - make sure CACHE_DIR (default: systemd-vm in the
# machine's CI cache, scripts/fetch/cache.sh) holds a bootable Debian 12 (bookworm) guest
# with a real systemd for tests/vm/systemd.rs, and print its directory.
#
# The packages come from bookworm's main component alone, from the mirror the host's
# sources name (scripts/fetch/deb.sh's deb_init says which; STEERD_DEB_MIRROR overrides):
# mmdebstrap is given that one line, so neither the host's other suites nor mmdebstrap's
# default security and updates suites can fail the build. It is tried 3 times.
#
# The directory (CACHE_DIR/rootfs-KEY, KEY a hash of this script and the fetch library, so
# a change to the package list or to the hook below builds a new one and removes the old;
# sealed, so a truncated image is noticed and built again) holds:
#   root.img    ext4 image of an `mmdebstrap --variant=minbase` tree (`mkfs.ext4 -d`, no
#               loop mount); QEMU opens it with snapshot=on, so it never changes
#   vmlinuz     the tree's own kernel (linux-image-amd64) and
#   initrd.img  its initramfs (initramfs-tools, which has virtio_blk for root=/dev/vda)
#
# The tree also holds steerd-test.service: after multi-user.target it mounts the second
# disk (/dev/vdb, made by the test) on /test and runs /test/checks.sh, then powers the
# guest off whatever the script's outcome (SuccessAction=, FailureAction=).
#
# Needs root (mmdebstrap --mode=root) and Debian's package registry; about 60 s once.
# Concurrent callers are serialised with flock.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../fetch/cache.sh"
. "$here/../fetch/deb.sh"
cache=${1:-$(cache_root)/systemd-vm}
packages=systemd,systemd-sysv,dbus,curl,procps,iproute2,linux-image-amd64
key=$(cache_key "$0" "$here/../fetch/deb.sh" "$here/../fetch/cache.sh")
out=$cache/rootfs-$key
mkdir -p "$cache"

complete() {
    [ -s "$out/root.img" ] && [ -s "$out/vmlinuz" ] && [ -s "$out/initrd.img" ] && cache_valid "$out"
}
if complete; then echo "$out"; exit 0; fi

exec 8>"$cache/.lock"
flock 8
if complete; then echo "$out"; exit 0; fi

for tool in mmdebstrap mkfs.ext4; do
    command -v "$tool" >/dev/null || { echo "rootfs.sh: $tool is not installed" >&2; exit 3; }
done

work=$cache/build-$key
rm -rf "$work" "$out"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

# deb_init names the mirror and the keyring; its private apt state is not used further.
deb_init "$work/apt" amd64 bookworm main
source_line="deb [signed-by=${STEERD_DEB_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}] $DEB_MIRROR bookworm main"
debootstrap_once() {
    rm -rf "$work/tree"
    mmdebstrap --quiet --variant=minbase --include="$packages" --mode=root \
        --aptopt='Acquire::Retries "2"' bookworm "$work/tree" "$source_line"
}
echo "rootfs.sh: mmdebstrap bookworm ($packages) from $(deb_where)" >&2
retry "mmdebstrap bookworm from $(deb_where)" "$work/mmdebstrap.log" debootstrap_once || {
    echo "rootfs.sh: mmdebstrap bookworm ($packages) from $(deb_where) failed: $(deb_words "$work/mmdebstrap.log")" >&2
    exit 1
}

tree=$work/tree
mkdir -p "$tree/test"
echo steerd-guest >"$tree/etc/hostname"
cat >"$tree/etc/systemd/system/steerd-test.service" <<'UNIT'
[Unit]
Description=steerd checks from /dev/vdb (tests/vm/systemd.rs)
After=multi-user.target
SuccessAction=poweroff-force
FailureAction=poweroff-force

[Service]
Type=oneshot
ExecStartPre=/usr/bin/mount /dev/vdb /test
ExecStart=/bin/sh /test/checks.sh
ExecStopPost=-/usr/bin/umount /test
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=15min

[Install]
WantedBy=multi-user.target
UNIT
mkdir -p "$tree/etc/systemd/system/multi-user.target.wants"
ln -sf ../steerd-test.service "$tree/etc/systemd/system/multi-user.target.wants/steerd-test.service"
# Nothing logs in: no getty on the serial console (the checks' lines go there).
ln -sf /dev/null "$tree/etc/systemd/system/serial-getty@ttyS0.service"
ln -sf /dev/null "$tree/etc/systemd/system/getty@tty1.service"

mkdir -p "$work/img"
cp "$tree"/boot/vmlinuz-* "$work/img/vmlinuz"
cp "$tree"/boot/initrd.img-* "$work/img/initrd.img"
# The tree plus room for what the checks write (a 50 MB file, the journal); sparse.
size_mb=$(( $(du -sm "$tree" | cut -f1) + 512 ))
truncate -s "${size_mb}M" "$work/img/root.img"
mkfs.ext4 -q -F -L root -d "$tree" "$work/img/root.img"

cache_seal "$work/img"
rm -rf "$cache"/rootfs-*
mv "$work/img" "$out"
echo "$out"
