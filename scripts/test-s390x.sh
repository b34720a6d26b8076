#!/usr/bin/env bash
# scripts/test-s390x.sh [CARGO TEST ARGS...] - the tests built for s390x-unknown-linux-musl
# (IBM Z, big-endian, musl) and run under qemu-s390x-static. Without arguments, the CI subset
# (scripts/test-qemu.sh lists it); --workspace runs everything.
exec "$(dirname "$0")/test-qemu.sh" s390x-unknown-linux-musl "$@"
