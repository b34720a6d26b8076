#!/usr/bin/env bash
# Syscalls per request of one steerd worker, by strace -c on the worker process while wrk
# runs: small file keep-alive, small file Connection: close, 1 MiB file keep-alive (-c10),
# and a small file served from its .gz sidecar to `Accept-Encoding: gzip`, keep-alive.
# Counts, not timings (strace slows the server).
# Usage: scripts/syscalls.sh [BINARY] [SECONDS] [CONNECTIONS]
set -euo pipefail
BIN=${1:-target/release/steerd}
SECS=${2:-5}
CONNS=${3:-50}
PORT=18093
DIR=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$DIR"' EXIT
printf 'hello, world\n' > "$DIR/index.html"   # 13 bytes, as in docs/benchmarks.md
head -c 1048576 /dev/urandom > "$DIR/mib.bin"
seq 1 400 > "$DIR/app.js" && gzip -k -n "$DIR/app.js"   # 1.5 KB, and its .gz sidecar
"$BIN" serve "$DIR" --listen 127.0.0.1:$PORT --workers 1 2>"$DIR/log" &
SERVER=$!
for _ in $(seq 50); do curl -sf http://127.0.0.1:$PORT/ >/dev/null && break; sleep 0.1; done
WORKER=$(cat /proc/$SERVER/task/$SERVER/children | awk '{print $1}')

measure() { # $1 = label, $2 = path, $3 = connections, rest = extra wrk args
  local label=$1 path=$2 conns=$3; shift 3
  strace -c -f -p "$WORKER" -o "$DIR/$label.strace" &
  local st=$!
  sleep 0.5
  local out
  out=$(wrk -t1 -c"$conns" -d"${SECS}s" "$@" "http://127.0.0.1:$PORT$path")
  kill -INT $st; wait $st 2>/dev/null || true
  local reqs
  reqs=$(echo "$out" | awk '/requests in/ {print $1}')
  local total
  total=$(awk '$NF=="total" {print $4}' "$DIR/$label.strace")
  echo "== $label: $reqs requests, $total syscalls, $(echo "scale=2; $total/$reqs" | bc) per request"
  awk -v r="$reqs" '$1 ~ /^[0-9.]+$/ && $NF != "total" { printf "   %-14s %.3f\n", $NF, $4/r }' \
    "$DIR/$label.strace"
}
measure keepalive / "$CONNS"
measure close / "$CONNS" -H "Connection: close"
measure mib-keepalive /mib.bin 10
measure gzip-sidecar /app.js "$CONNS" -H "Accept-Encoding: gzip"
