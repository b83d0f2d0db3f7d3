#!/usr/bin/env bash
# End to end: `retc train 12ax` trains the demo; the last line printed is the
# final dev frame error, which is at most 0.05. With a cleanup of old
# checkpoints (--keep-last 2 --keep-best 1, RETURNN's cleanup_old_models on
# TF): exactly those epochs' checkpoints remain, and resuming for a sixth
# epoch trains it alone and cleans up after it.
source "$(dirname "$0")/lib.sh"
cleanup=(--keep-last 2 --keep-best 1)

"$RETC" train 12ax --workdir "$TMP/work" "${cleanup[@]}" >"$TMP/log" 2>"$TMP/err" || { tail -n 40 "$TMP/log" "$TMP/err"; fail "retc train 12ax"; }
grep -E "^(epoch [0-9]+ score|dev: )" "$TMP/log"
[ "$(grep -c '^epoch [0-9]* score: ' "$TMP/log")" -eq 5 ] || fail "expected 5 epoch lines"
expect_final_error "$TMP/log" 0.05 12ax
last=$(tail -n 1 "$TMP/log")

tf_files=(.index .meta .data-00000-of-00001)
expect_kept_checkpoints "$TMP/work" 2 1 "${tf_files[@]}"

# Running again resumes from the finished checkpoint and trains nothing twice.
"$RETC" train 12ax --workdir "$TMP/work" "${cleanup[@]}" >"$TMP/log2" 2>"$TMP/err2" || fail "second retc train"
[ "$(grep -c '^epoch [0-9]* score: ' "$TMP/log2")" -eq 0 ] || fail "the second run trained again"
[ "$(tail -n 1 "$TMP/log2")" = "$last" ] || fail "the second run reports another error"
pass "a second run resumes and reports the same result"

"$RETC" train 12ax --workdir "$TMP/work" "${cleanup[@]}" --epochs 6 >"$TMP/log3" 2>"$TMP/err3" || fail "retc train --epochs 6"
[ "$(grep -c '^epoch [0-9]* score: ' "$TMP/log3")" -eq 1 ] && grep -q '^epoch 6 score: ' "$TMP/log3" ||
  fail "the run to 6 epochs did not train epoch 6 alone"
expect_kept_checkpoints "$TMP/work" 2 1 "${tf_files[@]}"
pass "resumed after the cleanup: epoch 6 trained alone; $(tail -n 1 "$TMP/log3")"
