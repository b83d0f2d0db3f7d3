#!/usr/bin/env bash
# Every bad-model case (tests/bad_model_cases.cc): `compile` exits 1 with the
# expected message at the mistake's file:line (notes may follow) and writes
# no output file.
source "$(dirname "$0")/lib.sh"

src="$RETC_SOURCE_DIR/tests/bad_model_cases.cc"
n=0
while read -r name expected; do
  line=$(grep -n "MISTAKE: $name\$" "$src" | cut -d: -f1)
  [ -n "$line" ] || fail "$name: no MISTAKE marker"
  rc=0
  "$RETC_TEST_MODELS" compile "$name" -o "$TMP/out.config" >"$TMP/out" 2>"$TMP/err" || rc=$?
  [ "$rc" -eq 1 ] || fail "$name: exit $rc, expected 1: $(cat "$TMP/err")"
  [ ! -e "$TMP/out.config" ] || fail "$name: wrote an output file"
  first=$(head -n 1 "$TMP/err")
  [[ "$first" == *"bad_model_cases.cc:$line:"*": error: "* ]] || fail "$name: not at bad_model_cases.cc:$line: $first"
  [[ "$first" == *"$expected"* ]] || fail "$name: '$first' lacks '$expected'"
  [ "$(grep -vc ': note: ' "$TMP/err")" -eq 1 ] || fail "$name: more than one error line: $(cat "$TMP/err")"
  n=$((n + 1))
done < <("$RETC_TEST_MODELS" list | grep '^bad:' | sed -E 's/^(\S+)\s+/\1 /')
[ "$n" -ge 25 ] || fail "only $n bad-model cases"
pass "$n bad-model cases: exit 1, message at file:line, no output file"
