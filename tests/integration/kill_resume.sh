#!/usr/bin/env bash
# SIGKILL in the middle of epoch 2, then `retc train` again: it resumes from
# epoch 1's checkpoint, finishes all 4 epochs, and trains no epoch twice.
source "$(dirname "$0")/lib.sh"

work="$TMP/work"
"$RETC_TEST_MODELS" train slow-12ax --workdir "$work" >"$TMP/log1" 2>"$TMP/err1" &
pid=$!
for _ in $(seq 600); do
  grep -q "^train epoch 2, step 50," "$TMP/log1" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || { cat "$TMP/err1"; fail "training ended before epoch 2"; }
  sleep 0.2
done
grep -q "^train epoch 2, step 50," "$TMP/log1" || fail "epoch 2 did not start"
kill -9 "$pid"
rc=0; wait "$pid" || rc=$?
[ "$rc" -eq 137 ] || fail "expected death by SIGKILL (137), got $rc"
grep -q "^epoch 2 score" "$TMP/log1" && fail "epoch 2 finished before the kill"
[ -e "$work/model/network.001.index" ] || fail "epoch 1's checkpoint is missing"
[ ! -e "$work/model/network.002.index" ] || fail "epoch 2 was saved although it was killed"
pass "killed mid-epoch 2 ($(grep -c '^train epoch 2, step' "$TMP/log1") steps in)"

"$RETC_TEST_MODELS" train slow-12ax --workdir "$work" >"$TMP/log2" 2>"$TMP/err2" || { tail "$TMP/log2" "$TMP/err2"; fail "resume"; }
trained=$(grep -oE '^epoch [0-9]+ score' "$TMP/log2" | awk '{print $2}' | tr '\n' ' ')
[ "$trained" = "2 3 4 " ] || fail "the resumed run trained epochs '$trained', expected '2 3 4 '"
tail -n 1 "$TMP/log2" | grep -E '^final dev frame error: ' >/dev/null || fail "no final line"
for e in 1 2 3 4; do
  [ -e "$work/model/network.00$e.index" ] || fail "no checkpoint for epoch $e"
done
"$VENV/bin/python" - "$work/model/learning_rates" <<'PY'
import sys
from returnn.learning_rate_control import LearningRateControl
text = open(sys.argv[1]).read()
epochs = [int(line.split(":")[0]) for line in text.splitlines() if line[:1].isdigit() and ": EpochData" in line]
assert epochs == [1, 2, 3, 4], epochs
PY
pass "resumed: trained epochs $trained, every epoch once"
