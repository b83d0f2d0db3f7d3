#!/usr/bin/env bash
# Networks that change with the epoch (pretraining stages), on both targets:
# grow-frozen (conformer-ctc-grow: 2 Conformer blocks in epochs 1-2, 4 from
# epoch 3; epoch 3 with learning rate 0) logs each stage, and its epoch-3
# checkpoint holds blocks 0 and 1 exactly as epoch 2 trained them (they
# changed from epoch 1 to 2), with blocks 2 and 3 added (TF: new variables;
# torch: the model holds them from the start, untouched by stage 0's steps).
# The bundled conformer-ctc-grow trains 4 of its 5 epochs, through the change
# (epoch 3) and one past it, with its training loss falling. Usage: pretrain_grow.sh [torch]
# ctest-variants: tf torch
# ctest-cost: 140
source "$(dirname "$0")/lib.sh"
backend=${1:-tf}

"$RETC_TEST_MODELS" train grow-frozen --backend "$backend" --workdir "$TMP/w" >"$TMP/log" 2>"$TMP/err" ||
  { tail -n 30 "$TMP/log" "$TMP/err"; fail "train grow-frozen --backend $backend"; }
grep -Fx "retc: epoch 1: pretraining stage 1 of 2" "$TMP/log" >/dev/null || fail "the log lacks stage 1"
grep -Fx "retc: epoch 3: pretraining stage 2 of 2" "$TMP/log" >/dev/null || fail "the log lacks stage 2"
[ "$(grep -c 'pretraining stage' "$TMP/log")" -eq 2 ] || fail "stage lines: $(grep 'pretraining stage' "$TMP/log")"
pass "$backend: the log shows each stage"
"$VENV/bin/python" - "$backend" "$TMP/w/model" <<'PY' || fail "the checkpoints across the stage change"
import os, re, sys
import numpy
backend, model_dir = sys.argv[1:]

def load(epoch):
    """{param path: value} of the epoch's checkpoint (module paths with dots)."""
    if backend == "torch":
        import torch
        state = torch.load(os.path.join(model_dir, "network.%03d.pt" % epoch), weights_only=False)["model"]
        return {k: v.numpy() for k, v in state.items()}
    import tensorflow as tf
    reader = tf.train.load_checkpoint(os.path.join(model_dir, "network.%03d" % epoch))
    return {k[: -len("/param")].replace("/", "."): reader.get_tensor(k)
            for k in reader.get_variable_to_shape_map() if k.endswith("/param")}

e1, e2, e3 = load(1), load(2), load(3)
block = lambda k: int(re.match(r"encoder\.layers\.(\d+)\.", k).group(1)) if k.startswith("encoder.layers.") else None
# Batch norm's running statistics follow the data whatever the learning rate.
early = [k for k in e3 if block(k) in (0, 1) and "running_" not in k]
late = [k for k in e3 if block(k) in (2, 3)]
assert early and late, sorted(e3)
for k in early:
    assert numpy.array_equal(e3[k], e2[k]), "%s: epoch 3 did not start from epoch 2's value" % k
assert any(not numpy.array_equal(e1[k], e2[k]) for k in early), "blocks 0-1 did not train in epoch 2"
if backend == "tf":
    assert not any(block(k) in (2, 3) for k in e2), "epoch 2 (stage 1) has blocks 2-3"
else:
    for k in late:
        assert numpy.array_equal(e1[k], e2[k]), "%s: stage 0 changed a block it does not use" % k
print("%s: %d params of blocks 0-1 at epoch 3 = epoch 2 (trained since epoch 1); %d params of blocks 2-3 added"
      % (backend, len(early), len(late)))
PY
pass "$backend: after the change, blocks 0-1 hold their trained values"

"$RETC" train conformer-ctc-grow --backend "$backend" --epochs 4 --workdir "$TMP/bundled" >"$TMP/log" 2>"$TMP/err" ||
  { tail -n 30 "$TMP/log" "$TMP/err"; fail "train conformer-ctc-grow --backend $backend"; }
if [ "$backend" = torch ]; then
  mapfile -t scores < <(grep -oE '^Epoch [0-9]+: Total train loss: ctc [0-9.e-]+' "$TMP/log" | awk '{print $7}')
else
  mapfile -t scores < <(grep -oE '^epoch [0-9]+ score: [0-9.e-]+' "$TMP/log" | awk '{print $4}')
fi
[ "${#scores[@]}" -eq 4 ] || fail "expected 4 epoch losses, got ${#scores[*]}"
"$VENV/bin/python" -c "import sys; s = list(map(float, sys.argv[1:])); sys.exit(0 if s[3] < s[2] < s[0] else 1)" "${scores[@]}" ||
  fail "the training loss did not fall through the stages: ${scores[*]}"
pass "$backend: conformer-ctc-grow train loss per epoch ${scores[*]}; $(tail -n 1 "$TMP/log")"
