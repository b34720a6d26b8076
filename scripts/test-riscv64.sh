#!/usr/bin/env bash
# scripts/test-riscv64.sh [CARGO TEST ARGS...] - the tests built for riscv64gc-unknown-linux-gnu
# (RISC-V 64, static glibc) and run under qemu-riscv64-static. Without arguments, the CI subset
# (scripts/test-qemu.sh lists it); --workspace runs everything.
exec "$(dirname "$0")/test-qemu.sh" riscv64gc-unknown-linux-gnu "$@"
