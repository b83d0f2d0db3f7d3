#!/usr/bin/env bash
# A training stopped mid-epoch resumes where it left off (argument: the
# backend, tf or torch), on one workdir: Ctrl-C (SIGINT) in epoch 2 stops it
# cleanly (exit 130, one line on stderr, epoch 1's checkpoint intact); the
# second run resumes at epoch 2, and SIGKILL in its epoch 3 leaves epochs 1-2
# saved and no epoch 3; the third run trains epochs 3 and 4 only and ends
# with the final dev error: every epoch trained once (RETURNN's
# learning_rates file). slow-12ax: 4 epochs of 150 steps, a log line each.
# ctest-variants: tf torch
source "$(dirname "$0")/lib.sh"
set -m  # background jobs keep SIGINT's default, as a terminal's would

backend=${1:-tf}
if [ "$backend" = torch ]; then
  step_line="^ep %s train, step 10,"; trained_line="^Epoch %s: Trained"; ckpt="network.00%s.pt"
else
  step_line="^train epoch %s, step 10,"; trained_line="^epoch %s score"; ckpt="network.00%s.index"
fi
# shellcheck disable=SC2059
step_re() { printf "$step_line" "$1"; }
# shellcheck disable=SC2059
trained_re() { printf "$trained_line" "$1"; }
# shellcheck disable=SC2059
checkpoint() { printf "$work/model/$ckpt" "$1"; }
# epochs_trained LOG: the epochs LOG shows finished.
epochs_trained() {
  local e trained=""
  for e in 1 2 3 4; do grep -q "$(trained_re "$e")" "$1" && trained+="$e "; done
  echo "$trained"
}

# interrupt RUN EPOCH SIGNAL: run RUN of slow-12ax in the background, SIGNAL
# once epoch EPOCH has taken 10 steps (of 150: a loaded machine polls late); sets RC
# to its exit status.
interrupt() {
  local run=$1 epoch=$2 signal=$3 pid
  "$RETC_TEST_MODELS" train slow-12ax --backend "$backend" --workdir "$work" >"$TMP/log$run" 2>"$TMP/err$run" &
  pid=$!
  for _ in $(seq 600); do
    grep -q "$(step_re "$epoch")" "$TMP/log$run" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || { tail -n 5 "$TMP/log$run" "$TMP/err$run"; fail "run $run ended before epoch $epoch"; }
    sleep 0.2
  done
  grep -q "$(step_re "$epoch")" "$TMP/log$run" || fail "run $run: epoch $epoch did not start"
  kill "-$signal" "$pid"
  RC=0; wait "$pid" || RC=$?
  grep -q "$(trained_re "$epoch")" "$TMP/log$run" && fail "run $run: epoch $epoch finished before the $signal"
  return 0
}

work="$TMP/work"
interrupt 1 2 INT
[ "$RC" -eq 130 ] || { tail -n 5 "$TMP/log1" "$TMP/err1"; fail "expected exit 130 after Ctrl-C, got $RC"; }
[ "$(wc -l <"$TMP/err1")" -eq 1 ] || fail "expected one line on stderr: $(cat "$TMP/err1")"
grep -q "interrupted" "$TMP/err1" || fail "stderr does not say interrupted: $(cat "$TMP/err1")"
[ -e "$(checkpoint 1)" ] || fail "epoch 1's checkpoint is missing after Ctrl-C"
[ ! -e "$(checkpoint 2)" ] || fail "epoch 2 was saved although Ctrl-C stopped it"
pass "$backend: Ctrl-C in epoch 2: exit 130, '$(cat "$TMP/err1")'"

interrupt 2 3 KILL
[ "$RC" -eq 137 ] || fail "expected death by SIGKILL (137), got $RC"
[ "$(epochs_trained "$TMP/log2")" = "2 " ] || fail "the run after Ctrl-C trained epochs '$(epochs_trained "$TMP/log2")', expected '2 '"
[ -e "$(checkpoint 2)" ] || fail "epoch 2's checkpoint is missing"
[ ! -e "$(checkpoint 3)" ] || fail "epoch 3 was saved although it was killed"
pass "$backend: resumed at epoch 2; killed in epoch 3 ($(grep -c "$(step_re 3 | sed 's/, step 10,//'), step" "$TMP/log2") steps in)"

"$RETC_TEST_MODELS" train slow-12ax --backend "$backend" --workdir "$work" >"$TMP/log3" 2>"$TMP/err3" ||
  { tail "$TMP/log3" "$TMP/err3"; fail "resume after SIGKILL"; }
[ "$(epochs_trained "$TMP/log3")" = "3 4 " ] || fail "the run after SIGKILL trained epochs '$(epochs_trained "$TMP/log3")', expected '3 4 '"
tail -n 1 "$TMP/log3" | grep -E '^final dev frame error: ' >/dev/null || fail "no final line"
for e in 1 2 3 4; do
  [ -e "$(checkpoint "$e")" ] || fail "no checkpoint for epoch $e"
done
"$VENV/bin/python" - "$work/model/learning_rates" <<'PY'
import sys
text = open(sys.argv[1]).read()
epochs = [int(line.split(":")[0]) for line in text.splitlines() if line[:1].isdigit() and ": EpochData" in line]
assert epochs == [1, 2, 3, 4], epochs
PY
pass "$backend: resumed at epoch 3: epochs 1-4 trained once each; $(tail -n 1 "$TMP/log3")"
