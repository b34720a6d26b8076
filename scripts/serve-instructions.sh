#!/usr/bin/env bash
# The server's user-space instructions per request, counted by callgrind: the serve
# loop runs in a thread of benches/serve_path.rs and a client thread drives it over
# loopback. The count is the server thread's total at N2 requests minus its total at
# N1, divided by N2 - N1, so the set-up (tables, cache, listener) drops out. Counts do not
# depend on the machine's load, so two builds can be compared exactly; the kernel's
# share of a request is not in them (scripts/per-request.sh, steerd bench ab).
#
#   scripts/serve-instructions.sh [WORKLOAD...]
#
# Workloads: keep-alive, close, options (steerd), responder-keep-alive, responder-close
# (the canned responder, the floor); default: all five. Also hosts-keep-alive and
# hosts-close: 20 hosts, a 50-network allow list and a rate limit (benches/serve_path.rs).
#
# Environment: N1 (default 200), N2 (default 1200), BIN (a serve_path bench binary to use
# instead of building one: compare two builds by passing each). Needs valgrind.
set -euo pipefail
N1=${N1:-200}
N2=${N2:-1200}
if [ -z "${BIN:-}" ]; then
    BIN=$(cargo bench --bench serve_path --no-run --message-format=json 2>/dev/null |
        sed -n 's/.*"executable":"\([^"]*serve_path[^"]*\)".*/\1/p' | tail -1)
fi
[ -x "$BIN" ] || { echo "no serve_path bench binary" >&2; exit 1; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
# The total of the server's threads: callgrind writes one file per thread
# (--separate-threads); the first is the client's (the harness's main thread).
server_total() {
    valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$OUT/cg.$1.$2" \
        "$BIN" "$1" "$2" >/dev/null 2>"$OUT/vg.log" || { cat "$OUT/vg.log" >&2; exit 1; }
    for f in "$OUT/cg.$1.$2"-*; do
        case $f in *-01) continue ;; esac
        sed -n 's/^summary: *//p; s/^totals: *//p' "$f" | head -1
    done | awk '{ t += $1 } END { print t }'
}
WORKLOADS=("$@")
[ ${#WORKLOADS[@]} -gt 0 ] || WORKLOADS=(keep-alive close options responder-keep-alive responder-close)
for w in "${WORKLOADS[@]}"; do
    a=$(server_total "$w" "$N1")
    b=$(server_total "$w" "$N2")
    awk -v w="$w" -v a="$a" -v b="$b" -v n1="$N1" -v n2="$N2" \
        'BEGIN { printf "%-20s %6.0f instructions/request (server threads, %d vs %d requests)\n", w, (b - a) / (n2 - n1), n2, n1 }'
done
