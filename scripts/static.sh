#!/usr/bin/env bash
# scripts/static.sh - the three release builds of the appliance binary, each static:
#
#   x86_64-unknown-linux-gnu    static-pie, glibc linked in (-C target-feature=+crt-static)
#   x86_64-unknown-linux-musl   static, musl
#   aarch64-unknown-linux-musl  static, musl, linked with rust-lld (no cross gcc needed)
#
# Each is stripped by the linker and lands where cargo puts it (target/TARGET/release/
# steerd; the VM tests use the gnu one), with a copy in target/static/steerd-TARGET; its
# size is printed.
# A target whose standard library cannot be installed is reported in one line and
# skipped; a build that fails fails the script.
#
#   scripts/static.sh [TARGET...]    (default: all three)
set -euo pipefail
cd "$(dirname "$0")/.."

targets=("$@")
[ ${#targets[@]} -gt 0 ] ||
    targets=(x86_64-unknown-linux-gnu x86_64-unknown-linux-musl aarch64-unknown-linux-musl)

host=$(rustc -vV | sed -n 's/^host: //p')

has_target() {
    [ "$1" = "$host" ] && return 0
    rustc --print target-libdir --target "$1" 2>/dev/null | xargs -I{} test -d {} && return 0
    command -v rustup >/dev/null && rustup target add "$1" >/dev/null 2>&1 &&
        rustc --print target-libdir --target "$1" | xargs -I{} test -d {}
}

mkdir -p target/static
for t in "${targets[@]}"; do
    if ! has_target "$t"; then
        echo "static: $t: skipped: its standard library is not installed and rustup could not add it"
        continue
    fi
    # The linker strips (rustc -C strip=symbols): no objcopy for a foreign architecture
    # is needed. rustc finds rust-lld in its own sysroot.
    var=$(echo "$t" | tr 'a-z-' 'A-Z_')
    flags="-C strip=symbols"
    case $t in
        *-linux-gnu) flags+=" -C target-feature=+crt-static" ;;
        aarch64-*-musl) export "CARGO_TARGET_${var}_LINKER=rust-lld" ;;
    esac
    export "CARGO_TARGET_${var}_RUSTFLAGS=$flags"
    cargo build --quiet --release --locked --target "$t" -p steerd
    out=target/static/steerd-$t
    cp -f "target/$t/release/steerd" "$out"
    if command -v readelf >/dev/null && readelf -lW "$out" | grep -q 'program interpreter'; then
        echo "static: $t: the binary is dynamically linked" >&2
        exit 1
    fi
    size=$(stat -c %s "$out")
    printf 'static: %-28s %8d bytes stripped (%d KiB)  %s\n' "$t" "$size" $((size / 1024)) "$out"
done
