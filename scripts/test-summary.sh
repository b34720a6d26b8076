#!/usr/bin/env bash
# scripts/test-summary.sh NAME LOG [SECONDS] - the summary of a `cargo test` run whose
# output is in LOG, as lines starting "NAME:": how many tests ran, passed, failed, were
# ignored, and skipped themselves (passed without checking), then each skip by name and
# reason, and each failure.
#
# A skip is the line `skipped NAME: WHY` that tests/support/skip.rs (and asm-bpf's
# tests/common) append to the file STEERD_SKIP_LOG names, when the run had it set (the
# test scripts and .ci/run set it); without it, the same line as found in LOG, where it
# is written past the test harness's capture: at the start of a line, or after a
# result's `test NAME ... ` (there a line of another process's output written at the
# same moment can hide it).
set -uo pipefail
name=${1:?usage: scripts/test-summary.sh NAME LOG [SECONDS]} log=${2:?usage: scripts/test-summary.sh NAME LOG [SECONDS]}
took=${3:+; $3 s}

sum() { grep -ohE "[0-9]+ $1" "$log" | awk '{ n += $1 } END { print n + 0 }'; }
skips() {
    if [ -n "${STEERD_SKIP_LOG:-}" ] && [ -f "$STEERD_SKIP_LOG" ]; then
        cat "$STEERD_SKIP_LOG"
    else
        grep -oiE '(^|\.\.\. )(skipped|skipping)\b.*' "$log" | sed -E 's/^\.\.\. //'
    fi
}
passed=$(sum passed) failed=$(sum failed) ignored=$(sum ignored)
skipped=$(skips | wc -l)
echo "$name: $((passed + failed)) ran, $passed passed, $failed failed, $ignored ignored; $skipped skipped themselves (passed without checking)$took"
skips | sort | uniq -c | sed "s/^/$name:   /"
grep -E '^test .* \.\.\. FAILED$' "$log" | sed "s/^test \(.*\) \.\.\. FAILED$/$name: failed: \1/"
exit 0  # a report: the caller decides from cargo test's own status
