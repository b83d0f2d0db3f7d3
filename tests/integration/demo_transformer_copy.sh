#!/usr/bin/env bash
# The Transformer copy demo: `retc train transformer-copy` (8 epochs of 2000
# sequences) reaches at least 90% token accuracy on dev: the final dev frame
# error (the token error of the teacher-forced decoder) is at most 0.10.
source "$(dirname "$0")/lib.sh"

"$RETC" train transformer-copy --workdir "$TMP/work" >"$TMP/log" 2>"$TMP/err" ||
  { tail -40 "$TMP/log" "$TMP/err"; fail "retc train transformer-copy"; }
grep -E "^(epoch [0-9]+ score|dev: )" "$TMP/log"
[ "$(grep -c '^epoch [0-9]* score: ' "$TMP/log")" -eq 8 ] || fail "expected 8 epoch lines"
expect_final_error "$TMP/log" 0.10 transformer-copy
pass "transformer-copy: token accuracy $("$VENV/bin/python" -c "print(1 - float('$FINAL_ERROR'))") after 8 epochs"
