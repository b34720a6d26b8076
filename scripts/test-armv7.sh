#!/usr/bin/env bash
# scripts/test-armv7.sh [CARGO TEST ARGS...] - the tests built for armv7-unknown-linux-musleabihf
# (32-bit ARM, hard float, musl) and run under qemu-arm-static. Without arguments, the CI subset
# (scripts/test-qemu.sh lists it); --workspace runs everything.
exec "$(dirname "$0")/test-qemu.sh" armv7-unknown-linux-musleabihf "$@"
