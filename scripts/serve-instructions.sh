#!/usr/bin/env bash
# The server's user-space instructions per request, counted by callgrind: the serve
# loop runs in a thread of benches/serve_path.rs and a client thread drives it over
# loopback. The count is the server thread's total at N2 requests minus its total at
# N1, divided by N2 - N1, so the set-up (tables, cache, listener) drops out. Counts do not
# depend on the machine's load, so two builds can be compared exactly; the kernel's
# share of a request is not in them (scripts/per-request.sh, steerd bench ab).
#
#   scripts/serve-instructions.sh [WORKLOAD...]     (keep-alive, close, options; default all)
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
# The total of the thread that ran the loop: callgrind writes one file per thread
# (--separate-threads); the loop's thread is the second.
server_total() {
    valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$OUT/cg.$1.$2" \
        "$BIN" "$1" "$2" >/dev/null 2>"$OUT/vg.log" || { cat "$OUT/vg.log" >&2; exit 1; }
    sed -n 's/^summary: *//p; s/^totals: *//p' "$OUT/cg.$1.$2-02" | head -1
}
WORKLOADS=("$@")
[ ${#WORKLOADS[@]} -gt 0 ] || WORKLOADS=(keep-alive close options)
for w in "${WORKLOADS[@]}"; do
    a=$(server_total "$w" "$N1")
    b=$(server_total "$w" "$N2")
    awk -v w="$w" -v a="$a" -v b="$b" -v n1="$N1" -v n2="$N2" \
        'BEGIN { printf "%-10s %8.0f instructions/request (server thread, %d vs %d requests)\n", w, (b - a) / (n2 - n1), n2, n1 }'
done
