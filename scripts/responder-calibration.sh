#!/usr/bin/env bash
# What the reference responder's figures become when it sends steerd's own response
# (`--response`: the head a real server sends costs the load generator, which shares the
# CPUs, more to read) and when it does N iterations of busy work per request (`--spin`:
# the price of a server's own work under this load). Each line is a `steerd bench ab`,
# A the plain steered responder, B the same with the option; then steerd itself against
# A, so its ratios can be read against the two prices. Not part of the test suite: the
# figures depend on the machine. See docs/benchmarks.md, "Where the gap to the responder goes".
#
#   scripts/responder-calibration.sh [SPIN...]      (default: 250 500 1000)
#
# Environment: ROUNDS (default 10), DUR (2), WARMUP (0.5s), CONNS (50), PIN (0,1),
# PORT (18560), OUT (target/responder-calibration: every run's full report).
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-10}
DUR=${DUR:-2}
WARMUP=${WARMUP:-0.5s}
CONNS=${CONNS:-50}
PIN=${PIN:-0,1}
PORT=${PORT:-18560}
OUT=${OUT:-target/responder-calibration}
SPINS=("$@")
[ ${#SPINS[@]} -gt 0 ] || SPINS=(250 500 1000)

cargo build --release -q -p steerd
BIN=$PWD/target/release/steerd
mkdir -p "$OUT"
T=$(mktemp -d /tmp/steerd-calibration.XXXXXX)
SERVER=
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$T"' EXIT
mkdir -p "$T/www"
printf 'Hello, world!' >"$T/www/13b"
URL=http://127.0.0.1:$PORT/13b

# steerd's keep-alive response to the load generator's request, byte for byte (its Date
# is the second it was taken; every other byte is what steerd sends each time).
"$BIN" serve "$T/www" --workers 1 --listen "127.0.0.1:$PORT" >"$T/serve.log" 2>&1 &
SERVER=$!
for _ in $(seq 50); do
    curl -sf -o /dev/null "$URL" && break
    sleep 0.1
done
curl -sf -o /dev/null "$URL" || { echo "steerd did not serve $URL:" >&2; cat "$T/serve.log" >&2; exit 1; }
exec 3<>"/dev/tcp/127.0.0.1/$PORT"
printf 'GET /13b HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n' "$PORT" >&3
timeout 1 cat <&3 >"$T/response" || true
exec 3<&-
grep -q $'^HTTP/1.1 200 ' "$T/response" || { echo "no 200 response captured" >&2; exit 1; }
kill "$SERVER"
wait "$SERVER" 2>/dev/null || true
SERVER=
echo "== steerd's response ($(wc -c <"$T/response") bytes) as the responder's"
head -c 400 "$T/response" | tr -d '\r'
echo

RESPONDER=("$BIN" bench responder --listen "127.0.0.1:$PORT" --cpus "$PIN" --steer)
STEERD=("$BIN" serve "$T/www" --workers 2 --listen "127.0.0.1:$PORT")
# One alternating comparison; prints its req/s and server CPU verdicts.
ab() {
    local name=$1
    shift
    "$BIN" bench ab --rounds "$ROUNDS" --warmup "$WARMUP" -d "$DUR" -c "$CONNS" --pin "$PIN" \
        "$URL" -- "${RESPONDER[@]}" -- "$@" >"$OUT/$name.txt" 2>&1
    echo "== $name (B: $*)"
    awk '/^== requests\/s/ || /^== server CPU per request/ { show = 1; print; next }
         /^== / { show = 0 }
         show && /^(B\/A per round|permutation|Difference|No difference)/' "$OUT/$name.txt"
}
ab head "${RESPONDER[@]}" --response "$T/response"
for n in "${SPINS[@]}"; do
    ab "spin-$n" "${RESPONDER[@]}" --spin "$n"
done
ab steerd "${STEERD[@]}"
echo "full reports: $OUT/"
