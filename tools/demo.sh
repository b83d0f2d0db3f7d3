#!/usr/bin/env bash
# Sets up retc (tools/setup.sh) and trains the bundled 12ax demo. The last
# line printed is the final dev frame error.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
build=${RETC_BUILD:-$(pwd)/build}
workdir=${1:-retc-work/12ax}
exec "$build/retc" train 12ax --workdir "$workdir"
