#!/usr/bin/env bash
# Runs one cargo-fuzz target for a bounded time: scripts/fuzz.sh TARGET SECONDS
# Needs the nightly toolchain; installs cargo-fuzz if it is missing. The committed seed
# corpus fuzz/corpus/TARGET is read, never written: new inputs go to
# fuzz/target/corpus/TARGET (ignored by git); crashes land in fuzz/artifacts/TARGET.
set -euo pipefail
if [ $# -ne 2 ]; then
    echo "usage: scripts/fuzz.sh TARGET SECONDS" >&2
    exit 2
fi
target=$1
seconds=$2
cd "$(dirname "$0")/../fuzz"
if ! cargo +nightly fuzz --help >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz
fi
mkdir -p "target/corpus/$target" "corpus/$target"
exec cargo +nightly fuzz run "$target" "target/corpus/$target" "corpus/$target" -- \
    -max_total_time="$seconds"
