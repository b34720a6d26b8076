#!/usr/bin/env bash
# tests/data/ci/make-archive.sh DIR - a stand-in Debian archive in DIR for tests/ci/: what
# scripts/vm/fetch.sh takes for amd64 (linux-image-amd64 naming a kernel package that
# holds /boot/vmlinuz-* and the virtio-net modules, busybox-static holding /bin/busybox),
# signed by a key made here (DIR/key.gpg), in two suites:
#   bookworm            whole and right
#   bookworm-security   its Release names a Packages file of another size than the one
#                       served: apt's "File has unexpected size ... Mirror sync in
#                       progress?", as a mirror mid-sync answers
# Prints nothing; fails if a tool is missing (dpkg-deb, gpg, sha256sum).
set -euo pipefail
dir=${1:?usage: make-archive.sh DIR}
rm -rf "$dir"
mkdir -p "$dir/pool" "$dir/build"
# A key ring of its own, in a short path: gpg-agent's socket path must fit a sockaddr_un.
GNUPGHOME=$(mktemp -d /tmp/steerd-archive-gpg.XXXXXX)
export GNUPGHOME
trap 'gpgconf --kill gpg-agent 2>/dev/null; rm -rf "$GNUPGHOME"' EXIT
gpg -q --batch --passphrase '' --quick-gen-key 'steerd stand-in archive <ci@steerd.test>' \
    ed25519 sign never
gpg -q --batch --export >"$dir/key.gpg"

# deb NAME VERSION DEPENDS: a package from the tree in build/NAME.
deb() {
    local name=$1 version=$2 depends=$3 tree=$dir/build/$1
    mkdir -p "$tree/DEBIAN"
    {
        echo "Package: $name"
        echo "Version: $version"
        echo "Architecture: amd64"
        echo "Maintainer: steerd tests <ci@steerd.test>"
        [ -z "$depends" ] || echo "Depends: $depends"
        echo "Description: stand-in for tests/ci"
    } >"$tree/DEBIAN/control"
    dpkg-deb -Zgzip --root-owner-group -b "$tree" "$dir/pool/${name}_${version}_amd64.deb" >/dev/null
}
kver=6.1.0-99-amd64
mkdir -p "$dir/build/linux-image-$kver/boot" \
    "$dir/build/linux-image-$kver/lib/modules/$kver/kernel/drivers/virtio" \
    "$dir/build/linux-image-$kver/lib/modules/$kver/kernel/drivers/net" \
    "$dir/build/busybox-static/bin"
head -c 200000 /dev/urandom >"$dir/build/linux-image-$kver/boot/vmlinuz-$kver"
printf 'depends=\0name=virtio_pci\0' >"$dir/build/linux-image-$kver/lib/modules/$kver/kernel/drivers/virtio/virtio_pci.ko"
printf 'depends=virtio_pci\0name=virtio_net\0' >"$dir/build/linux-image-$kver/lib/modules/$kver/kernel/drivers/net/virtio_net.ko"
printf '#!/bin/sh\necho stand-in busybox\n' >"$dir/build/busybox-static/bin/busybox"
chmod 755 "$dir/build/busybox-static/bin/busybox"
deb "linux-image-$kver" 6.1.99-1 ""
deb linux-image-amd64 6.1.99-1 "linux-image-$kver (= 6.1.99-1)"
deb busybox-static 1:1.35.0-4 ""

# index SUITE: dists/SUITE with a Packages file of every package and a signed InRelease.
index() {
    local suite=$1 at=$dir/dists/$1 f
    mkdir -p "$at/main/binary-amd64"
    for f in "$dir"/pool/*.deb; do
        dpkg-deb -f "$f"
        echo "Filename: pool/$(basename "$f")"
        echo "Size: $(stat -c %s "$f")"
        echo "SHA256: $(sha256sum "$f" | cut -d' ' -f1)"
        echo
    done >"$at/main/binary-amd64/Packages"
    {
        echo "Origin: steerd-test"
        echo "Label: steerd-test"
        echo "Suite: $suite"
        echo "Codename: $suite"
        echo "Date: $(LC_ALL=C date -u '+%a, %d %b %Y %H:%M:%S UTC')"
        echo "Architectures: amd64"
        echo "Components: main"
        echo "SHA256:"
        echo " $(sha256sum "$at/main/binary-amd64/Packages" | cut -d' ' -f1) $(stat -c %s "$at/main/binary-amd64/Packages") main/binary-amd64/Packages"
    } >"$at/Release"
}
index bookworm
index bookworm-security
# The security suite's Packages changes after its Release was signed.
echo "Package: arrived-after-the-release" >>"$dir/dists/bookworm-security/main/binary-amd64/Packages"
for suite in bookworm bookworm-security; do
    gpg -q --batch --yes --clearsign -o "$dir/dists/$suite/InRelease" "$dir/dists/$suite/Release"
done
rm -rf "$dir/build"
