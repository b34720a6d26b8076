# Recipes for contributors. Each calls a script or cargo, so CI needs no `just`.

# The whole test suite (what CI runs).
test:
    scripts/test.sh --workspace

# Formatting and lints, warnings denied.
lint:
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets -- -D warnings

# Run one fuzz target for SECONDS (needs nightly and cargo-fuzz).
fuzz TARGET SECONDS="60":
    scripts/fuzz.sh {{TARGET}} {{SECONDS}}

# Static binaries (x86-64 static-pie and musl, aarch64, armv7 and s390x musl, riscv64
# static glibc) with stripped sizes; the cross toolchains they need: scripts/cross.sh.
static:
    scripts/static.sh

# Benchmarks.
bench:
    cargo bench

# Syscalls per request of one worker (strace -c while wrk runs), keep-alive and close.
syscalls SECONDS="5":
    cargo build --release -p steerd
    scripts/syscalls.sh target/release/steerd {{SECONDS}}

# What one request costs a server (syscalls by tracepoint, user/system time): see the script.
per-request PORT *SERVER:
    scripts/per-request.sh {{PORT}} -- {{SERVER}}

# The serve loop's user-space instructions per request under callgrind (see the script).
serve-instructions *WORKLOADS:
    scripts/serve-instructions.sh {{WORKLOADS}}

# The responder sending steerd's own response, and doing N steps of work per request:
# the price of a real head and of a server's own work here (alternating A/B; not CI).
responder-calibration *SPINS:
    scripts/responder-calibration.sh {{SPINS}}

# steerd against nginx and the reference responder (alternating A/B, minutes; not CI).
bench-vs-nginx:
    scripts/bench-vs-nginx.sh

# The VM tests alone (emulated NUMA machines; needs QEMU and the static build).
vm:
    scripts/static.sh
    cargo test -p steerd --test tests vm::guests:: -- --nocapture

# Request parser against httparse on httparse's own inputs (ratios in the same run).
bench-parser:
    cargo bench --bench parser

# Our gzip encoder against gzip -1 and gzip -6: size and MB/s on the site and a corpus.
compress-bench:
    scripts/compress-bench.sh

# The CI subset built for aarch64 and run under qemu-aarch64-static; `just test-arm64
# --workspace` for the whole suite.
test-arm64 *ARGS:
    scripts/test-arm64.sh {{ARGS}}

# The latency and ordering bounds under load the suite measures but does not assert,
# asserted, each test alone RUNS times (docs/ci.md).
latency-bounds RUNS="5":
    scripts/latency-bounds.sh {{RUNS}}

# The CI subset built for 32-bit ARM, RISC-V and s390x and run under their user-mode QEMU.
test-armv7:
    scripts/test-armv7.sh
test-riscv64:
    scripts/test-riscv64.sh
test-s390x:
    scripts/test-s390x.sh

# What an idle keep-alive connection costs steerd and nginx at 1,000, 10,000 and as many
# connections as the descriptor limit allows, and the RSS 30 s after they closed; a count
# busy:N (e.g. busy:30000) instead keeps N connections busy for 10 s and reports peak RSS.
conn-memory *COUNTS:
    cargo build --release -p steerd
    scripts/conn-memory.sh "${CARGO_TARGET_DIR:-target}/release/steerd" {{COUNTS}}

# Resident memory of an idle 1-worker server for each static build (docs/appliance.md).
idle-rss:
    scripts/idle-rss.sh
