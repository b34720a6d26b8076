#!/usr/bin/env bash
# scripts/cold-disk.sh - a cold download through a throttled disk, and what it does to a
# small cached file on the same worker. steerd and nginx (`sendfile on; aio threads;`) in
# the same run. A benchmark, not a test (tests/serve/cold_disk.rs is the test).
#
#   scripts/cold-disk.sh [STEERD] [SIZE_MB] [RATE_MB] [DOWNLOADS]
#       STEERD     default ${CARGO_TARGET_DIR:-target}/release/steerd
#       SIZE_MB    size of each large file, default 200
#       RATE_MB    the disk's read throttle in MB/s (10^6 bytes), default 20
#       DOWNLOADS  concurrent cold downloads of different files, default 1 (4: fairness)
#
# For each server: one worker, serving a directory on the disk the files live on; every
# large file's pages are dropped first (fsync + posix_fadvise(POSIX_FADV_DONTNEED)), the
# server runs in a child blkio cgroup (cgroup v1 blkio.throttle.read_bps_device, or v2
# io.max) that limits reads from that disk to RATE_MB, removed after. While DOWNLOADS
# clients each download one large file, a second client asks for a 13-byte cached file
# every 20 ms on one keep-alive connection. Printed: the small file's p50/p99/max in ms
# over the downloads, and each download's rate in MB/s with its share of the throttle;
# on stderr, the reads steerd handed to its I/O threads and their mean wait (/metrics).
# Needs root (the cgroup), python3, and nginx-light for the comparison.
set -euo pipefail
BIN=$(realpath "${1:-${CARGO_TARGET_DIR:-target}/release/steerd}")
SIZE_MB=${2:-200}
RATE_MB=${3:-20}
DOWNLOADS=${4:-1}
DIR=$(mktemp -d "${COLD_DIR:-/var/tmp}/cold-disk.XXXXXX")
CG=""
SERVER=""
cleanup() {
  [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null || true
  [ -n "$CG" ] && rmdir "$CG" 2>/dev/null || true
  rm -rf "$DIR"
}
trap cleanup EXIT
DEV=$(lsblk -no MAJ:MIN "$(df --output=source "$DIR" | tail -1)" | head -1 | tr -d ' ')
BPS=$((RATE_MB * 1000000))
chmod 755 "$DIR"   # nginx's workers (www-data) read it
mkdir -p "$DIR/www"
printf 'hello, world\n' > "$DIR/www/index.html"
for i in $(seq 1 "$DOWNLOADS"); do
  head -c $((SIZE_MB * 1048576)) /dev/urandom > "$DIR/www/big$i.bin"
done
sync

make_cgroup() {
  if [ -w /sys/fs/cgroup/blkio/cgroup.procs ]; then
    CG=/sys/fs/cgroup/blkio/steerd-cold-$$
    mkdir "$CG"
    echo "$DEV $BPS" > "$CG/blkio.throttle.read_bps_device"
  elif [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw io /sys/fs/cgroup/cgroup.controllers; then
    CG=/sys/fs/cgroup/steerd-cold-$$
    mkdir "$CG"
    echo "+io" > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
    echo "$DEV rbps=$BPS" > "$CG/io.max"
  else
    echo "cold-disk: neither cgroup v1 blkio nor v2 io.max is available" >&2
    exit 1
  fi
}

drop_pages() {
  python3 - "$DIR/www" <<'PY'
import os, sys
for name in os.listdir(sys.argv[1]):
    if name.startswith("big"):
        fd = os.open(os.path.join(sys.argv[1], name), os.O_RDONLY)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
PY
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# $1 = label, $2 = port: the measurement, printed as one table row.
measure() {
  python3 - "$1" "$2" "$DOWNLOADS" "$SIZE_MB" "$RATE_MB" <<'PY'
import socket, sys, threading, time
label, port, n, size_mb, rate_mb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
rates, done = [None] * n, threading.Event()
def download(i):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(f"GET /big{i+1}.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    t0, got = time.monotonic(), 0
    while True:
        b = s.recv(1 << 20)
        if not b:
            break
        got += len(b)
    rates[i] = got / 1e6 / (time.monotonic() - t0)
threads = [threading.Thread(target=download, args=(i,)) for i in range(n)]
for t in threads:
    t.start()
lat = []
s = socket.create_connection(("127.0.0.1", port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
time.sleep(0.2)
while any(t.is_alive() for t in threads):
    t0 = time.monotonic()
    s.sendall(b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n")
    buf = b""
    while not buf.endswith(b"hello, world\n"):
        buf += s.recv(4096)
    lat.append((time.monotonic() - t0) * 1000)
    time.sleep(0.02)
for t in threads:
    t.join()
if not lat or None in rates:
    sys.exit(f"cold-disk: {label}: a download failed or ended before the first small request")
lat.sort()
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
share = " ".join(f"{r:.1f}" for r in rates)
fair = rate_mb / n
print(f"| {label} | {q(0.5):.2f} | {q(0.99):.2f} | {lat[-1]:.2f} | {len(lat)} | {share} | "
      + " ".join(f"{100*r/fair:.0f}%" for r in rates) + " |")
PY
}

# $1 = label, rest = command: run it in the cgroup, measure, stop it.
run_server() {
  local label=$1 port=$2; shift 2
  drop_pages
  sh -c 'echo $$ > "$0/cgroup.procs"; exec "$@"' "$CG" "$@" >"$DIR/$label.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 100); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1',$port)).close()" 2>/dev/null && break
    sleep 0.05
  done
  measure "$label" "$port"
  if [ "$label" = steerd ]; then
    python3 - "$MPORT" <<'PY' >&2
import sys, urllib.request
text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics").read().decode()
get = lambda n: sum(float(l.rsplit(" ", 1)[1]) for l in text.splitlines() if l.startswith(n + "{"))
n, s = get("steerd_disk_read_wait_seconds_count"), get("steerd_disk_read_wait_seconds_sum")
print(f"cold-disk: steerd handed off {n:.0f} reads, mean wait {1000 * s / max(n, 1):.1f} ms")
PY
  fi
  kill "$SERVER" 2>/dev/null || true
  wait "$SERVER" 2>/dev/null || true
  SERVER=""
}

make_cgroup
echo "cold-disk: $DOWNLOADS x ${SIZE_MB} MB cold, disk $DEV throttled to $RATE_MB MB/s; $(uname -r); $(lscpu | sed -n 's/^Model name: *//p')"
echo "| server | small p50 ms | p99 ms | max ms | requests | download MB/s | share of fair |"
echo "|---|---|---|---|---|---|---|"
PORT=$(free_port)
MPORT=$(free_port)
run_server steerd "$PORT" "$BIN" serve "$DIR/www" --listen "127.0.0.1:$PORT" --workers 1 \
  --metrics "127.0.0.1:$MPORT"
if command -v nginx >/dev/null; then
  PORT=$(free_port)
  mkdir -p "$DIR/nginx"
  cat > "$DIR/nginx/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $DIR/nginx/pid;
error_log $DIR/nginx/error.log;
events { worker_connections 1024; }
thread_pool default threads=32 max_queue=65536;
http {
  access_log off;
  sendfile on;
  aio threads;
  client_body_temp_path $DIR/nginx;
  proxy_temp_path $DIR/nginx;
  fastcgi_temp_path $DIR/nginx;
  uwsgi_temp_path $DIR/nginx;
  scgi_temp_path $DIR/nginx;
  server { listen 127.0.0.1:$PORT; root $DIR/www; }
}
CONF
  run_server "nginx aio threads" "$PORT" nginx -c "$DIR/nginx/nginx.conf" -e "$DIR/nginx/error.log"
else
  echo "cold-disk: no nginx on PATH (Debian package nginx-light): steerd only" >&2
fi
