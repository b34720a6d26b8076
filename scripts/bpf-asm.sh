#!/usr/bin/env bash
# scripts/bpf-asm.sh [DIR] - builds the kernel's own bpf_asm, the oracle of
# asm-bpf/tests/bpf_asm_oracle.rs, and prints its path.
#
# The source is Debian 12's linux-source-6.1 package, taken from the main component only
# (scripts/fetch/deb.sh: a private apt, retried, one line on failure; no install): only
# tools/, scripts/ and include/uapi/ are unpacked from its tarball, then
# `make -C tools/bpf bpf_asm` (needs gcc, make, flex and bison). The binary alone is kept,
# in DIR or else the machine's CI cache (scripts/fetch/cache.sh, keyed by this script and
# the fetch library), so a second run, in any clone, reuses it.
#
#   BPF_ASM=$(scripts/bpf-asm.sh) cargo test -p asm-bpf --test bpf_asm_oracle
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/fetch/cache.sh
. scripts/fetch/deb.sh
if [ $# -gt 0 ]; then
    dir=$1
else
    dir=$(cache_root)/bpf_asm-$(cache_key scripts/bpf-asm.sh scripts/fetch/deb.sh scripts/fetch/cache.sh)
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
binary=$dir/bpf_asm
if ! cache_valid "$dir" || [ ! -x "$binary" ]; then
    exec 8>"$dir.lock"
    flock 8
fi
if ! cache_valid "$dir" || [ ! -x "$binary" ]; then
    for tool in flex bison make gcc; do
        command -v "$tool" >/dev/null || { echo "bpf-asm: $tool is needed" >&2; exit 2; }
    done
    rm -rf "${dir:?}"/* "$dir/MANIFEST"
    work=$dir/work
    deb_init "$work/apt" amd64 bookworm main
    deb_update
    deb_download "$work/dl" linux-source-6.1
    package=$(ls "$work"/dl/linux-source-6.1_*_all.deb | tail -n 1)
    dpkg-deb --fsys-tarfile "$package" | tar -x -C "$work" ./usr/src/linux-source-6.1.tar.xz
    tar -xJf "$work/usr/src/linux-source-6.1.tar.xz" -C "$work" --wildcards \
        'linux-source-6.1/tools/*' 'linux-source-6.1/scripts/*' \
        'linux-source-6.1/include/uapi/*' 'linux-source-6.1/Makefile'
    make -s -C "$work/linux-source-6.1/tools/bpf" bpf_asm >&2
    cp "$work/linux-source-6.1/tools/bpf/bpf_asm" "$binary"
    rm -rf "$work"
    cache_seal "$dir"
    [ $# -gt 0 ] || cache_prune "$(dirname "$dir")" bpf_asm- "$dir"
fi
echo "$binary"
