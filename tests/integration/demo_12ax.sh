#!/usr/bin/env bash
# End to end: `retc train 12ax` trains the demo; the last line printed is the
# final dev frame error, which is at most 0.05.
source "$(dirname "$0")/lib.sh"

"$RETC" train 12ax --workdir "$TMP/work" >"$TMP/log" 2>"$TMP/err" || { tail -n 40 "$TMP/log" "$TMP/err"; fail "retc train 12ax"; }
grep -E "^(epoch [0-9]+ score|dev: )" "$TMP/log"
[ "$(grep -c '^epoch [0-9]* score: ' "$TMP/log")" -eq 5 ] || fail "expected 5 epoch lines"
expect_final_error "$TMP/log" 0.05 12ax
last=$(tail -n 1 "$TMP/log")

# Running again resumes from the finished checkpoint and trains nothing twice.
"$RETC" train 12ax --workdir "$TMP/work" >"$TMP/log2" 2>"$TMP/err2" || fail "second retc train"
[ "$(grep -c '^epoch [0-9]* score: ' "$TMP/log2")" -eq 0 ] || fail "the second run trained again"
[ "$(tail -n 1 "$TMP/log2")" = "$last" ] || fail "the second run reports another error"
pass "a second run resumes and reports the same result"
