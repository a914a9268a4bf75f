#!/usr/bin/env bash
# The demo's start-up and memory, simulator against file (issue #17's benchmark).
#
#   bash scripts/bench-demo.sh [--no-build]
#
# On a release build (built here unless --no-build), from the repository root, it prints:
#   1. simulator demo (config/demo.toml as shipped): time from starting `meshlens serve` to
#      the first answered graph, and RSS then;
#   2. simulator demo after one and two hours of simulated time: the same config with the
#      query clock (`clock = "query"`, `start` two hours ago), driven one simulated minute at
#      a time by graph requests with `queryTime`, so the store generates and drops samples as
#      the live demo does over wall-clock hours; RSS at 1 h and 2 h, and the peak;
#   3. file-based demo: `meshlens simulate --minutes 60` writes the hour the simulator holds
#      (timed, with the file's size), then config/demo.toml with the `openmetrics_file`
#      backend on that file: time to the first answered graph, RSS after 60 graphs.
# Every process listens on 127.0.0.1 with an OS-picked port and is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" != "--no-build" ]; then
  CARGO_INCREMENTAL=0 cargo build --release --workspace
  bash scripts/install-plugins.sh release >/dev/null
fi
bin=target/release/meshlens
[ -x "$bin" ] || { echo "no $bin: build first (without --no-build)" >&2; exit 1; }

work=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

now_s() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
mib() { awk -v f="$2" '$1 == f":" { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
edges() { jq '.elements.edges | length' "$1"; }

# Starts `meshlens serve --config $1` (port 0) with the variables $2...; sets $pid, $base, $t0.
start() {
  local cfg="$1" out="$work/stdout"
  shift
  : >"$out"
  t0=$(now_s)
  env MESHLENS_SERVER__PORT=0 "$@" "$bin" serve --config "$cfg" >"$out" 2>"$work/stderr" &
  pid=$!
  base=""
  for _ in $(seq 1 6000); do
    base=$(sed -n 's#^meshlens listening on \(http://[^ ]*\).*#\1#p' "$out" | head -n1)
    [ -n "$base" ] && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$work/stderr" >&2; exit 1; }
    sleep 0.01
  done
  echo "meshlens did not start within 60 s" >&2
  exit 1
}

# Polls $1 (a path) until it answers 200 (at most 60 s); prints the seconds since $t0.
first_answer() {
  for _ in $(seq 1 6000); do
    if [ "$(curl -s -o "$work/graph.json" -w '%{http_code}' "$base$1")" = 200 ]; then
      elapsed "$t0" "$(now_s)"
      return 0
    fi
    sleep 0.01
  done
  echo "no answer from $1 within 60 s" >&2
  exit 1
}

stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""; }

graph='/api/namespaces/graph?namespaces=bookinfo&graphType=versionedApp'

# config/demo.toml with the [metrics.simulator] table's extra lines $1 (query clock).
sim_config() {
  sed "s#^\[metrics.simulator\]#&\n$1#" config/demo.toml >"$work/sim.toml"
  echo "$work/sim.toml"
}

echo "meshlens demo benchmark ($(nproc) cores, $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"

# 1. The shipped demo.
start config/demo.toml
t=$(first_answer "$graph")
echo "simulator demo: first answered graph ${t} s after start ($(edges "$work/graph.json") edges), RSS $(mib "$pid" VmRSS) MiB"
stop

# 2. Two hours of simulated time, one simulated minute per graph request. The answer cache
#    is off here and below: it would keep every minute's answers (explicit past queryTime),
#    and this measures the store.
nocache=MESHLENS_METRICS__CACHE_TTL=0s
begin=$(( $(date +%s) - 7200 ))
start "$(sim_config "clock = \"query\"\nstart = $begin")" "$nocache"
first_answer "$graph&queryTime=$begin" >/dev/null
rss0=$(mib "$pid" VmRSS)
for i in $(seq 1 120); do
  curl -sf -o "$work/graph.json" "$base$graph&queryTime=$((begin + 60 * i))"
  if [ "$i" = 60 ]; then rss60=$(mib "$pid" VmRSS); fi
done
echo "simulator demo after 1 h simulated: RSS ${rss60} MiB (${rss0} MiB at its start); after 2 h: RSS $(mib "$pid" VmRSS) MiB, peak $(mib "$pid" VmHWM) MiB; last graph $(edges "$work/graph.json") edges"
stop

# 3. The file-based demo over the same hour.
file="$work/demo.om"
t1=$(now_s)
"$bin" simulate --topology config/demo/topology.toml --out "$file" --minutes 60
gen=$(elapsed "$t1" "$(now_s)")
size=$(du -m "$file" | cut -f1)
sed -e 's#^backend = "simulator"#backend = "openmetrics_file"#' \
    -e "s#^\[metrics.simulator\]#[metrics.openmetrics_file]\npath = \"$file\"#" \
    -e '/^topology = /d' config/demo.toml >"$work/file.toml"
start "$work/file.toml" "$nocache"
t=$(first_answer "$graph")
echo "file demo: meshlens simulate wrote ${size} MB in ${gen} s; first answered graph ${t} s after start ($(edges "$work/graph.json") edges), RSS $(mib "$pid" VmRSS) MiB"
for _ in $(seq 1 60); do curl -sf -o "$work/graph.json" "$base$graph"; done
echo "file demo after 60 graphs: RSS $(mib "$pid" VmRSS) MiB, peak $(mib "$pid" VmHWM) MiB"
stop
