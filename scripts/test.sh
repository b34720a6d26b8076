#!/usr/bin/env bash
# scripts/test.sh [CARGO TEST ARGS...] - `cargo test` with these arguments (default
# --workspace), its output as it comes, then scripts/test-summary.sh's lines: the counts,
# and every test that skipped itself, by name and reason. Exits as cargo test did.
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- --workspace
log=$(mktemp)
STEERD_SKIP_LOG=$(mktemp) && export STEERD_SKIP_LOG
trap 'rm -f "$log" "$STEERD_SKIP_LOG"' EXIT
start=$(date +%s)
cargo test "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
scripts/test-summary.sh test "$log" "$(($(date +%s) - start))"
exit "$rc"
