#!/usr/bin/env bash
# End to end: `retc train 12ax` trains the demo; the last line printed is the
# final dev frame error, which is at most 0.05. With a cleanup of old
# checkpoints (--keep-last 2 --keep-best 1, RETURNN's cleanup_old_models on
# TF): exactly those epochs' checkpoints remain, and resuming for a sixth
# epoch trains it alone and cleans up after it; that run is on a terminal
# (script(1)), where the progress bar is redrawn in place and erased before
# RETURNN's own lines.
source "$(dirname "$0")/lib.sh"
unset RETC_TF_GRAPH_OPTIMIZER  # as users run it: TF's graph optimizer on (tests/CMakeLists.txt)
cleanup=(--keep-last 2 --keep-best 1)

"$RETC" train 12ax --workdir "$TMP/work" "${cleanup[@]}" >"$TMP/log" 2>"$TMP/err" || { tail -n 40 "$TMP/log" "$TMP/err"; fail "retc train 12ax"; }
grep -E "^(epoch [0-9]+ score|dev: )" "$TMP/log"
[ "$(grep -c '^epoch [0-9]* score: ' "$TMP/log")" -eq 5 ] || fail "expected 5 epoch lines"
expect_final_error "$TMP/log" 0.05 12ax
grep -q "^Setup TF session with options " "$TMP/log" && ! grep -q "disable_meta_optimizer" "$TMP/log" ||
  fail "TF's graph optimizer is not on by default: $(grep '^Setup TF session' "$TMP/log")"
last=$(tail -n 1 "$TMP/log")

tf_files=(.index .meta .data-00000-of-00001)
expect_kept_checkpoints "$TMP/work" 2 1 "${tf_files[@]}"

# Running again resumes from the finished checkpoint and trains nothing twice.
"$RETC" train 12ax --workdir "$TMP/work" "${cleanup[@]}" >"$TMP/log2" 2>"$TMP/err2" || fail "second retc train"
[ "$(grep -c '^epoch [0-9]* score: ' "$TMP/log2")" -eq 0 ] || fail "the second run trained again"
[ "$(tail -n 1 "$TMP/log2")" = "$last" ] || fail "the second run reports another error"
pass "a second run resumes and reports the same result"

# This run on a terminal (script(1) gives it one): the progress bar is drawn
# in place and erased before RETURNN's own lines.
script -qec "'$RETC' train 12ax --workdir '$TMP/work' ${cleanup[*]} --epochs 6 --progress 0.2" /dev/null \
  >"$TMP/log3" 2>&1 </dev/null || { tail -n 20 "$TMP/log3"; fail "retc train --epochs 6"; }
expect_kept_checkpoints "$TMP/work" 2 1 "${tf_files[@]}"
"$VENV/bin/python" - "$TMP/log3" <<'PY' || fail "the run to 6 epochs on a terminal"
import sys
# (The terminal writes "\r\n" for each "\n".)
text = open(sys.argv[1], encoding="utf-8", errors="replace", newline="").read().replace("\r\n", "\n")
# What a terminal shows of each line: the text after its last carriage return, erased to its end.
shown = [line.split("\r")[-1].replace("\x1b[K", "") for line in text.split("\n")]
drawn = [seg for line in text.split("\n") for seg in line.split("\r") if seg.startswith("[") and "% epoch 6 step" in seg]
assert drawn, "no progress bar was drawn"
assert all(seg.endswith("\x1b[K") for seg in drawn), drawn[:2]
assert sum(s.startswith("epoch ") and " score: " in s for s in shown) == 1, "not epoch 6 alone"
assert any(s.startswith("epoch 6 score: ") for s in shown)
assert not any("% epoch" in s for s in shown), "a bar left on a line"
assert any(s.startswith("train epoch 6, finished after") for s in shown), "RETURNN's line shares the bar's"
assert [s for s in shown if s.strip()][-1].startswith("final dev frame error: "), shown[-3:]
print("%d bar redraws, erased before RETURNN's lines; e.g. %r" % (len(drawn), drawn[-1][:70]))
PY
pass "resumed after the cleanup: epoch 6 trained alone, on a terminal with the progress bar"
