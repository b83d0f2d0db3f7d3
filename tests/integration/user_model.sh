#!/usr/bin/env bash
# A model in the user's own .cc, outside the repo, gets the same CLI through
# find_package(retc) + retc_add_model (tests/user_model is the example).
source "$(dirname "$0")/lib.sh"

cp -r "$RETC_SOURCE_DIR/tests/user_model" "$TMP/src"
cmake -S "$TMP/src" -B "$TMP/build" -Dretc_DIR="$RETC_BUILD_DIR" >"$TMP/cmake.log" 2>&1 ||
  { cat "$TMP/cmake.log"; fail "configuring the user project"; }
cmake --build "$TMP/build" -j2 >"$TMP/build.log" 2>&1 || { cat "$TMP/build.log"; fail "building the user project"; }
exe="$TMP/build/my_model"
"$exe" list | grep "^my-model  two stacked LSTMs on 12AX$" >/dev/null || fail "list"
"$exe" compile my-model -o "$TMP/my.config" || fail "compile"
grep -q '"lstm2.rec_weight": {' "$TMP/my.config" || fail "config lacks lstm2"
"$exe" check my-model >"$TMP/check.out" 2>"$TMP/check.err" || { cat "$TMP/check.err"; fail "check"; }
grep -q "^variable lstm2/rec_weight/param:0 \[12, 48\]$" "$TMP/check.out" || fail "check output"
"$exe" dump-ir my-model | grep 'lstm %' >/dev/null || fail "dump-ir"
"$exe" train my-model --workdir "$TMP/work" --epochs 1 >"$TMP/train.log" 2>&1 || { tail -n 30 "$TMP/train.log"; fail "train"; }
tail -n 1 "$TMP/train.log" | grep -E "^final dev frame error: [0-9.e+-]+$" >/dev/null || fail "train's last line"
pass "user model: list, compile, check, dump-ir, train"
