#!/usr/bin/env bash
# Sets up and builds retc (tools/setup.sh), then runs the benchmarks
# (tools/bench.py): prints the table and writes benchmarks/RESULTS.md.
# Takes about 22 minutes on 2 cores; `tools/bench.sh --quick` is a smoke run.
# Run it on an otherwise idle machine: every figure is measured in this run.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
  sed -n 2,6p "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
tools/setup.sh >&2
cmake --build build --target retc_bench_compile -j2 >&2
venv=${RETC_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/retc/venv}
exec "$venv/bin/python" tools/bench.py --build "$(pwd)/build" "$@"
