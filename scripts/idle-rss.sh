#!/usr/bin/env bash
# scripts/idle-rss.sh [TARGET...] - resident memory of an idle 1-worker server
# (`steerd serve --workers 1`, after one request) for each static build of
# scripts/static.sh (default: every one in target/static/), one line per target.
#
# Foreign builds run under their user-mode QEMU (scripts/cross.sh names it): the
# process is QEMU's, so /proc/PID/status is the host's view of it, the emulator
# included: VmRSS is QEMU's code, its translated-code cache and the guest's pages;
# RssAnon is the anonymous part (the guest's heap and stacks, and QEMU's own heap and
# translation buffers). Both overstate what the same binary takes on its own CPU; the
# x86-64 lines (native) are the ones to compare with scripts/footprint.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/cross.sh
targets=("$@")
if [ ${#targets[@]} = 0 ]; then
    for f in target/static/steerd-*; do targets+=("${f#target/static/steerd-}"); done
fi

work=$(mktemp -d)
server=""
trap '[ -z "$server" ] || kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
echo ok >"$work/a"

kb() { sed -n "s/^$2:\s*\([0-9]*\) kB/\1/p" "/proc/$1/status"; }

printf '%-31s %-18s %-18s\n' target "master VmRSS/anon" "worker VmRSS/anon"
for t in "${targets[@]}"; do
    bin=target/static/steerd-$t
    [ -x "$bin" ] || { echo "$t: no $bin (scripts/static.sh)"; continue; }
    cross_setup "$t" >/dev/null 2>&1 || true
    runner=()
    [ -z "${CROSS_QEMU:-}" ] || runner=("$CROSS_QEMU")
    : >"$work/log"
    "${runner[@]}" "$bin" serve --listen 127.0.0.1:0 --workers 1 "$work" 2>"$work/log" &
    server=$!
    for _ in $(seq 200); do
        grep -q 'running on cpu' "$work/log" && break
        sleep 0.1
    done
    addr=$(sed -n 's/.*listening on //p' "$work/log" | head -n 1)
    curl -fsS "http://$addr/a" >/dev/null
    sleep 1
    worker=$(ps -o pid= --ppid "$server" | head -n 1 | tr -d ' ')
    printf '%-31s %6s / %-9s %6s / %-9s kB\n' "$t" \
        "$(kb "$server" VmRSS)" "$(kb "$server" RssAnon)" "$(kb "$worker" VmRSS)" "$(kb "$worker" RssAnon)"
    kill "$server"
    wait "$server" 2>/dev/null || true
    server=""
done
