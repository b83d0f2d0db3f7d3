#!/usr/bin/env bash
# `b->weight() = a->weight()` does not compile (param_assign.cc): the file
# builds as is (tying by computing with a's param), and with -DRETC_ASSIGN
# fails at the assignment, naming Parameter's deleted operator=.
#   param_assign.sh CXX SOURCE_DIR OPTIONS...
set -uo pipefail
cxx=$1 src=$2
shift 2
file="$src/tests/compile_fail/param_assign.cc"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
if ! "$cxx" -std=c++20 "$@" -I"$src" -fsyntax-only "$file" 2>"$out"; then
  echo "FAIL: tying by computing with another module's param does not build:"; cat "$out"; exit 1
fi
if "$cxx" -std=c++20 "$@" -I"$src" -fsyntax-only -DRETC_ASSIGN "$file" 2>"$out"; then
  echo "FAIL: assigning one module's param to another's builds"; exit 1
fi
grep -E "param_assign.cc:[0-9]+:[0-9]+: error: use of deleted function .*Parameter::operator=\(const .*Parameter&\)" "$out" >/dev/null ||
  { echo "FAIL: the build failed for another reason:"; cat "$out"; exit 1; }
echo "PASS: assigning a param fails the build:"
grep -m1 "error:" "$out"
