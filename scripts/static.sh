#!/usr/bin/env bash
# scripts/static.sh - the release builds of the appliance binary, each static:
#
#   x86_64-unknown-linux-gnu        static-pie, glibc linked in (-C target-feature=+crt-static)
#   x86_64-unknown-linux-musl       static, musl
#   aarch64-unknown-linux-musl      static, musl, linked with rust-lld (no cross gcc needed)
#   armv7-unknown-linux-musleabihf  static, musl (Debian's armhf musl-dev), 32-bit ARM
#   riscv64gc-unknown-linux-gnu     static, glibc (Debian 12 has no riscv64 musl)
#   s390x-unknown-linux-musl        static-pie, musl (Debian's s390x musl-dev), big-endian
#
# What each of the last three needs (a cross gcc, Debian's musl for it) is in
# scripts/cross.sh; rustup has no standard library for them, so theirs is always rebuilt.
#
# Every build but x86_64-unknown-linux-gnu rebuilds the standard library with the binary
# (cargo -Z build-std, enabled on the stable toolchain by RUSTC_BOOTSTRAP=1; needs the
# rust-src component) with the panic strategy immediate-abort: a panic is a bare abort,
# which drops std's panic message and backtrace machinery (about 330 KB of the aarch64
# binary). Where rust-src or that strategy is missing, the two musl builds with a
# prebuilt std fall back to it and say so in one line. docs/appliance.md has the sizes.
#
# The appliance builds (every target but x86_64-unknown-linux-gnu, the build the
# benchmarks and the VM tests run) are made at opt-level 2 instead of the release
# profile's 3: 7% smaller (aarch64 musl 969,856 bytes against 1,043,008 on the same tree)
# for 2.1-2.4% more user-space instructions per request (callgrind,
# scripts/serve-instructions.sh: keep-alive 2,343 against 2,288, close 3,031 against
# 2,968), where a worker spends most of a request in the kernel. docs/appliance.md.
# The standard library they rebuild is made at opt-level "s" (std, core and alloc
# only): 6,464 bytes of the aarch64 binary, which put it back under 1 MiB with hosts.
# With the cold-size feature the functions marked cold in the source (start-up, flags,
# check, the tools; never the request path) are compiled for size too: 77,360 bytes of
# the aarch64 binary (1,043,232 -> 965,872).
#
# Each is stripped by the linker and lands where cargo puts it (target/TARGET/release/
# steerd; the VM tests use it), with a copy in target/static/steerd-TARGET; its size is
# printed. Both are under $CARGO_TARGET_DIR instead of target/ when it is set, where the
# tests look too.
# A target whose standard library or cross toolchain is missing is reported in one line
# and skipped (under CI, CI=true, that fails the script); a build that fails fails it.
#
#   scripts/static.sh [TARGET...]    (default: all six)
set -euo pipefail
cd "$(dirname "$0")/.."

targets=("$@")
[ ${#targets[@]} -gt 0 ] ||
    targets=(x86_64-unknown-linux-gnu x86_64-unknown-linux-musl aarch64-unknown-linux-musl
        armv7-unknown-linux-musleabihf riscv64gc-unknown-linux-gnu s390x-unknown-linux-musl)
. scripts/cross.sh

host=$(rustc -vV | sed -n 's/^host: //p')

has_target() {
    [ "$1" = "$host" ] && return 0
    rustc --print target-libdir --target "$1" 2>/dev/null | xargs -I{} test -d {} && return 0
    command -v rustup >/dev/null && rustup target add "$1" >/dev/null 2>&1 &&
        rustc --print target-libdir --target "$1" | xargs -I{} test -d {}
}

# The rustc flags that make a panic a bare abort in a std built with the binary: the
# panic strategy `immediate-abort` (rustc 1.91 and later), else the std feature of the
# same name (older toolchains). Empty when rust-src is missing: no build-std then.
immediate_abort() {
    local src
    src="$(rustc --print sysroot)/lib/rustlib/src/rust/library/std"
    if [ ! -d "$src" ] && command -v rustup >/dev/null; then
        rustup component add rust-src >/dev/null 2>&1 || true
    fi
    [ -d "$src" ] || return 0
    if RUSTC_BOOTSTRAP=1 rustc -Zunstable-options -Cpanic=immediate-abort --print cfg \
        >/dev/null 2>&1; then
        echo "-Zunstable-options -Cpanic=immediate-abort|"
    else
        echo "|-Zbuild-std-features=panic_immediate_abort"
    fi
}
abort_mode=$(immediate_abort)

# `--features cold-size` (Cargo.toml) where the toolchain takes `#[optimize(size)]`
# under RUSTC_BOOTSTRAP=1: the cold functions (start-up, flags, `check`, the tools)
# compiled for size, the request path as before. Empty otherwise (the binary is larger).
cold_size() {
    local probe
    probe=$(mktemp -d)
    if echo '#![feature(optimize_attribute)] #[optimize(size)] pub fn f() {}' |
        RUSTC_BOOTSTRAP=1 rustc --crate-type lib --emit metadata -o "$probe/p" - 2>/dev/null; then
        echo "--features cold-size"
    fi
    rm -rf "$probe"
}
cold_features=$(cold_size)

# Reports a target that cannot be built here; under CI that is a failure.
skipped() {
    echo "static: $1: skipped: $2"
    case ${CI:-} in true | 1) exit 1 ;; esac
}

tdir=${CARGO_TARGET_DIR:-target}
mkdir -p "$tdir/static"
# The other CPUs build in target directories of the machine's CI cache (one per target,
# under a key of the toolchain; scripts/fetch/cache.sh): the standard library -Z build-std
# makes for each is built once per machine, not once per clone. x86-64 glibc builds in the clone's: the VM
# tests boot target/x86_64-unknown-linux-gnu/release/steerd.
. scripts/fetch/cache.sh
cross_tdir=$(cache_root)/cargo-target/$(rustc -vV | cache_key)
cache_bound_target "$cross_tdir"
# build_one TARGET: one static binary, checked, and its line.
build_one() {
    local t=$1 flags build_std bootstrap opt deps_opt p build_dir out size
    if ! cross_setup "$t"; then
        skipped "$t" "$CROSS_WHY"
        return 0
    fi
    if [ $CROSS_BUILD_STD = no ] && ! has_target "$t"; then
        skipped "$t" "its standard library is not installed and rustup could not add it"
        return 0
    fi
    # The linker strips (rustc -C strip=symbols): no objcopy for a foreign architecture
    # is needed.
    flags="-C strip=symbols $CROSS_FLAGS"
    # 32-bit ARM in Thumb-2, as Debian's armhf and most ARMv7 distributions build: the
    # A32 encoding made the binary 1,053,960 bytes, over the 1 MiB budget; Thumb-2 gives
    # 767,240 (rustc calls the target feature unstable and says so in one warning).
    case $t in armv7-*) flags+=" -C target-feature=+thumb-mode" ;; esac
    build_std=()
    if [ $CROSS_BUILD_STD = yes ] || [ "$t" != "$host" ]; then
        if [ -n "$abort_mode" ]; then
            # A bare abort unwinds nothing, so the unwind tables (.eh_frame and its
            # header) serve only DWARF-unwinding profilers: 59,032 bytes of the aarch64
            # binary at fb26cf0. STEERD_STATIC_UNWIND=1 keeps them for such a profile.
            flags+=" ${abort_mode%|*}"
            [ "${STEERD_STATIC_UNWIND:-0}" = 1 ] || flags+=" -C force-unwind-tables=no"
            build_std=(-Zbuild-std=std,panic_abort ${abort_mode#*|})
        else
            echo "static: $t: prebuilt std (no rust-src for -Z build-std): panics keep std's unwinder, the binary is about 330 KB larger"
        fi
    fi
    export "CARGO_TARGET_$(cross_var "$t")_RUSTFLAGS=$flags"
    # RUSTC_BOOTSTRAP=1 lets the stable toolchain take -Z flags; only for these builds.
    bootstrap=()
    [ ${#build_std[@]} -eq 0 ] || bootstrap=(env RUSTC_BOOTSTRAP=1)
    opt=2
    [ "$t" != x86_64-unknown-linux-gnu ] || opt=3
    deps_opt=()
    if [ ${#build_std[@]} -gt 0 ]; then
        for p in std core alloc; do
            deps_opt+=(--config "profile.release.package.$p.opt-level=\"s\"")
        done
        # shellcheck disable=SC2206 # one flag and its value, or nothing
        deps_opt+=($cold_features)
    fi
    build_dir=$cross_tdir/$t
    [ "$t" != x86_64-unknown-linux-gnu ] || build_dir=$tdir
    "${bootstrap[@]}" env CARGO_PROFILE_RELEASE_OPT_LEVEL=$opt CARGO_TARGET_DIR="$build_dir" \
        cargo build --quiet --release --locked --target "$t" -p steerd "${build_std[@]}" "${deps_opt[@]}"
    out=$tdir/static/steerd-$t
    cp -f "$build_dir/$t/release/steerd" "$out"
    # Also where cargo would have left it in the clone, which the VM tests, the container
    # file (deploy/Containerfile) and scripts/footprint.sh read.
    if [ "$build_dir" != "$tdir" ]; then
        mkdir -p "$tdir/$t/release"
        cp -f "$build_dir/$t/release/steerd" "$tdir/$t/release/steerd"
    fi
    if command -v readelf >/dev/null && readelf -lW "$out" | grep -q 'program interpreter'; then
        echo "static: $t: the binary is dynamically linked" >&2
        exit 1
    fi
    # A static binary's start-up code (musl's, glibc's static-pie) applies relative
    # relocations only: anything else would be a null pointer at run time.
    if command -v readelf >/dev/null &&
        readelf -rW "$out" | awk '/^[0-9a-f]+ / && $3 !~ /_(RELATIVE|IRELATIVE|NONE)$/ { bad = 1 } END { exit !bad }'; then
        echo "static: $t: the binary has symbolic relocations its start-up code does not apply:" >&2
        readelf -rW "$out" | grep -vE '_(RELATIVE|IRELATIVE|NONE) ' | head -n 5 >&2
        exit 1
    fi
    size=$(stat -c %s "$out")
    printf 'static: %-31s %8d bytes stripped (%d KiB), %-5s %s\n' "$t" "$size" $((size / 1024)) \
        "$CROSS_LIBC" "$out"
    # The appliance budget (docs/appliance.md): the aarch64 build at most 1 MiB, as it is
    # made for appliances (std rebuilt, cold functions for size, no unwind tables). A
    # change that crosses it fails here, not in a later measurement.
    if [ "$t" = aarch64-unknown-linux-musl ] && [ ${#build_std[@]} -gt 0 ] &&
        [ -n "$cold_features" ] && [ "${STEERD_STATIC_UNWIND:-0}" != 1 ] &&
        [ "$size" -gt 1048576 ]; then
        echo "static: $t: $size bytes, over the appliance budget of 1 MiB (1,048,576 bytes)" >&2
        exit 1
    fi
}

# Two builds at a time (STEERD_STATIC_JOBS): each ends in a link-time optimisation of one
# code unit, which keeps one core busy, so a second build fills the other. Each target
# builds in a target directory of its own (cargo locks one per build) and its lines are
# printed, in the targets' order, once all are done.
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
for t in "${targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "${STEERD_STATIC_JOBS:-2}" ]; do wait -n || true; done
    (
        rc=0
        # In the background for `set -e` to hold inside (bash ignores it under `||`).
        (set -e; build_one "$t") >"$logs/$t.log" 2>&1 &
        wait $! || rc=$?
        echo "$rc" >"$logs/$t.rc"
    ) &
done
wait
failed=0
for t in "${targets[@]}"; do
    cat "$logs/$t.log"
    [ "$(cat "$logs/$t.rc" 2>/dev/null)" = 0 ] || failed=1
done
exit "$failed"
