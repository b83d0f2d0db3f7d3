#!/usr/bin/env bash
# A model in the user's own .cc, outside the repo, gets the same CLI through
# an installed retc: `cmake --install` into a prefix, then find_package(retc)
# + retc_add_model against that prefix alone (tests/user_model is the
# example). Nothing installed may name the source or the build tree.
source "$(dirname "$0")/lib.sh"

prefix="$TMP/prefix"
cmake --install "$RETC_BUILD_DIR" --prefix "$prefix" >"$TMP/install.log" 2>&1 ||
  { cat "$TMP/install.log"; fail "cmake --install"; }
for f in lib/cmake/retc/retcConfig.cmake lib/cmake/retc/retcConfigVersion.cmake \
  lib/cmake/retc/RetcModel.cmake include/retc/tools/cli.h include/retc/compiler/nn/modules.h \
  bin/retc lib/python3.11/site-packages/retc/__init__.py; do
  [ -e "$prefix/$f" ] || fail "the prefix lacks $f"
done
src=$(cd "$RETC_SOURCE_DIR" && pwd -P)
build=$(cd "$RETC_BUILD_DIR" && pwd -P)
named=$(grep -rlaF -e "$src" -e "$build" "$prefix" || true)
[ -z "$named" ] || fail "installed files name the source or build tree: $named"
pass "installed $(find "$prefix" -type f | wc -l) files into a prefix; none names $src or $build"

cp -r "$RETC_SOURCE_DIR/tests/user_model" "$TMP/src"
# Only the prefix: no retc_DIR, and the source tree out of reach of the build.
cmake -S "$TMP/src" -B "$TMP/build" -DCMAKE_PREFIX_PATH="$prefix" >"$TMP/cmake.log" 2>&1 ||
  { cat "$TMP/cmake.log"; fail "configuring the user project"; }
grep -q "retc_DIR:PATH=$prefix/lib/cmake/retc" "$TMP/build/CMakeCache.txt" || fail "retc found elsewhere than the prefix"
cmake --build "$TMP/build" -j2 >"$TMP/build.log" 2>&1 || { cat "$TMP/build.log"; fail "building the user project"; }
# Its compile and link lines name the prefix, never retc's trees.
used=$(grep -rlF -e "$src/" -e "$build/" "$TMP/build" --include=CMakeCache.txt --include=flags.make \
  --include=link.txt || true)
[ -z "$used" ] || fail "the user build uses retc's source or build tree: $used"
exe="$TMP/build/my_model"
printf 'model binary: %s bytes\n' "$(stat -c %s "$exe")"
"$exe" list | grep "^my-model  two stacked LSTMs on 12AX$" >/dev/null || fail "list"
"$exe" list --options my-model | grep -E "^  hidden=12 +int, at least 1 +LSTM units$" >/dev/null || fail "list --options"
"$exe" compile my-model -o "$TMP/my.config" || fail "compile"
grep -q '"lstm2.rec_weight": {' "$TMP/my.config" || fail "config lacks lstm2"
grep -q '^# options: hidden=12 train_seqs=200 ' "$TMP/my.config" || fail "config header lacks the options"
"$exe" check my-model >"$TMP/check.out" 2>"$TMP/check.err" || { cat "$TMP/check.err"; fail "check"; }
grep -q "^variable lstm2/rec_weight/param:0 \[12, 48\]$" "$TMP/check.out" || fail "check output"
"$exe" dump-ir my-model --set hidden=8 | grep 'lstm %' >/dev/null || fail "dump-ir"
"$exe" dump-ir my-model --set hidden=8 | grep -F 'feature "hidden" 8' >/dev/null || fail "dump-ir --set hidden=8"
"$exe" train my-model --workdir "$TMP/work" --epochs 1 --set train_seqs=100 >"$TMP/train.log" 2>&1 || { tail -n 30 "$TMP/train.log"; fail "train"; }
tail -n 1 "$TMP/train.log" | grep -E "^final dev frame error: [0-9.e+-]+$" >/dev/null || fail "train's last line"
pass "user model against the installed prefix: list, compile, check, dump-ir, train"
