#!/usr/bin/env bash
# Builds everything (release) and starts the bundled demo on http://127.0.0.1:20001.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --workspace
bash scripts/install-plugins.sh release
# Traffic with timestamps that end "now": regenerate when missing or stale.
python3 scripts/gen_traffic.py --topology demo --out config/demo/metrics.om --if-stale 600
exec ./target/release/meshlens serve --config config/demo.toml "$@"
