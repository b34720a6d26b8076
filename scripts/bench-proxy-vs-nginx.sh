#!/usr/bin/env bash
# A small proxied response through steerd (`--proxy` to a unix socket) against the same
# through nginx (`proxy_pass` to the same socket, `keepalive` upstream), one worker each,
# keep-alive clients, in one alternating `steerd bench ab` run with its statistic; then
# static files with `--proxy` rules configured against without (against BASE, another
# steerd binary such as main's, when given). Not part of the test suite or CI: it takes
# minutes and its figures depend on the machine. See docs/benchmarks.md.
#
#   scripts/bench-proxy-vs-nginx.sh
#   ROUNDS=10 DUR=2 C=20 PORT=18490 BASE=/path/to/main/steerd scripts/bench-proxy-vs-nginx.sh
#   BUILD=0 UPSTREAM=target/release/deps/unix_upstream-HASH ...   (use the binaries built)
#
# The upstream is `benches/unix_upstream.rs` (one epoll thread, a fixed 13-byte answer):
# fast enough that neither proxy waits on it. Everything it starts lives in a temporary
# directory; `steerd bench ab` stops every server it started, by process group.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-10}
DUR=${DUR:-2}
WARMUP=${WARMUP:-0.5s}
PORT=${PORT:-18490}
C=${C:-20}
OUT=${OUT:-target/bench-proxy-vs-nginx}
BASE=${BASE:-}

command -v nginx >/dev/null || {
    echo "nginx is missing: apt-get install nginx-light" >&2
    exit 1
}
nginx -v 2>&1

echo "== build"
if [ "${BUILD:-1}" = 1 ]; then
    cargo build --release -q -p steerd
fi
BIN=$PWD/target/release/steerd
UPSTREAM=${UPSTREAM:-$(cargo bench --bench unix_upstream --no-run 2>&1 |
    grep -o 'target/release/deps/unix_upstream-[0-9a-f]*' | head -1)}
[ -x "$UPSTREAM" ] || {
    echo "no unix_upstream bench binary" >&2
    exit 1
}
mkdir -p "$OUT"

T=$(mktemp -d /tmp/steerd-proxy-bench.XXXXXX)
chmod 755 "$T"
UP_PID=
trap '[ -n "$UP_PID" ] && kill "$UP_PID" 2>/dev/null; rm -rf "$T"' EXIT
mkdir -p "$T/www" "$T/logs"
printf 'Hello, world!' >"$T/www/13b"
chmod 644 "$T/www/13b"

"$UPSTREAM" "$T/up.sock" &
UP_PID=$!
for _ in $(seq 50); do [ -S "$T/up.sock" ] && break; sleep 0.1; done
chmod 666 "$T/up.sock"

# One worker on CPU 0, as steerd's; keep-alive to the upstream (HTTP/1.1, no
# `Connection` passed on), 32 idle connections kept as steerd keeps.
cat >"$T/nginx.conf" <<EOF
worker_processes 1;
worker_cpu_affinity 01;
daemon off;
master_process on;
pid $T/nginx.pid;
error_log $T/logs/error.log;
events { worker_connections 4096; }
http {
    access_log off;
    tcp_nodelay on;
    keepalive_requests 1000000;
    client_body_temp_path $T/client_body;
    proxy_temp_path $T/proxy;
    fastcgi_temp_path $T/fastcgi;
    uwsgi_temp_path $T/uwsgi;
    scgi_temp_path $T/scgi;
    upstream app {
        server unix:$T/up.sock;
        keepalive 32;
        keepalive_requests 1000000;
    }
    server {
        listen 127.0.0.1:$PORT reuseport backlog=4096;
        root $T/www;
        location /api/ {
            proxy_pass http://app;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
EOF

NGINX=(nginx -p "$T/" -c "$T/nginx.conf" -e "$T/logs/error.log")
PROXY_RULE="/api/** unix:$T/up.sock"
STEERD=("$BIN" serve "$T/www" --workers 1 --cpus 0 --listen "127.0.0.1:$PORT")
STEERD_PROXY=("${STEERD[@]}" --proxy "$PROXY_RULE")
UAPI="http://127.0.0.1:$PORT/api/hello"
U13="http://127.0.0.1:$PORT/13b"
COMMON=(--rounds "$ROUNDS" --warmup "$WARMUP" -d "$DUR" --pin 0,1 -c "$C")

# ab NAME AB_ARGS... -- A... -- B...: prints the exact command, keeps the report.
ab() {
    local name=$1
    shift
    echo
    echo "### $name"
    echo "\$ steerd bench ab $*" | sed "s|$T|\$T|g; s|$BIN|steerd|g"
    "$BIN" bench ab "$@" | tee "$OUT/$name.txt"
}

echo "== machine"
echo "$(nproc) CPUs, $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
uptime
curl -sf "$UAPI" >/dev/null 2>&1 || true

echo "== a proxied 13-byte answer: nginx (A) against steerd (B)"
ab proxy-nginx-vs-steerd "${COMMON[@]}" --syscalls "$UAPI" -- "${NGINX[@]}" -- "${STEERD_PROXY[@]}"

echo "== a static file: without (A) and with (B) a --proxy rule"
ab static-proxy-rules "${COMMON[@]}" "$U13" -- "${STEERD[@]}" -- "${STEERD_PROXY[@]}"
if [ -n "$BASE" ]; then
    BASE_CMD=("$BASE" "${STEERD[@]:1}")
    ab static-base-vs-proxy-rules "${COMMON[@]}" "$U13" -- "${BASE_CMD[@]}" -- "${STEERD_PROXY[@]}"
fi

uptime
echo
echo "reports in $OUT/"
