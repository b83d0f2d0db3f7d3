#!/usr/bin/env bash
# A kind that a target's switch does not handle fails the build: compiles
# missing_kind.cc with the project's compile options (from CMake), once
# covering every kind (must build), once missing the non-binary kinds (must
# fail, naming a missing kind).
#   check.sh CXX SOURCE_DIR OPTIONS...
set -uo pipefail
cxx=$1 src=$2
shift 2
file="$src/tests/compile_fail/missing_kind.cc"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
if ! "$cxx" -std=c++20 "$@" -I"$src" -fsyntax-only -DRETC_COVER_ALL "$file" 2>"$out"; then
  echo "FAIL: the switch covering every kind does not build:"; cat "$out"; exit 1
fi
if "$cxx" -std=c++20 "$@" -I"$src" -fsyntax-only "$file" 2>"$out"; then
  echo "FAIL: a switch over NodeKind missing kinds builds (is -Werror=switch on?)"; exit 1
fi
if ! grep -E "enumeration value .k[A-Za-z]+. not handled in switch" "$out" >/dev/null; then
  echo "FAIL: the build failed for another reason:"; cat "$out"; exit 1
fi
echo "PASS: a switch missing a kind fails the build:"
grep -m1 -E "not handled in switch" "$out"
