#!/usr/bin/env bash
# The torch target (RETURNN's PyTorch engine) on 12ax: `retc check` lists the
# state_dict's params by their module paths with the IR's shapes; `retc
# train` trains 5 epochs to a dev frame error of at most 0.05 and a second
# run resumes; RETURNN's own entry point runs the emitted config; a param
# option the target cannot give (a device of its own) is a one-line
# build-time error at the user's line naming the target.
# ctest-cost: 50
source "$(dirname "$0")/lib.sh"

"$RETC" check 12ax --backend torch >"$TMP/check" 2>"$TMP/err" || { cat "$TMP/err"; fail "retc check 12ax --backend torch"; }
for v in "lstm.ff_weight [9, 40]" "lstm.rec_weight [10, 40]" "lstm.bias [40]" "out.weight [10, 2]" "out.bias [2]"; do
  grep -Fx "variable $v" "$TMP/check" >/dev/null || fail "check lacks 'variable $v': $(cat "$TMP/check")"
done
grep -F "12ax: 5 variables, 822 parameters" "$TMP/check" >/dev/null || fail "check summary: $(tail -n 1 "$TMP/check")"
pass "retc check 12ax --backend torch: the params at their module paths"

"$RETC" train 12ax --backend torch --workdir "$TMP/work" >"$TMP/log" 2>"$TMP/err" || { tail -n 40 "$TMP/log" "$TMP/err"; fail "retc train 12ax --backend torch"; }
grep -E "^Epoch [0-9]+ evaluation: " "$TMP/log"
[ "$(grep -c '^Epoch [0-9]* evaluation: ' "$TMP/log")" -eq 5 ] || fail "expected 5 evaluated epochs"
expect_final_error "$TMP/log" 0.05 "12ax on torch"
# The emitted Adam takes torch's fused update (RETURNN prints the optimizer's group options).
sed -n '/^Optimizer: Adam (/,/^)/p' "$TMP/log" | grep -Fx "    fused: True" >/dev/null ||
  fail "the torch Adam is not fused: $(sed -n '/^Optimizer:/,/^)/p' "$TMP/log")"
last=$(tail -n 1 "$TMP/log")
"$RETC" train 12ax --backend torch --workdir "$TMP/work" >"$TMP/log2" 2>"$TMP/err2" || fail "second retc train"
[ "$(grep -c '^Epoch [0-9]* evaluation: ' "$TMP/log2")" -eq 0 ] || fail "the second run trained again"
[ "$(tail -n 1 "$TMP/log2")" = "$last" ] || fail "the second run reports another error"
pass "a second torch run resumes and reports the same result"

mkdir -p "$TMP/conv"
# The trained torch checkpoint converts to TF and back, value for value; a
# checkpoint of another model is one line and writes nothing.
"$RETC" convert-checkpoint 12ax --from torch "$TMP/work/model/network.005.pt" "$TMP/conv/network.005" >"$TMP/conv.log" ||
  fail "convert-checkpoint --from torch"
grep -Fx "retc: converted 5 params of '12ax' from torch ($TMP/work/model/network.005.pt) to tf ($TMP/conv/network.005), epoch 5, step 500" "$TMP/conv.log" >/dev/null ||
  fail "convert-checkpoint: $(cat "$TMP/conv.log")"
"$RETC" convert-checkpoint 12ax --from tf "$TMP/conv/network.005" "$TMP/conv/back.pt" >/dev/null || fail "convert-checkpoint --from tf"
"$VENV/bin/python" - "$TMP/work/model/network.005.pt" "$TMP/conv/back.pt" <<'PY' || fail "torch -> tf -> torch changed the params"
import sys
import torch
a, b = (torch.load(p, weights_only=False) for p in sys.argv[1:])
assert sorted(a["model"]) == sorted(b["model"]), (sorted(a["model"]), sorted(b["model"]))
for k in a["model"]:
    assert torch.equal(a["model"][k], b["model"][k]), k
assert (b["epoch"], b["step"]) == (a["epoch"], a["step"]), (b["epoch"], b["step"])
PY
expect_error 1 "^retc: error: checkpoint conversion failed: [^ ]* lacks the param .* \(a checkpoint of another model\?\)" -- \
  "$RETC" convert-checkpoint lstm-lm --from torch "$TMP/work/model/network.005.pt" "$TMP/conv/lm"
[ ! -e "$TMP/conv/lm.index" ] || fail "a failed conversion wrote a checkpoint"
pass "convert-checkpoint: torch -> tf -> torch gives the same params, epoch and step; another model's checkpoint is an error"

mkdir -p "$TMP/rnn"
"$RETC" compile 12ax --backend torch --epochs 1 --model-dir "$TMP/rnn/model" -o "$TMP/rnn/12ax.config"
(cd "$TMP/rnn" && "$VENV/bin/python" -m returnn 12ax.config >"$TMP/rnn.log" 2>&1) || { tail -n 30 "$TMP/rnn.log"; fail "python -m returnn on the torch config"; }
grep -E "^Epoch 1 evaluation: " "$TMP/rnn.log" >/dev/null || fail "python -m returnn: no evaluated epoch"
pass "python -m returnn trains the emitted torch config"

expect_error 1 "param_models.cc:[0-9]+:[0-9]+: error: param 'double_outer': the torch target does not support a device of its own \\(\"CPU:0\"\\): RETURNN's torch engine puts the whole model on one device \\(the tf target can: --backend tf\\)" -- \
  "$RETC_TEST_MODELS" compile scoped --backend torch -o "$TMP/t.config"
[ ! -e "$TMP/t.config" ] || fail "wrote a config for a model the target cannot give its param options"
pass "a per-param device is a build-time error naming the target"
