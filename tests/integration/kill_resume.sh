#!/usr/bin/env bash
# SIGKILL in the middle of epoch 2, then `retc train` again: it resumes from
# epoch 1's checkpoint, finishes all 4 epochs, and trains no epoch twice.
# `kill_resume.sh torch` does the same on the torch target.
# ctest-variants: tf torch
source "$(dirname "$0")/lib.sh"

backend=${1:-tf}
if [ "$backend" = torch ]; then
  step_line="^ep 2 train, step 50,"; trained_line="^Epoch %s: Trained"; ckpt="network.00%s.pt"
else
  step_line="^train epoch 2, step 50,"; trained_line="^epoch %s score"; ckpt="network.00%s.index"
fi
# shellcheck disable=SC2059
trained_re() { printf "$trained_line" "$1"; }
# shellcheck disable=SC2059
checkpoint() { printf "$work/model/$ckpt" "$1"; }

work="$TMP/work"
"$RETC_TEST_MODELS" train slow-12ax --backend "$backend" --workdir "$work" >"$TMP/log1" 2>"$TMP/err1" &
pid=$!
for _ in $(seq 600); do
  grep -q "$step_line" "$TMP/log1" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || { cat "$TMP/err1"; fail "training ended before epoch 2"; }
  sleep 0.2
done
grep -q "$step_line" "$TMP/log1" || fail "epoch 2 did not start"
kill -9 "$pid"
rc=0; wait "$pid" || rc=$?
[ "$rc" -eq 137 ] || fail "expected death by SIGKILL (137), got $rc"
grep -q "$(trained_re 2)" "$TMP/log1" && fail "epoch 2 finished before the kill"
[ -e "$(checkpoint 1)" ] || fail "epoch 1's checkpoint is missing"
[ ! -e "$(checkpoint 2)" ] || fail "epoch 2 was saved although it was killed"
pass "$backend: killed mid-epoch 2 ($(grep -c "${step_line%%, step*}, step" "$TMP/log1") steps in)"

"$RETC_TEST_MODELS" train slow-12ax --backend "$backend" --workdir "$work" >"$TMP/log2" 2>"$TMP/err2" ||
  { tail "$TMP/log2" "$TMP/err2"; fail "resume"; }
trained=""
for e in 1 2 3 4; do grep -q "$(trained_re "$e")" "$TMP/log2" && trained+="$e "; done
[ "$trained" = "2 3 4 " ] || fail "the resumed run trained epochs '$trained', expected '2 3 4 '"
tail -n 1 "$TMP/log2" | grep -E '^final dev frame error: ' >/dev/null || fail "no final line"
for e in 1 2 3 4; do
  [ -e "$(checkpoint "$e")" ] || fail "no checkpoint for epoch $e"
done
"$VENV/bin/python" - "$work/model/learning_rates" <<'PY'
import sys
text = open(sys.argv[1]).read()
epochs = [int(line.split(":")[0]) for line in text.splitlines() if line[:1].isdigit() and ": EpochData" in line]
assert epochs == [1, 2, 3, 4], epochs
PY
pass "$backend: resumed: trained epochs $trained, every epoch once"
