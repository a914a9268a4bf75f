#!/usr/bin/env bash
# Refreshes the console's third-party JavaScript from the npm registry at the pinned versions
# below, with each package's licence, and records their checksums in SHA256SUMS.
# Needs `npm` (only to run this script; building, running and testing meshlens never needs Node).
# Usage: bash scripts/vendor-console.sh          (re-download and rewrite)
#        bash scripts/vendor-console.sh --check  (verify the committed files against SHA256SUMS)
set -euo pipefail
cd "$(dirname "$0")/.."
out=host/console/vendor

if [ "${1:-}" = "--check" ]; then
  cd "$out" && sha256sum --quiet -c SHA256SUMS && echo "vendor files match SHA256SUMS"
  exit
fi

# package@version  files to copy (paths inside the package)
pins=(
  "cytoscape@3.34.4        dist/cytoscape.min.js"
  "dagre@0.8.5             dist/dagre.min.js"
  "cytoscape-dagre@2.5.0   cytoscape-dagre.js"
  "layout-base@2.0.1       layout-base.js"
  "cose-base@2.2.0         cose-base.js"
  "cytoscape-fcose@2.2.0   cytoscape-fcose.js"
  "uplot@1.6.32            dist/uPlot.iife.min.js dist/uPlot.min.css"
)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rm -rf "$out"
mkdir -p "$out"
for line in "${pins[@]}"; do
  read -r spec files <<<"$line"
  name=${spec%@*}
  (cd "$work" && npm pack --silent "$spec" >/dev/null)
  tgz=$(ls "$work"/"$name"-*.tgz)
  mkdir -p "$work/$name" "$out/$name"
  tar xzf "$tgz" -C "$work/$name"
  for f in $files; do cp "$work/$name/package/$f" "$out/$name/"; done
  lic=$(ls "$work/$name/package" | grep -i -m1 -E '^licen[cs]e')
  cp "$work/$name/package/$lic" "$out/$name/LICENSE"
  echo "$spec" >"$out/$name/VERSION"
done
(cd "$out" && find . -type f ! -name SHA256SUMS | sort | xargs sha256sum >SHA256SUMS)
echo "vendored into $out:"
cat "$out/SHA256SUMS"
