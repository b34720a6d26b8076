#!/usr/bin/env bash
# scripts/test-arm64.sh - the test suite built for aarch64-unknown-linux-musl and run on
# this x86-64 host under user-mode QEMU (qemu-aarch64-static, .cargo/config.toml's
# runner), then one line: how many tests ran, passed, were ignored, and skipped
# themselves (printed a line starting "skipped" or "skipping").
#
# The integration tests start the steerd binary themselves, so the kernel must know to
# hand aarch64 ELF files to QEMU: when no qemu-aarch64 binfmt_misc entry exists and we
# are root, one is registered (what Debian's qemu-user-static does through systemd on a
# booted machine), with the F flag so the interpreter is opened once, now.
#
# What user-mode QEMU (Debian 12: 7.2) cannot show: /sys is the host's; it does not
# translate setsockopt(SO_ATTACH_REUSEPORT_CBPF) (ENOPROTOOPT: the server falls back to
# the hash); its /proc/self/stat reports zero CPU time. Tests that need those detect it
# and print "skipped NAME: why" (the steering probe is tests/serve_support's
# cbpf_refused); the arm64 VM tests (tests/vm.rs) prove steering on a real arm64 kernel.
# It has no openat2 either (ENOSYS): steerd then resolves paths with its portable
# fallback (src/files/beneath.rs), so file serving is tested here too.
# The VM tests themselves are skipped here (STEERD_VM=0): the host run covers them.
# STEERD_EMULATED names the emulator for tests whose figure it would falsify (a latency
# ratio under a load the test's own emulated threads make: tests/basic_auth.rs).
#
#   scripts/test-arm64.sh [CARGO TEST ARGS...]
set -uo pipefail
cd "$(dirname "$0")/.."
target=aarch64-unknown-linux-musl

say() { echo "test-arm64: $*"; }
command -v qemu-aarch64-static >/dev/null || { say "skipped: qemu-aarch64-static is not installed (Debian qemu-user-static)"; exit 0; }
rustc --print target-libdir --target $target 2>/dev/null | xargs -I{} test -d {} ||
    rustup target add $target >/dev/null 2>&1 ||
    { say "skipped: the $target standard library is not installed"; exit 0; }

binfmt=/proc/sys/fs/binfmt_misc
if [ ! -e $binfmt/qemu-aarch64 ] && [ "$(id -u)" = 0 ]; then
    [ -e $binfmt/register ] || mount -t binfmt_misc binfmt_misc $binfmt 2>/dev/null || true
    if [ -w $binfmt/register ]; then
        # ELF64, little-endian, e_type EXEC or DYN (mask fe), e_machine 0xb7 (AArch64)
        magic='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
        mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
        echo ":qemu-aarch64:M::$magic:$mask:$(command -v qemu-aarch64-static):F" >$binfmt/register ||
            say "could not register qemu-aarch64 with binfmt_misc"
    fi
fi
[ -e $binfmt/qemu-aarch64 ] ||
    say "note: no qemu-aarch64 binfmt_misc entry: tests that start the steerd binary will fail"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
STEERD_EMULATED=qemu-user STEERD_VM=0 cargo test --workspace --no-fail-fast --target $target "$@" -- --nocapture 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}

passed=$(grep -ohE '[0-9]+ passed' "$log" | awk '{ n += $1 } END { print n + 0 }')
failed=$(grep -ohE '[0-9]+ failed' "$log" | awk '{ n += $1 } END { print n + 0 }')
ignored=$(grep -ohE '[0-9]+ ignored' "$log" | awk '{ n += $1 } END { print n + 0 }')
skipped=$(grep -ciE '^(skipped|skipping)\b' "$log")
say "$((passed + failed)) ran, $passed passed, $failed failed, $ignored ignored; $skipped skipped themselves (passed without checking)"
grep -iE '^(skipped|skipping)\b' "$log" | sort | uniq -c | sed 's/^/test-arm64:   /'
grep -E '^test .* \.\.\. FAILED$' "$log" | sed 's/^test \(.*\) \.\.\. FAILED$/test-arm64: failed: \1/'
exit "$rc"
