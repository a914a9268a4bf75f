#!/usr/bin/env bash
# Copies the bundled plugin libraries of a build into target/<profile>/plugins/, the folder
# config/demo.toml loads. Test plugins (plugins/testing) are never copied.
set -euo pipefail
profile="${1:-release}"
root="$(cd "$(dirname "$0")/.." && pwd)"
src="$root/target/$profile"
dst="$src/plugins"
mkdir -p "$dst"
rm -f "$dst"/*.so "$dst"/*.dylib "$dst"/*.dll
case "$(uname -s)" in Darwin) ext=dylib ;; *) ext=so ;; esac
count=0
for dir in "$root"/plugins/appender-* "$root"/plugins/metrics-* "$root"/plugins/dashboards-*; do
  [ -f "$dir/Cargo.toml" ] || continue
  # Shared rlibs (appender-support, dashboards-spec) live beside the plugins; only cdylibs are plugins.
  grep -q 'cdylib' "$dir/Cargo.toml" || continue
  name="$(basename "$dir" | tr '-' '_')"
  lib="$src/lib$name.$ext"
  if [ -f "$lib" ]; then cp "$lib" "$dst/"; count=$((count + 1)); else echo "missing $lib (build first)" >&2; exit 1; fi
done
echo "installed $count plugins into $dst"
