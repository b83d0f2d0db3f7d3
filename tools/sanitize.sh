#!/usr/bin/env bash
# Builds the C++ unit tests with AddressSanitizer and UndefinedBehaviorSanitizer
# (in build-asan/) and runs them; any finding fails the run.
#   tools/sanitize.sh [--build-only]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${RETC_ASAN_BUILD:-$(pwd)/build-asan}
python=$("${RETC_PYTHON:-python3}" -c 'import sys; print(sys.executable)')
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DRETC_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DPython3_EXECUTABLE="$python" >/dev/null
fi
echo "sanitize: building the unit tests with ASan + UBSan in $build"
cmake --build "$build" -j"$(nproc)" --target retc_unit_tests 2>&1 | grep -E "error|warning: " || true
test -x "$build/tests/retc_unit_tests" || { cmake --build "$build" -j1 --target retc_unit_tests; exit 1; }
[ "${1:-}" = --build-only ] && exit 0
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "$build/tests/retc_unit_tests"
