#!/usr/bin/env bash
# Builds what the demo runs (release): the `meshlens` binary and the bundled plugins, nothing
# else (no test crate, no test plugins), and starts the bundled demo on http://127.0.0.1:20001.
# Its traffic is simulated live by the `simulator` backend (config/demo/topology.toml).
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(-p meshlens)
# plugins/ holds only plugins: every crate directly under it is a bundled one (testing/ and
# examples/ are folders of their own).
for manifest in plugins/*/Cargo.toml; do
  packages+=(-p "$(basename "$(dirname "$manifest")")")
done
cargo build --release "${packages[@]}"
bash scripts/install-plugins.sh release
exec ./target/release/meshlens serve --config config/demo.toml "$@"
