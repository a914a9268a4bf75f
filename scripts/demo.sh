#!/usr/bin/env bash
# Builds everything (release) and starts the bundled demo on http://127.0.0.1:20001.
# Its traffic is simulated live by the `simulator` backend (config/demo/topology.toml).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --workspace
bash scripts/install-plugins.sh release
exec ./target/release/meshlens serve --config config/demo.toml "$@"
