#!/usr/bin/env bash
# Runs every test. Installs what the tests need (Debian's prometheus, chromium and chromium-driver
# packages, victoria-metrics, openssl for the in-cluster tests' certificate, and wrk for the
# load tests) when missing. Test traffic comes from the Rust simulation library (no Python).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1 \
  || ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1 \
  || ! command -v victoria-metrics >/dev/null 2>&1 || ! command -v openssl >/dev/null 2>&1 \
  || ! command -v wrk >/dev/null 2>&1; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  # chromium + chromium-driver: the console's browser tests (tests/tests/console/);
  # wrk: the load tests (tests/tests/process/load.rs) and the load benchmark.
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends prometheus chromium chromium-driver victoria-metrics openssl wrk
fi
# Build once: the tests take the binary and the plugin libraries from target/debug/ and
# never run cargo themselves (tests/src/server.rs::ensure_built names this command when
# something is missing). The out-of-tree appender example is its own workspace
# (tests/tests/process/graph_custom_appender.rs loads it from this target folder).
cargo build --workspace
cargo build --manifest-path plugins/examples/error-threshold/Cargo.toml \
  --target-dir target/tmp/example-error-threshold
cargo test --workspace --no-fail-fast "$@"
