#!/usr/bin/env bash
# scripts/bpf-asm.sh [DIR] - builds the kernel's own bpf_asm, the oracle of
# asm-bpf/tests/bpf_asm_oracle.rs, and prints its path.
#
# The source is Debian's linux-source-6.1 package (apt-get download, no install): only
# tools/, scripts/ and include/uapi/ are unpacked from its tarball into DIR (default
# ${CARGO_TARGET_DIR:-target}/bpf_asm), then `make -C tools/bpf bpf_asm` (needs gcc, make,
# flex and bison). A second run reuses what the first built.
#
#   BPF_ASM=$(scripts/bpf-asm.sh) cargo test -p asm-bpf --test bpf_asm_oracle
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-${CARGO_TARGET_DIR:-target}/bpf_asm}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
tree=$dir/linux-source-6.1
binary=$tree/tools/bpf/bpf_asm
if [ ! -x "$binary" ]; then
    for tool in flex bison make gcc; do
        command -v "$tool" >/dev/null || { echo "bpf-asm: $tool is needed" >&2; exit 2; }
    done
    (cd "$dir" && apt-get download -q linux-source-6.1 >&2)
    package=$(ls "$dir"/linux-source-6.1_*_all.deb | tail -n 1)
    dpkg-deb --fsys-tarfile "$package" |
        tar -x -C "$dir" ./usr/src/linux-source-6.1.tar.xz
    tar -xJf "$dir/usr/src/linux-source-6.1.tar.xz" -C "$dir" --wildcards \
        'linux-source-6.1/tools/*' 'linux-source-6.1/scripts/*' \
        'linux-source-6.1/include/uapi/*' 'linux-source-6.1/Makefile'
    rm -rf "$dir/usr" "$package"
    make -s -C "$tree/tools/bpf" bpf_asm >&2
fi
echo "$binary"
