#!/usr/bin/env python3
"""CPU per byte of a tunnel through steerd: A/B of two ways of running it.

A WebSocket-like upgrade through `steerd serve --proxy '/ws unix:SOCK'` (one worker),
then MB megabytes one way, upstream to client. The figure is the worker process's CPU
time (the sum of its threads' /proc/PID/task/*/schedstat run time, in ns) spent on the
transfer, divided by the bytes moved; the upstream and the client are this script's
threads and are not counted. The two variants run alternately, ROUNDS times each, each
a fresh steerd, and the ratio of the medians is printed with the per-round figures.

    scripts/tunnel-cpu.py STEERD_BINARY [MB] [ROUNDS] [B_BINARY | VAR=VALUE]

Variant A is STEERD_BINARY. Variant B is B_BINARY (two builds, e.g. the copying tunnel
of an earlier main against the spliced one), or STEERD_BINARY run with the environment
variable VAR=VALUE set (default STEERD_TUNNEL_SPLICE=1, which the prototype in
docs/history/2026-tunnel-splice-prototype.patch reads). Every
byte received is compared with the pattern sent at its offset in the stream, so a
variant that loses, repeats or reorders bytes fails.
"""

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

BLOCK = 1 << 18


def pattern():
    return bytes((i * 7 + 3) & 0xFF for i in range(BLOCK))


def upstream(sock_path, total, ready):
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(sock_path)
    srv.listen(4)
    ready.set()
    conn, _ = srv.accept()
    head = b""
    while b"\r\n\r\n" not in head:
        head += conn.recv(4096)
    conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
    block = pattern()
    sent = 0
    while sent < total:
        n = min(BLOCK, total - sent)
        conn.sendall(block[:n])
        sent += n
    conn.close()
    srv.close()


def cpu_ns(pid):
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
            total += int(f.read().split()[0])
    return total


def worker_of(master):
    for _ in range(500):
        kids = subprocess.run(["pgrep", "-P", str(master)], capture_output=True, text=True).stdout.split()
        if kids:
            return int(kids[0])
        time.sleep(0.01)
    raise SystemExit("no worker")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def one(binary, total, env_extra):
    tmp = tempfile.mkdtemp(prefix="tunnel-cpu-")
    sock_path = os.path.join(tmp, "up.sock")
    root = os.path.join(tmp, "root")
    os.mkdir(root)
    ready = threading.Event()
    t = threading.Thread(target=upstream, args=(sock_path, total, ready), daemon=True)
    t.start()
    ready.wait(10)
    port = free_port()
    env = dict(os.environ)
    env.update(env_extra)
    proc = subprocess.Popen(
        [binary, "serve", root, "--listen", f"127.0.0.1:{port}", "--workers", "1",
         "--proxy", f"/ws unix:{sock_path}"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        worker = worker_of(proc.pid)
        for _ in range(500):
            try:
                c = socket.create_connection(("127.0.0.1", port))
                break
            except OSError:
                time.sleep(0.01)
        c.sendall(b"GET /ws HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
        buf = bytearray(1 << 20)
        view = memoryview(buf)
        head = b""
        while b"\r\n\r\n" not in head:
            n = c.recv_into(buf, 1)
            head += bytes(view[:n])
        assert head.startswith(b"HTTP/1.1 101"), head
        before = cpu_ns(worker)
        got = 0
        block = pattern()
        while got < total:
            n = c.recv_into(buf)
            if n == 0:
                break
            # Byte-exact: every received byte equals the pattern at its stream offset.
            at = got % BLOCK
            chunk = bytes(view[:n])
            i = 0
            while i < n:
                k = min(n - i, BLOCK - at)
                if chunk[i:i + k] != block[at:at + k]:
                    raise SystemExit(f"bytes differ near offset {got + i}")
                i += k
                at = 0
            got += n
        after = cpu_ns(worker)
        c.close()
        assert got == total, (got, total)
        return (after - before) / total
    finally:
        proc.terminate()
        proc.wait(10)


def main():
    binary = sys.argv[1]
    mb = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    var = sys.argv[4] if len(sys.argv) > 4 else "STEERD_TUNNEL_SPLICE=1"
    if "=" in var:
        k, v = var.split("=", 1)
        b_binary, b_env = binary, {k: v}
    else:
        b_binary, b_env = var, {}
    total = mb << 20
    a, b = [], []
    for r in range(rounds):
        a.append(one(binary, total, {}))
        b.append(one(b_binary, total, b_env))
        print(f"round {r}: A {a[-1]:.3f} ns/byte, B {b[-1]:.3f} ns/byte", flush=True)
    ma, mb_ = statistics.median(a), statistics.median(b)
    print(f"median A {ma:.3f} ns/byte, B ({var}) {mb_:.3f} ns/byte, B/A {mb_ / ma:.3f}")


if __name__ == "__main__":
    main()
