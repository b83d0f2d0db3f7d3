#!/usr/bin/env bash
# Inference on 12ax (argument: the backend, tf or torch): `retc eval` on the
# last checkpoint prints the dev frame error that training printed for it;
# `retc forward` writes an HDF equal to the model's output computed in
# forward_check.py on the same sequences; bad input (a missing checkpoint,
# another model's, no checkpoint in the workdir, --beam 0, a model without
# a search output) is one line on stderr and writes nothing; a killed
# training's scratch directory beside the checkpoints goes when it is run again.
# On TF, a 2-epoch training's TensorBoard logs hold the graph twice (the first
# training and dev runs, not each epoch's), and epoch 2's .meta equals epoch 1's.
# ctest-variants: tf torch
# ctest-cost: 60
source "$(dirname "$0")/lib.sh"
backend=${1:-tf}
work="$TMP/work"

"$RETC" train 12ax --backend "$backend" --epochs 2 --workdir "$work" >"$TMP/log" 2>"$TMP/err" ||
  { tail -n 30 "$TMP/log" "$TMP/err"; fail "retc train 12ax --backend $backend"; }
expect_final_error "$TMP/log" 0.5 "12ax on $backend, 2 epochs"
trained=$FINAL_ERROR
if [ "$backend" = tf ]; then  # the graph once in TensorBoard's logs, the same .meta each epoch
  cmp -s "$work/model/network.001.meta" "$work/model/network.002.meta" || fail "the two epochs' .meta differ"
  "$VENV/bin/python" - "$work/model" <<'PY' || fail "TensorBoard's logs"
import glob, os, sys
from tensorflow.compat.v1.train import summary_iterator
files = sorted(glob.glob(os.path.join(sys.argv[1], "*", "events.out.tfevents.*")))
graphs = sum(1 for f in files for e in summary_iterator(f) if e.graph_def)
scalars = sum(1 for f in files for e in summary_iterator(f) if e.summary.value)
assert len(files) == 4 and graphs == 2 and scalars, (files, graphs, scalars)  # 2 epochs, each train + dev
print("%d event files, the graph in %d (the first train and dev runs), %d with scalars" % (len(files), graphs, scalars))
PY
  pass "tf: the graph in TensorBoard's logs once (training, dev); epoch 2's .meta the same as epoch 1's"
fi

# What a training killed between its last save's renames and its cleanup leaves (the
# scratch directory of a process that is gone): training again, with every epoch
# saved, trains nothing, says so, and removes it.
true & dead=$!
wait "$dead"
mkdir "$work/model/.network.002.retc-tmp-$dead"
"$RETC" train 12ax --backend "$backend" --epochs 2 --workdir "$work" >"$TMP/again" 2>&1 ||
  { tail -n 30 "$TMP/again"; fail "retc train 12ax on a finished workdir"; }
[ "$(tail -n 1 "$TMP/again")" = "final dev frame error: $trained" ] || fail "training again: $(tail -n 3 "$TMP/again")"
[ ! -e "$work/model/.network.002.retc-tmp-$dead" ] || fail "training again left a killed run's scratch directory"
"$RETC" eval 12ax --backend "$backend" --workdir "$work" >"$TMP/eval" 2>"$TMP/err" ||
  { tail -n 30 "$TMP/eval" "$TMP/err"; fail "retc eval"; }
grep -E "^Epoch 2 evaluation: dev: |^dev: score " "$TMP/eval" >/dev/null || fail "eval: no RETURNN report: $(tail -n 5 "$TMP/eval")"
[ "$(tail -n 1 "$TMP/eval")" = "dev frame error: $trained" ] ||
  fail "eval's last line '$(tail -n 1 "$TMP/eval")' is not training's dev frame error $trained"
pass "retc eval ($backend) on the last checkpoint: dev frame error $trained, as training printed"

if [ "$backend" = torch ]; then ckpt="$work/model/network.002.pt"; else ckpt="$work/model/network.002"; fi
"$RETC" forward 12ax --backend "$backend" --checkpoint "$ckpt" -o "$TMP/out.hdf" >"$TMP/fwd" 2>"$TMP/err" ||
  { tail -n 30 "$TMP/fwd" "$TMP/err"; fail "retc forward"; }
[ "$(tail -n 1 "$TMP/fwd")" = "retc: wrote $TMP/out.hdf (epoch 2)" ] || fail "forward: $(tail -n 1 "$TMP/fwd")"
ls "$TMP" | grep -F retc-tmp && fail "forward left a temporary file"
PYTHONPATH="$(dirname "$0")" "$VENV/bin/python" "$(dirname "$0")/forward_check.py" 12ax "$backend" "$ckpt" "$TMP/out.hdf" ||
  fail "the HDF differs from the model's output"
pass "retc forward ($backend): the HDF equals the model's output"

expect_error 1 "^retc: error: no (TF|torch) checkpoint '$TMP/none" -- \
  "$RETC" forward 12ax --backend "$backend" --checkpoint "$TMP/none" -o "$TMP/x.hdf"
[ ! -e "$TMP/x.hdf" ] || fail "a failed forward wrote its output"
expect_error 1 "^retc: error: no $backend checkpoint in '$TMP/empty/model' \(train '12ax' first" -- \
  "$RETC" eval 12ax --backend "$backend" --workdir "$TMP/empty"
expect_error 1 "lacks the param .* \(a checkpoint of another model\?\)" -- \
  "$RETC" forward blstm-tagger --backend "$backend" --checkpoint "$ckpt" -o "$TMP/x.hdf"
[ "$(ls "$TMP" | grep -c 'x.hdf')" -eq 0 ] || fail "a failed forward wrote its output"
expect_error 2 "^retc: error: --beam needs a positive integer, got '0'" -- \
  "$RETC" search 12ax --backend "$backend" --workdir "$work" --beam 0
expect_error 2 "^retc: error: --length-norm must be on or off, got 'yes'" -- \
  "$RETC" search 12ax --backend "$backend" --workdir "$TMP/nowhere" --length-norm yes
expect_error 1 "^retc: error: model '12ax' has no search output to decode" -- \
  "$RETC" search 12ax --backend "$backend" --workdir "$work"
expect_error 2 "^retc: error: forward needs -o OUT.hdf" -- "$RETC" forward 12ax --backend "$backend"
pass "bad input to eval, forward and search ($backend): one line each, nothing written"
