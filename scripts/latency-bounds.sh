#!/usr/bin/env bash
# scripts/latency-bounds.sh [RUNS] - the latency and ordering bounds under load that the
# suite measures but does not assert (tests/support/bounds.rs), asserted: each test alone
# (one test thread, nothing beside it), RUNS times (default 5), then how many runs held.
# A benchmark for a quiet machine, not a CI check: on a loaded one these say more about the
# load than about steerd.
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
tests=(
    serving::fairness::one_flooding_address_is_refused_and_another_keeps_its_latency
    serving::basic_auth::a_wrong_password_flood_is_limited_and_another_client_keeps_its_latency
    serving::list_dirs::a_big_directory_streams_in_bounded_memory_while_the_worker_answers_others
    serving::event_loop::a_pipelining_flood_does_not_starve_another_client
    serving::binary::slowloris_clients_do_not_delay_others_and_are_cut_at_the_header_timeout
)
cargo test --test tests --no-run -q || exit 1
failed=0
for t in "${tests[@]}"; do
    held=0
    for ((i = 1; i <= runs; i++)); do
        STEERD_LATENCY_BOUNDS=1 cargo test -q --test tests -- --exact "$t" --test-threads=1 \
            >/dev/null 2>&1 && held=$((held + 1))
    done
    echo "$t: held in $held of $runs runs"
    [ "$held" = "$runs" ] || failed=1
done
exit "$failed"
