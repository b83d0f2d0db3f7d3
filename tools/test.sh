#!/usr/bin/env bash
# Sets up retc (tools/setup.sh) and runs every test: C++ unit tests and the
# RETURNN integration tests (ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
build=${RETC_BUILD:-$(pwd)/build}
cd "$build"
ctest --output-on-failure -j2 "$@"
