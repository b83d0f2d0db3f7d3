#!/usr/bin/env bash
# Sets up retc (tools/setup.sh) and runs every test: C++ unit tests and the
# RETURNN integration tests (ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
build=${RETC_BUILD:-$(pwd)/build}
cd "$build"
# The tests' warm servers (RETC_SERVER, tests/CMakeLists.txt) end with the run.
trap '"$build/retc" serve --stop --dir "$build/retc-server" >/dev/null 2>&1 || true' EXIT
ctest --output-on-failure -j2 "$@"
