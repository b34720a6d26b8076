#!/usr/bin/env bash
# scripts/compress-bench.sh - our gzip encoder (src/deflate/) against gzip -1 and gzip -6:
# output size and speed on the example site and a realistic corpus, as the Markdown
# table docs/benchmarks.md carries.
#
#   scripts/compress-bench.sh [ROUNDS]      (default 5; the best round of each is kept)
#
# The corpus is fetched once into target/compress-corpus/: react-dom 18.3.1's UMD
# bundles (a JS bundle, development and minified) from registry.npmjs.org, the npm
# registry's document for `react` (a 4 MB JSON dump; it grows as releases are added, so
# its size is printed with the figures), and Debian's python-policy.html (an HTML page;
# the row is left out where /usr/share/doc lacks it).
#
# Ours: `cargo bench --bench compress` (benches/compress.rs: one write of the whole file,
# in process). gzip: the system's, `gzip -N -n -c FILE > /dev/null`, timed from python3
# around the process, so its figures include a process start (about a millisecond: it
# matters only for the site's small files, whose speed is not printed).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
corpus=target/compress-corpus
mkdir -p "$corpus"
command -v gzip >/dev/null || { echo "compress-bench: gzip is needed" >&2; exit 2; }
command -v python3 >/dev/null || { echo "compress-bench: python3 is needed" >&2; exit 2; }

fetch() { # URL FILE
    [ -s "$2" ] || curl -fsSL --max-time 120 -o "$2" "$1"
}
fetch https://registry.npmjs.org/react-dom/-/react-dom-18.3.1.tgz "$corpus/react-dom.tgz"
[ -s "$corpus/react-dom.development.js" ] || {
    tar -xzf "$corpus/react-dom.tgz" -C "$corpus" package/umd/react-dom.development.js \
        package/umd/react-dom.production.min.js
    mv "$corpus"/package/umd/*.js "$corpus/" && rm -rf "$corpus/package"
}
fetch https://registry.npmjs.org/react "$corpus/react.json"

files=(site/index.html site/404.html site/app.js site/style.css
    "$corpus/react-dom.development.js" "$corpus/react-dom.production.min.js" "$corpus/react.json")
html=/usr/share/doc/python3/python-policy.html
[ -f "$html" ] && files+=("$html")

ours=$(mktemp)
trap 'rm -f "$ours"' EXIT
nice -n 10 cargo bench --quiet --bench compress -- --rounds "$rounds" "${files[@]}" >"$ours"

python3 - "$rounds" "$ours" "${files[@]}" <<'PY'
import os, subprocess, sys, time
rounds, ours_file, files = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
ours = {}
for line in open(ours_file):
    path, n, size, mbps = line.rstrip("\n").split("\t")
    ours[path] = (int(size), float(mbps))

def gzip(level, path):
    best, size = float("inf"), 0
    for _ in range(rounds):
        start = time.perf_counter()
        out = subprocess.run(["gzip", f"-{level}", "-n", "-c", path], check=True,
                             stdout=subprocess.PIPE).stdout
        best = min(best, time.perf_counter() - start)
        size = len(out)
    return size, os.path.getsize(path) / best / 1e6

print("| file | bytes | ours | gzip -6 | gzip -1 | ours / gzip -6 | ours MB/s | gzip -6 MB/s | gzip -1 MB/s |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for path in files:
    n = os.path.getsize(path)
    size, mbps = ours[path]
    g6, s6 = gzip(6, path)
    g1, s1 = gzip(1, path)
    small = n < 64 * 1024
    speed = lambda v: "-" if small else f"{v:.1f}"
    name = path.replace("target/compress-corpus/", "")
    print(f"| {name} | {n:,} | {size:,} | {g6:,} | {g1:,} | {100 * size / g6:.1f}% "
          f"| {speed(mbps)} | {speed(s6)} | {speed(s1)} |")
PY
