#!/usr/bin/env bash
# steerd side by side with nginx and with the reference responder, every comparison an
# alternating `steerd bench ab` with its statistic. Not part of the test suite or CI:
# it takes minutes and its figures depend on the machine. See docs/benchmarks.md.
#
#   scripts/bench-vs-nginx.sh            (or: just bench-vs-nginx)
#   ROUNDS=10 DUR=2 WARMUP=0.5s PORT=18480 OUT=target/bench-vs-nginx scripts/bench-vs-nginx.sh
#   PART=table ROUNDS=6 scripts/bench-vs-nginx.sh   (only the table of docs/benchmarks.md:
#       steerd against the steered responder, nginx, lighttpd and h2o; keep-alive, close,
#       1 MiB and 10,000 connections)
#
# Installs nginx, lighttpd, h2o, wrk and strace from Debian if missing. Everything it starts lives in
# a temporary directory (nginx prefix, config, pid and log files, the served files) on
# loopback ports, and `steerd bench ab` stops every server it started, by process group.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-10}
DUR=${DUR:-2}
WARMUP=${WARMUP:-0.5s}
PORT=${PORT:-18480}
MPORT=$((PORT + 1))
OUT=${OUT:-target/bench-vs-nginx}
RATE=${RATE:-20000}
PART=${PART:-all}

echo "== packages"
missing=()
for pair in nginx:nginx lighttpd:lighttpd h2o:h2o wrk:wrk strace:strace; do
    command -v "${pair%%:*}" >/dev/null || missing+=("${pair##*:}")
done
if ((${#missing[@]})); then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
nginx -v 2>&1
lighttpd -v 2>&1 | head -1
h2o --version 2>&1 | head -1
wrk --version 2>&1 | head -1 || true

echo "== build"
cargo build --release -q -p steerd
BIN=$PWD/target/release/steerd
mkdir -p "$OUT"

# Ten thousand connections need file descriptors on both sides.
ulimit -n "$(ulimit -Hn)"

T=$(mktemp -d /tmp/steerd-bench.XXXXXX)
chmod 755 "$T"
RESP_PID=
trap '[ -n "$RESP_PID" ] && kill "$RESP_PID" 2>/dev/null; rm -rf "$T"' EXIT
mkdir -p "$T/www" "$T/logs"
printf 'Hello, world!' >"$T/www/13b"
head -c 1048576 /dev/urandom >"$T/www/1m"
chmod 644 "$T/www/"*

# The configuration of notes/benchmarking.md, with its own prefix, pid and log files.
cat >"$T/nginx.conf" <<EOF
worker_processes 2;
worker_cpu_affinity auto;
worker_rlimit_nofile 20000;
daemon off;
master_process on;
pid $T/nginx.pid;
error_log $T/logs/error.log;
events { worker_connections 16384; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    open_file_cache max=1000 inactive=60s;
    open_file_cache_valid 60s;
    open_file_cache_min_uses 1;
    keepalive_requests 1000000;
    default_type application/octet-stream;
    client_body_temp_path $T/client_body;
    proxy_temp_path $T/proxy;
    fastcgi_temp_path $T/fastcgi;
    uwsgi_temp_path $T/uwsgi;
    scgi_temp_path $T/scgi;
    server {
        listen 127.0.0.1:$PORT reuseport backlog=4096;
        root $T/www;
    }
}
EOF

# lighttpd and h2o set up as nginx is: 2 workers (threads for h2o), sendfile, no
# access log, keep-alive without a request limit, descriptors for 10,000 connections.
cat >"$T/lighttpd.conf" <<EOF
server.document-root = "$T/www"
server.bind = "127.0.0.1"
server.port = $PORT
server.max-worker = 2
server.max-fds = 40000
server.max-connections = 16384
server.max-keep-alive-requests = 1000000
server.max-keep-alive-idle = 60
server.network-backend = "sendfile"
server.pid-file = "$T/lighttpd.pid"
server.errorlog = "$T/logs/lighttpd.error.log"
EOF
cat >"$T/h2o.conf" <<EOF
listen:
  host: 127.0.0.1
  port: $PORT
num-threads: 2
max-connections: 20000
user: root
error-log: $T/logs/h2o.error.log
hosts:
  "default":
    paths:
      /:
        file.dir: $T/www
EOF

NGINX=(nginx -p "$T/" -c "$T/nginx.conf" -e "$T/logs/error.log")
LIGHTTPD=(lighttpd -D -f "$T/lighttpd.conf")
H2O=(h2o -c "$T/h2o.conf")
RESP=("$BIN" bench responder --listen "127.0.0.1:$PORT" --cpus 0,1)
RESP_CLOSE=("${RESP[@]}" --close)
# Steered like steerd --steer cpu: the reference steerd is measured against.
RESP_STEER=("${RESP[@]}" --steer)
RESP_STEER_CLOSE=("${RESP[@]}" --close --steer)
steerd_cmd() { # steerd_cmd [extra serve flags...]
    echo "$BIN" serve "$T/www" --workers 2 --listen "127.0.0.1:$PORT" --metrics "127.0.0.1:$MPORT" "$@"
}
read -r -a STEERD <<<"$(steerd_cmd)"
U13="http://127.0.0.1:$PORT/13b"
U1M="http://127.0.0.1:$PORT/1m"
COMMON=(--rounds "$ROUNDS" --warmup "$WARMUP" -d "$DUR" --pin 0,1)

# ab NAME AB_ARGS... -- A... -- B...: prints the exact command, keeps the report.
ab() {
    local name=$1
    shift
    echo
    echo "### $name"
    echo "\$ steerd bench ab $*" | sed "s|$T|\$T|g; s|$BIN|steerd|g"
    "$BIN" bench ab "$@" | tee "$OUT/$name.txt"
}

# Does this build serve files? (steerd serve lands on main separately from bench.)
steerd_serves() {
    "${STEERD[@]}" >/dev/null 2>&1 &
    local pid=$! ok=1
    for _ in $(seq 50); do
        if curl -sf -o /dev/null "$U13"; then ok=0; break; fi
        sleep 0.1
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    return $ok
}

echo "== machine"
echo "$(nproc) CPUs, $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
uptime

if [ "$PART" = table ]; then
    # The steered responder answers 13 canned bytes to anything, so it has no 1 MiB row.
    ab table-ka-responder "${COMMON[@]}" -c 50 --syscalls "$U13" -- "${RESP_STEER[@]}" -- "${STEERD[@]}"
    ab table-close-responder "${COMMON[@]}" -c 50 --close --syscalls "$U13" -- "${RESP_STEER_CLOSE[@]}" -- "${STEERD[@]}"
    ab table-10k-responder "${COMMON[@]}" -c 10000 "$U13" -- "${RESP_STEER[@]}" -- "${STEERD[@]}"
    for peer in NGINX LIGHTTPD H2O; do
        declare -n P=$peer
        name=$(echo "$peer" | tr 'A-Z' 'a-z')
        ab "table-ka-$name" "${COMMON[@]}" -c 50 --syscalls "$U13" -- "${P[@]}" -- "${STEERD[@]}"
        ab "table-close-$name" "${COMMON[@]}" -c 50 --close --syscalls "$U13" -- "${P[@]}" -- "${STEERD[@]}"
        ab "table-1m-$name" "${COMMON[@]}" -c 10 "$U1M" -- "${P[@]}" -- "${STEERD[@]}"
        ab "table-10k-$name" "${COMMON[@]}" -c 10000 "$U13" -- "${P[@]}" -- "${STEERD[@]}"
    done
    uptime
    echo
    echo "reports in $OUT/"
    exit 0
fi

echo "== client CPU per request: steerd bench load against wrk, alternating, on the responder"
# wrk takes whole seconds: both clients run for DUR rounded up.
WDUR=$(awk -v d="$DUR" 'BEGIN { x = int(d); if (x < d) x++; if (x < 1) x = 1; print x }')
"${RESP[@]}" >/dev/null &
RESP_PID=$!
sleep 0.3
: >"$OUT/client-cpu-wrk.txt"
: >"$OUT/client-cpu-steerd.txt"
for _ in $(seq 5); do
    # wrk: user+system from /usr/bin/time over the requests it reports.
    w=$( { /usr/bin/time -f 'cpu %U %S' wrk -t1 -c50 -d"${WDUR}s" "$U13" >"$T/wrk.out"; } 2>&1)
    n=$(awk '/requests in/ {print $1}' "$T/wrk.out")
    echo "$w" | awk -v n="$n" '/^cpu/ {printf "%.4f\n", ($2 + $3) * 1e6 / n}' >>"$OUT/client-cpu-wrk.txt"
    s=$( { /usr/bin/time -f 'cpu %U %S' "$BIN" bench load "$U13" -t 1 -c 50 -d "$WDUR" --json >"$T/load.out"; } 2>&1)
    n=$(grep -o '"merged":{"cpu":[^,]*,"requests":[0-9]*' "$T/load.out" | grep -o '[0-9]*$')
    echo "$s" | awk -v n="$n" '/^cpu/ {printf "%.4f\n", ($2 + $3) * 1e6 / n}' >>"$OUT/client-cpu-steerd.txt"
done
kill "$RESP_PID"
wait "$RESP_PID" 2>/dev/null || true
RESP_PID=
echo "A = wrk, B = steerd bench load (us of client CPU per request; /usr/bin/time)"
"$BIN" bench stats "$OUT/client-cpu-wrk.txt" "$OUT/client-cpu-steerd.txt" | tee "$OUT/client-cpu.txt"

echo "== the reference: nginx (A) against the responder (B)"
ab ka-nginx-vs-responder "${COMMON[@]}" -c 50 --syscalls "$U13" -- "${NGINX[@]}" -- "${RESP[@]}"
ab close-nginx-vs-responder "${COMMON[@]}" -c 50 --close --syscalls "$U13" -- "${NGINX[@]}" -- "${RESP_CLOSE[@]}"

if ! steerd_serves; then
    echo
    echo "steerd serve did not answer $U13 in this build: only the nginx/responder figures above."
    exit 0
fi

echo "== nginx (A) against steerd (B)"
ab ka-nginx-vs-steerd "${COMMON[@]}" -c 50 --syscalls "$U13" -- "${NGINX[@]}" -- "${STEERD[@]}"
ab close-nginx-vs-steerd "${COMMON[@]}" -c 50 --close --syscalls "$U13" -- "${NGINX[@]}" -- "${STEERD[@]}"
ab 1m-nginx-vs-steerd "${COMMON[@]}" -c 10 "$U1M" -- "${NGINX[@]}" -- "${STEERD[@]}"
ab 10k-nginx-vs-steerd "${COMMON[@]}" -c 10000 "$U13" -- "${NGINX[@]}" -- "${STEERD[@]}"
ab rate-nginx-vs-steerd "${COMMON[@]}" -c 200 --rate "$RATE" "$U13" -- "${NGINX[@]}" -- "${STEERD[@]}"

echo "== steerd (B) as a fraction of the steered responder (A)"
ab ka-responder-vs-steerd "${COMMON[@]}" -c 50 "$U13" -- "${RESP_STEER[@]}" -- "${STEERD[@]}"
ab close-responder-vs-steerd "${COMMON[@]}" -c 50 --close "$U13" -- "${RESP_STEER_CLOSE[@]}" -- "${STEERD[@]}"

echo "== steering: hash (A) against cpu (B), numa (A) against cpu (B)"
read -r -a S_CPU <<<"$(steerd_cmd --steer cpu)"
read -r -a S_HASH <<<"$(steerd_cmd --steer hash)"
read -r -a S_NUMA <<<"$(steerd_cmd --steer numa)"
ab steer-hash-vs-cpu "${COMMON[@]}" -c 50 "$U13" -- "${S_HASH[@]}" -- "${S_CPU[@]}"
ab steer-numa-vs-cpu "${COMMON[@]}" -c 50 "$U13" -- "${S_NUMA[@]}" -- "${S_CPU[@]}"
ab steer-hash-vs-cpu-close "${COMMON[@]}" -c 50 --close "$U13" -- "${S_HASH[@]}" -- "${S_CPU[@]}"

echo
echo "reports in $OUT/"
