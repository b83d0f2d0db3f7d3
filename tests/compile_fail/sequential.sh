#!/usr/bin/env bash
# nn::Sequential::append of a module it cannot feed is a short compile error
# with its own message (sequential_append.cc): the file builds as is, and
# with -DRETC_UNSUPPORTED fails in at most 12 lines of compiler output that
# name Sequential::append and what the module's forward must take.
#   sequential.sh CXX SOURCE_DIR OPTIONS...
set -uo pipefail
cxx=$1 src=$2
shift 2
file="$src/tests/compile_fail/sequential_append.cc"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
if ! "$cxx" -std=c++20 "$@" -I"$src" -fsyntax-only "$file" 2>"$out"; then
  echo "FAIL: a Sequential of a Linear and a BLstm does not build:"; cat "$out"; exit 1
fi
if "$cxx" -std=c++20 "$@" -I"$src" -fsyntax-only -DRETC_UNSUPPORTED "$file" 2>"$out"; then
  echo "FAIL: Sequential::append of a module with a two-input forward builds"; exit 1
fi
grep -F "error: static assertion failed: nn::Sequential::append: the module's forward must take (const Tensor& x) or (const Tensor& x, const ir::Dim& time)" "$out" >/dev/null ||
  { echo "FAIL: the build failed for another reason:"; cat "$out"; exit 1; }
lines=$(wc -l <"$out")
[ "$lines" -le 12 ] || { echo "FAIL: $lines lines of compiler output:"; cat "$out"; exit 1; }
echo "PASS: Sequential::append of an unsupported module: $lines lines, the first error:"
grep -m1 "error:" "$out"
