#!/usr/bin/env bash
# `retc check 12ax`: RETURNN constructs the network and runs it; its variable
# names equal the module paths of named_parameters(); --batch and --time set
# the random batch's size.
# ctest-cost: 50
source "$(dirname "$0")/lib.sh"

"$RETC" check 12ax >"$TMP/check.out" 2>"$TMP/check.err" || { cat "$TMP/check.err"; fail "retc check 12ax"; }
cat "$TMP/check.out"
"$RETC" dump-ir 12ax --format json >"$TMP/ir.json"
"$VENV/bin/python" - "$TMP/check.out" "$TMP/ir.json" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
got = {}
for l in lines:
    if l.startswith("variable "):
        _, name, shape = l.split(" ", 2)
        got[name] = json.loads(shape)
ir = json.load(open(sys.argv[2]))
sizes = {d["id"]: d["size"] for d in ir["dims"]}
want = {p["path"].replace(".", "/") + "/param:0": [sizes[d] for d in p["dims"]] for p in ir["params"]}
assert got == want, (got, want)
assert sorted(p["path"] for p in ir["params"]) == sorted(
    ["lstm.ff_weight", "lstm.rec_weight", "lstm.bias", "out.weight", "out.bias"])
assert lines[-1].startswith("12ax: 5 variables, 822 parameters"), lines[-1]
print("RETURNN variables == named_parameters paths:", sorted(got))
PY
pass "retc check 12ax"

"$RETC_TEST_MODELS" check tiny >"$TMP/tiny.out" 2>"$TMP/tiny.err" || { cat "$TMP/tiny.err"; fail "check tiny"; }
grep -q "^variable ff/weight/param:0 \[9, 8\]$" "$TMP/tiny.out" || fail "tiny: ff/weight"
grep -q "^variable out/bias/param:0 \[2\]$" "$TMP/tiny.out" || fail "tiny: out/bias"
pass "retc check tiny"

"$RETC_TEST_MODELS" check square >"$TMP/square.out" 2>"$TMP/square.err" || { cat "$TMP/square.err"; fail "check square"; }
grep -q "^variable sq/weight/param:0 \[6, 6\]$" "$TMP/square.out" || fail "square: sq/weight"
grep -q "^output output \[3, 7, 2\] " "$TMP/square.out" || fail "square: output shape"
pass "retc check square (a [hidden, hidden] weight)"

# The random batch's size: --batch 5 --time 40 (the input's longest sequence).
"$RETC_TEST_MODELS" check square --batch 5 --time 40 >"$TMP/sq2.out" 2>&1 || { cat "$TMP/sq2.out"; fail "check --batch --time"; }
grep -q "^output output \[5, 40, 2\] " "$TMP/sq2.out" || fail "--batch 5 --time 40: $(grep '^output' "$TMP/sq2.out")"
expect_error 2 "^retc: error: --time needs an integer of at least 3, got '2'" -- "$RETC" check 12ax --time 2
pass "retc check --batch 5 --time 40: a [5, 40, 2] output"
