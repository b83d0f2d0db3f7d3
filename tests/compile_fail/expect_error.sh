#!/usr/bin/env bash
# A mistake in model code that must not compile: FILE builds as it is, and
# with -DMACRO fails with an error matching REGEX (grep -E), in at most
# MAX_LINES lines of compiler output (0: any number).
#   expect_error.sh CXX SOURCE_DIR FILE MACRO REGEX MAX_LINES OPTIONS...
# (sequential_append.cc: Sequential::append of a module it cannot feed, a short
# error of its own; param_assign.cc: one module's param assigned another's.)
set -uo pipefail
cxx=$1 src=$2 file=$src/tests/compile_fail/$3 macro=$4 regex=$5 max_lines=$6
shift 6
out=$(mktemp)
trap 'rm -f "$out"' EXIT
if ! "$cxx" -std=c++20 "$@" -I"$src" -fsyntax-only "$file" 2>"$out"; then
  echo "FAIL: $file does not build as it is:"; cat "$out"; exit 1
fi
if "$cxx" -std=c++20 "$@" -I"$src" -fsyntax-only "-D$macro" "$file" 2>"$out"; then
  echo "FAIL: $file builds with -D$macro"; exit 1
fi
grep -E -- "$regex" "$out" >/dev/null || { echo "FAIL: the build failed for another reason:"; cat "$out"; exit 1; }
lines=$(wc -l <"$out")
if [ "$max_lines" -gt 0 ] && [ "$lines" -gt "$max_lines" ]; then
  echo "FAIL: $lines lines of compiler output:"; cat "$out"; exit 1
fi
echo "PASS: $(basename "$file") with -D$macro fails to build ($lines lines), the first error:"
grep -m1 "error:" "$out"
