#!/usr/bin/env bash
# scripts/test-qemu.sh TARGET [CARGO TEST ARGS...] - the test suite built for TARGET and
# run on this x86-64 host under user-mode QEMU (the runner scripts/cross.sh gives cargo),
# then scripts/test-summary.sh's lines: how many tests ran, passed, failed, were ignored,
# and skipped themselves (the visible `skipped NAME: WHY` line), each skip by name.
#
# TARGET is one of aarch64-unknown-linux-musl, armv7-unknown-linux-musleabihf,
# riscv64gc-unknown-linux-gnu, s390x-unknown-linux-musl (scripts/test-arm64.sh,
# test-armv7.sh, test-riscv64.sh, test-s390x.sh name it). With no CARGO TEST ARGS every
# target runs the CI subset below and the script lists the test files it left out;
# `--workspace` runs everything (on arm64, whose std is prebuilt, that takes about 17 min
# under emulation here, against about 5 for the subset).
#
# The build goes to a target directory of its own in the machine's CI cache
# (scripts/fetch/cache.sh; keyed by the toolchain), so the standard library that
# -Z build-std makes, and the dependencies, are built once per machine, not per clone.
#
# The CI subset, chosen for time: every target is emulated instruction by instruction and
# its std is rebuilt for the tests, so the whole suite costs far more than CI has
# (docs/appliance.md has the figures). It keeps what a 32-bit, big-endian or RISC-V CPU
# can break: all library unit tests (parser, PROXY v1/v2, conn state machine, plan, files,
# timers, stats, the upstream's response head), the asm-bpf crate whole (assembler,
# checker and interpreter vectors, the kernel as oracle through SO_ATTACH_FILTER), the
# HTTP vectors, the chunked-body vectors and the differential parser test, the steering
# program on every fixture topology, topology and plan on the captured trees, `steerd bpf`
# through the binary, the fuzz seed corpora, the cross-target identity outputs, and the
# real binary serving files, ranges (one past 4 GiB) and errors over loopback
# (serving::binary, serving::files, serving::everyday).
#
# The integration tests start the steerd binary themselves, so the kernel must know to
# hand TARGET's ELF files to QEMU: when no binfmt_misc entry exists and we are root, one
# is registered (what Debian's qemu-user-static does through systemd on a booted
# machine), with the F flag so the interpreter is opened once, now.
#
# What user-mode QEMU (Debian 12: 7.2) cannot show: /sys is the host's; it does not
# translate setsockopt(SO_ATTACH_REUSEPORT_CBPF) (ENOPROTOOPT: the server falls back to
# the hash); its /proc/self/stat reports zero CPU time. Tests that need those detect it
# and print "skipped NAME: why" (the steering probe is tests/support/server.rs's
# cbpf_refused); the VM tests (tests/vm/guests.rs) prove steering on real kernels.
# It has no openat2 either (ENOSYS): steerd then resolves paths with its portable
# fallback (src/files/beneath.rs), so file serving is tested here too.
# The VM tests themselves are skipped here (STEERD_VM=0): the host run covers them.
# STEERD_EMULATED names the emulator for tests whose figure it would falsify (a latency
# ratio under a load the test's own emulated threads make: tests/serving/basic_auth.rs).
set -uo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: scripts/test-qemu.sh TARGET [CARGO TEST ARGS...]}
shift
case $target in
    aarch64-*) name=test-arm64 ;;
    riscv64*) name=test-riscv64 ;;
    *) name=test-${target%%-*} ;;
esac
say() { echo "$name: $*"; }
# A lane that cannot run at all says why; under CI (CI=true) that fails the run.
unavailable() {
    say "skipped: $*"
    case ${CI:-} in true | 1) exit 1 ;; *) exit 0 ;; esac
}

. scripts/cross.sh
cross_setup "$target" || unavailable "$CROSS_WHY"
qemu=$CROSS_QEMU
command -v "$qemu" >/dev/null || unavailable "$qemu is not installed (Debian qemu-user-static)"
build_std=()
if [ "$CROSS_BUILD_STD" = yes ]; then
    # The tests unwind (libtest catches a failing test's panic), so std is built with
    # panic_unwind; RUSTC_BOOTSTRAP=1 lets the stable toolchain take -Z build-std.
    export RUSTC_BOOTSTRAP=1
    build_std=(-Zbuild-std)
    # That std is built with the test profile: at opt-level 0, std itself runs unoptimised
    # under the emulator and the suite takes several times as long (the aarch64 std is
    # rustup's optimised one). opt-level 1 keeps debug assertions and overflow checks
    # (separate settings, on in this profile); line tables keep backtraces readable.
    export CARGO_PROFILE_DEV_OPT_LEVEL=1 CARGO_PROFILE_DEV_DEBUG=line-tables-only
    export "CARGO_TARGET_$(cross_var "$target")_RUSTFLAGS=$CROSS_FLAGS"
else
    rustc --print target-libdir --target "$target" 2>/dev/null | xargs -I{} test -d {} ||
        rustup target add "$target" >/dev/null 2>&1 ||
        unavailable "the $target standard library is not installed"
fi

# binfmt_misc: ELF class, data (endianness) and e_machine of TARGET.
binfmt=/proc/sys/fs/binfmt_misc
entry=${qemu%-static}
case $target in
    aarch64-*) magic='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00' ;;
    armv7-*) magic='\x7fELF\x01\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x28\x00' ;;
    riscv64*) magic='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xf3\x00' ;;
    s390x-*) magic='\x7fELF\x02\x02\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x16' ;;
esac
# Ignore the ABI version byte, and accept e_type EXEC or DYN (the mask's fe, on the low
# byte of the 16-bit e_type, which is the first byte little-endian, the second big-endian).
case $target in
    s390x-*) mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff' ;;
    *) mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff' ;;
esac
if [ ! -e $binfmt/$entry ] && [ "$(id -u)" = 0 ]; then
    [ -e $binfmt/register ] || mount -t binfmt_misc binfmt_misc $binfmt 2>/dev/null || true
    if [ -w $binfmt/register ]; then
        echo ":$entry:M::$magic:$mask:$(command -v "$qemu"):F" >$binfmt/register ||
            say "could not register $entry with binfmt_misc"
    fi
fi
[ -e $binfmt/$entry ] ||
    say "note: no $entry binfmt_misc entry: tests that start the steerd binary will fail"

# The CI subset (see the top of this file), as cargo test invocations: the integration
# tests are one binary (tests/tests.rs), so the subset is its modules, as test filters.
subset=(http::vectors http::differential http::chunked steering::program steering::topology steering::plan
    cli::bpf cli::bpf_exec serving::binary serving::files serving::everyday code::fuzz_seeds
    vm::same_everywhere)
runs=()
if [ $# -gt 0 ]; then
    runs=("$*")
else
    # The static binaries are compared from the host suite (same_everywhere.rs); asm-bpf's
    # doctests are left out (rustdoc would need the link flags and -Zdoctest-xcompile).
    # Each filter ends in `::` so `cli::bpf` does not also pick `cli::bpf_exec`.
    runs=("-p steerd --lib"
        "-p steerd --test tests|--skip every_static_binary $(printf -- '%s:: ' "${subset[@]}")"
        "-p asm-bpf --lib --tests")
    say "the CI subset: steerd --lib, the modules $(IFS=,; echo "${subset[*]}") of tests/tests.rs, asm-bpf --lib --tests"
    left=()
    for f in tests/*/*.rs; do
        m=${f#tests/} m=${m%.rs} m=${m//\//::}
        case $m in support::* | alloc::* | */mod | *::mod | *::main) continue ;; esac
        [[ " ${subset[*]} " == *" $m "* ]] || left+=("$m")
    done
    say "left out for time (the x86-64 suite runs them): ${left[*]}, tests/alloc, tests/bench_alloc.rs"
fi
. scripts/fetch/cache.sh
# The x86-64 reference of vm::same_everywhere stays the clone's (scripts/static.sh).
STEERD_SAME_REFERENCE=${STEERD_SAME_REFERENCE:-$(cd "${CARGO_TARGET_DIR:-target}" 2>/dev/null && pwd)/static/steerd-x86_64-unknown-linux-gnu}
cache_bound_target "$(cache_root)/cargo-target/$(rustc -vV | cache_key)"
CARGO_TARGET_DIR=$(cache_root)/cargo-target/$(rustc -vV | cache_key)/$target
export STEERD_SAME_REFERENCE CARGO_TARGET_DIR

log=$(mktemp)
STEERD_SKIP_LOG=$(mktemp) && export STEERD_SKIP_LOG
trap 'rm -f "$log" "$STEERD_SKIP_LOG"' EXIT
rc=0 start=$(date +%s)
for run in "${runs[@]}"; do
    args=${run%%|*} test_args=""
    [ "$run" = "$args" ] || test_args=${run#*|}
    # shellcheck disable=SC2086 # each run is a list of cargo arguments, then test arguments
    STEERD_EMULATED=qemu-user STEERD_VM=0 cargo test --no-fail-fast --target "$target" "${build_std[@]}" $args \
        -- --nocapture $test_args 2>&1 | tee -a "$log"
    [ "${PIPESTATUS[0]}" = 0 ] || rc=1
done

scripts/test-summary.sh "$name" "$log" "$(($(date +%s) - start))"
exit "$rc"
