#!/usr/bin/env bash
# The typed training-setup options in RETURNN (test model setup-options: 12ax
# with a warm-up, newbob_multi_epoch, gradient clipping and noise, gradient
# accumulation, chunking and a length limit): the config holds RETURNN's
# entries; training runs 1 epoch (fewer than the warm-up lists), forward runs
# without the length limit, training resumes to 4 epochs, the learning-rate
# file shows the warm-up rates for epochs 1 and 2 and the control's rates
# after them (within its bounds), and chunking makes more steps per epoch
# than whole sequences would (1000 sequences, at most 10 per batch: 100); a
# bundled model with a learning rate per step (lr_schedule).
# Usage: setup_options.sh [torch]
# ctest-variants: tf torch
# ctest-cost: 70
source "$(dirname "$0")/lib.sh"
backend=${1:-tf}

"$RETC_TEST_MODELS" compile setup-options --backend "$backend" -o "$TMP/c" || fail "compile setup-options"
for line in 'learning_rates = [0.002, 0.006]' 'learning_rate_control = "newbob_multi_epoch"' \
            'newbob_multi_num_epochs = 2' 'min_learning_rate = 0.001' 'gradient_clip = 5.0' \
            'gradient_clip_global_norm = 10.0' 'gradient_noise = 0.01' 'accum_grad_multiple_step = 2' \
            'chunking = "20:10"' 'max_seq_length = {"classes": 200}'; do
  grep -Fx "$line" "$TMP/c" >/dev/null || fail "the $backend config lacks '$line'"
done
pass "$backend config: the setup's entries"

# Fewer epochs than the warm-up lists: RETURNN's learning-rate file has the
# listed epochs in advance; the final line is the last trained epoch's error.
"$RETC_TEST_MODELS" train setup-options --backend "$backend" --workdir "$TMP/w" --epochs 1 >"$TMP/log1" 2>"$TMP/err1" ||
  { tail -n 30 "$TMP/log1" "$TMP/err1"; fail "retc train setup-options --epochs 1"; }
grep -Fx "retc: finished epoch 1 ($(tail -n 2 "$TMP/log1" | head -n 1 | sed -E 's/.*\((.*)\)$/\1/'))" "$TMP/log1" >/dev/null ||
  fail "not epoch 1: $(tail -n 2 "$TMP/log1")"
expect_final_error "$TMP/log1" 0.5 "setup-options, 1 epoch ($backend)"

# Forward keeps every sequence: its config has no length limit (RETURNN's
# torch engine refuses max_seq_length in forward and search).
"$RETC_TEST_MODELS" forward setup-options --backend "$backend" --workdir "$TMP/w" -o "$TMP/f.hdf" \
  >"$TMP/fwd" 2>&1 || { tail -n 5 "$TMP/fwd"; fail "retc forward setup-options --backend $backend"; }
pass "$backend: forward after training with max_seq_length: $(tail -n 1 "$TMP/fwd")"

# The same workdir on to the setup's 4 epochs (resuming after epoch 1).
"$RETC_TEST_MODELS" train setup-options --backend "$backend" --workdir "$TMP/w" >"$TMP/log" 2>"$TMP/err" ||
  { tail -n 30 "$TMP/log" "$TMP/err"; fail "retc train setup-options --backend $backend"; }
expect_final_error "$TMP/log" 0.1 "setup-options ($backend)"
"$VENV/bin/python" - "$TMP/w/model/learning_rates" <<'PY' || fail "learning-rate schedule"
import re, sys
text = open(sys.argv[1]).read()
lrs = {int(e): float(lr) for e, lr in re.findall(r"^(\d+): EpochData\(learningRate=([0-9.e-]+)", text, re.M)}
steps = [int(s) for s in re.findall(r"epoch_num_train_steps': (\d+)", text)]
print("learning rates per epoch:", lrs, "steps per epoch:", steps)
assert sorted(lrs) == [1, 2, 3, 4], lrs
assert abs(lrs[1] - 0.002) < 1e-9 and abs(lrs[2] - 0.006) < 1e-9, "warm-up: %s" % lrs
assert all(0.001 <= lrs[e] <= 0.006 + 1e-9 for e in (3, 4)), "the control's rates: %s" % lrs
assert len(steps) == 4 and min(steps) > 150, "chunks: %s steps per epoch" % steps
PY
pass "$backend: warm-up rates, the control's rates within bounds, chunked batches"

# A learning rate per step (--set lr_schedule, RETURNN's dynamic_learning_rate):
# a bundled model trains with it (the rates at each step: test_params*.py
# step_schedule).
"$RETC" train 12ax --backend "$backend" --workdir "$TMP/ws" --epochs 1 --set train_seqs=200 --set lr_schedule=0:0.0001,10:0.01,40:0.001 \
  >"$TMP/logs" 2>"$TMP/errs" || { tail -n 30 "$TMP/logs" "$TMP/errs"; fail "retc train 12ax --set lr_schedule=... ($backend)"; }
grep -q "^def dynamic_learning_rate(\*, global_train_step, \*\*_kwargs):$" "$TMP/ws/returnn.config" ||
  fail "no dynamic_learning_rate in the config"
[ "$backend" = tf ] || grep -q "^Using dynamic learning rate scheduler that updates based on global train steps" "$TMP/logs" ||
  fail "RETURNN's torch updater did not take the schedule"
pass "$backend: 12ax trains an epoch with a step schedule: $(tail -n 1 "$TMP/logs")"
"$RETC" compile 12ax --set lr_schedule=0:1e-4,100 -o "$TMP/bad.config" 2>"$TMP/bad" && fail "a bad lr_schedule compiled"
grep -q "option lr_schedule: a step schedule is \"STEP:RATE,STEP:RATE,...\"" "$TMP/bad" || fail "the error: $(cat "$TMP/bad")"
[ ! -e "$TMP/bad.config" ] || fail "a config written for a bad lr_schedule"
pass "a bad lr_schedule: $(cat "$TMP/bad")"
