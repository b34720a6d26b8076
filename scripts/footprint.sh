#!/usr/bin/env bash
# scripts/footprint.sh - resident memory of steerd's master and of each worker, idle and
# while CONNS keep-alive connections are open (each has sent one request and read the
# response), read from /proc/PID/status (VmRSS, and RssAnon: the process's own pages,
# without the binary's shared text).
#
#   scripts/footprint.sh [BINARY] [CONNS] [SERVE OPTIONS...]
#       BINARY  default target/x86_64-unknown-linux-musl/release/steerd (scripts/static.sh)
#       CONNS   default 10000
#
# The client is python3 (standard library only), one process pinned to CPU
# $CLIENT_CPU (default 0); with --steer cpu (the default) every connection it makes is
# steered to the worker on that CPU, so one worker holds them all: the worst case for
# one worker, the one --max-conns sizes.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/x86_64-unknown-linux-musl/release/steerd}
conns=${2:-10000}
shift $(($# > 2 ? 2 : $#))
[ -x "$bin" ] || { echo "footprint: no $bin (run scripts/static.sh)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "footprint: python3 is needed for the client" >&2; exit 2; }
ulimit -n $((conns + 1024))

work=$(mktemp -d)
server=""
trap '[ -z "$server" ] || kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
echo ok >"$work/a"
"$bin" serve --listen 127.0.0.1:0 "$@" "$work" 2>"$work/log" &
server=$!
for _ in $(seq 100); do
    want=$(sed -n 's/.*policy [a-z]*, \([0-9]*\) workers.*/\1/p' "$work/log")
    [ -n "$want" ] && [ "$(grep -c 'running on cpu' "$work/log")" -ge "$want" ] && break
    sleep 0.1
done
addr=$(sed -n 's/.*listening on //p' "$work/log" | head -n 1)

rss() { # PID ROLE
    awk -v role="$2" -v pid="$1" '/^VmRSS:/ { r = $2 } /^RssAnon:/ { a = $2 }
        END { printf "  %-10s pid %-7s VmRSS %7d kB  RssAnon %7d kB\n", role, pid, r, a }' "/proc/$1/status"
}
report() {
    echo "$1"
    rss "$server" master
    for w in $(ps -o pid= --ppid "$server"); do
        rss "$w" "worker/$(sed -n 's/^Cpus_allowed_list:\s*//p' "/proc/$w/status")"
    done
}

echo "footprint: $bin, $(stat -c %s "$bin") bytes, serve ${*:-(defaults)}, on $addr"
report "idle:"
taskset -c "${CLIENT_CPU:-0}" python3 - "$addr" "$conns" "$work/held" <<'PY' &
import socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
n, flag = int(sys.argv[2]), sys.argv[3]
held = []
for i in range(n):
    s = socket.create_connection((host, int(port)))
    s.sendall(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
    got = b""
    while b"\r\n\r\nok\n" not in got:
        chunk = s.recv(4096)
        if not chunk:
            sys.exit(f"connection {i} closed early")
        got += chunk
    held.append(s)
open(flag, "w").close()
time.sleep(20)
PY
client=$!
for _ in $(seq 600); do [ -e "$work/held" ] && break; kill -0 $client 2>/dev/null || break; sleep 0.1; done
[ -e "$work/held" ] || { echo "footprint: the client could not open $conns connections" >&2; exit 1; }
report "with $conns open connections:"
kill $client 2>/dev/null || true
wait $client 2>/dev/null || true
