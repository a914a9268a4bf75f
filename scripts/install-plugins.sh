#!/usr/bin/env bash
# Copies the bundled plugin libraries of a build into target/<profile>/plugins/, the folder
# config/demo.toml loads. Test plugins (plugins/testing) are never copied.
# Usage: install-plugins.sh [profile] [package ...]; with packages, only those (the image's set).
set -euo pipefail
profile="${1:-release}"
shift || true
only=" $* "
root="$(cd "$(dirname "$0")/.." && pwd)"
src="$root/target/$profile"
dst="$src/plugins"
mkdir -p "$dst"
# meshlens refuses plugins its group or others could replace: whatever the umask, the folder
# and the files are writable by their owner only.
chmod 0755 "$dst"
rm -f "$dst"/*.so "$dst"/*.dylib "$dst"/*.dll
case "$(uname -s)" in Darwin) ext=dylib ;; *) ext=so ;; esac
count=0
for dir in "$root"/plugins/appender-* "$root"/plugins/metrics-* "$root"/plugins/dashboards-*; do
  [ -f "$dir/Cargo.toml" ] || continue
  # plugins/ holds only plugins (libraries live in crates/); the check keeps it that way.
  grep -q 'cdylib' "$dir/Cargo.toml" || continue
  if [ "$only" != "  " ] && [[ "$only" != *" $(basename "$dir") "* ]]; then continue; fi
  name="$(basename "$dir" | tr '-' '_')"
  lib="$src/lib$name.$ext"
  if [ -f "$lib" ]; then install -m 0755 "$lib" "$dst/"; count=$((count + 1)); else echo "missing $lib (build first)" >&2; exit 1; fi
done
# A package named that is not a bundled plugin is a mistake, not something to skip.
if [ $# -gt 0 ] && [ "$count" -ne $# ]; then echo "asked for $# plugins, installed $count: $*" >&2; exit 1; fi
echo "installed $count plugins into $dst"
