#!/usr/bin/env bash
# scripts/test-arm64.sh [CARGO TEST ARGS...] - the tests built for aarch64-unknown-linux-musl
# (prebuilt std, linked by rust-lld) and run under qemu-aarch64-static: with no arguments the
# CI subset every emulated CPU runs, `--workspace` for the whole suite; scripts/test-qemu.sh
# says how, and what user-mode QEMU cannot show.
exec "$(dirname "$0")/test-qemu.sh" aarch64-unknown-linux-musl "$@"
