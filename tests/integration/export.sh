#!/usr/bin/env bash
# `retc export MODEL --onnx OUT` (the torch target, RETURNN's export path):
# 12ax after one torch epoch exports, and `retc export` itself runs the file in
# ONNX Runtime against the torch forward on three batches of other sizes than
# the traced one (1, 4 and 9 sequences of up to 5, 13 and 24 frames), within
# 1e-4. Independently of that: ONNX Runtime on the 100 dev sequences, in
# batches of 1, 7 and 92, gives `retc forward`'s HDF (RETURNN's torch forward,
# another process) within 1e-4 on every frame. transformer-copy's encoder
# (--output encoder) exports the same way. Errors, nothing written: a model
# with a loop over a dynamic axis (lstm-attention's decoder) names the op at
# its line; --backend tf is a usage error naming the target; an unknown
# --output lists the model's outputs.
# ctest-cost: 45
source "$(dirname "$0")/lib.sh"

# export_ok LOG: three ONNX Runtime checks, each within 1e-4.
export_ok() {
  [ "$(grep -c '^retc: ONNX Runtime = torch on ' "$1")" -eq 3 ] || fail "expected 3 ONNX Runtime checks: $(cat "$1")"
  grep '^retc: ONNX Runtime = torch on ' "$1" | sed -E 's/.*max \|diff\| //' | while read -r d; do
    "$VENV/bin/python" -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 1e-4 else 1)" "$d" || fail "max |diff| $d > 1e-4"
  done
}

for model in 12ax transformer-copy; do
  "$RETC" train "$model" --backend torch --epochs 1 --progress 0 --workdir "$TMP/$model" >"$TMP/log" 2>"$TMP/err" ||
    { tail -n 20 "$TMP/log" "$TMP/err"; fail "retc train $model --backend torch --epochs 1"; }
done

"$RETC" export 12ax --workdir "$TMP/12ax" --onnx "$TMP/12ax.onnx" >"$TMP/out" 2>"$TMP/err" ||
  { cat "$TMP/out" "$TMP/err"; fail "retc export 12ax"; }
grep -q "^retc: wrote $TMP/12ax.onnx (ONNX opset 17): inputs data, data:size0, data:size1; outputs output, output:size0, output:size1$" "$TMP/out" ||
  fail "the export's inputs and outputs: $(cat "$TMP/out")"
export_ok "$TMP/out"
[ -z "$(ls -A "$TMP" | grep retc-tmp)" ] || fail "a scratch directory was left: $(ls -A "$TMP")"
pass "12ax: $(grep -c 'ONNX Runtime = torch' "$TMP/out") ONNX Runtime checks, $(tail -n 1 "$TMP/out" | sed 's/^retc: //')"

"$RETC" forward 12ax --backend torch --workdir "$TMP/12ax" -o "$TMP/fwd.hdf" >"$TMP/log" 2>"$TMP/err" ||
  { tail -n 20 "$TMP/log" "$TMP/err"; fail "retc forward 12ax --backend torch"; }
"$VENV/bin/python" - "$TMP/12ax.onnx" "$TMP/fwd.hdf" <<'PY' || fail "ONNX Runtime differs from retc forward"
import sys
import h5py
import numpy
import onnxruntime
from returnn.datasets import init_dataset

onnx_path, hdf_path = sys.argv[1:]
with h5py.File(hdf_path, "r") as f:
    lens = f["seqLengths"][:, 0]
    starts = numpy.concatenate([[0], numpy.cumsum(lens)[:-1]])
    tags = [t.decode() if isinstance(t, bytes) else str(t) for t in f["seqTags"][:]]
    want = {tag: f["inputs"][s:s + n] for tag, s, n in zip(tags, starts, lens)}
dev = init_dataset({"class": "Task12AXDataset", "num_seqs": 100, "fixed_random_seed": 1})  # 12ax's dev set
dev.init_seq_order(epoch=1)
dev.load_seqs(0, 100)
seqs = [(dev.get_tag(i), dev.get_data(i, "data")) for i in range(100)]
assert sorted(t for t, _ in seqs) == sorted(want), "the HDF's sequences are not the dev set's"
session = onnxruntime.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
worst, start = 0.0, 0
for size in (1, 7, 92):
    batch = seqs[start:start + size]
    start += size
    n = numpy.array([len(x) for _, x in batch], "int32")
    x = numpy.zeros((size, n.max(), batch[0][1].shape[1]), "float32")
    for b, (_, seq) in enumerate(batch):
        x[b, :len(seq)] = seq
    out, _, out_lens = session.run(None, {"data": x, "data:size0": numpy.array(size, "int32"), "data:size1": n})
    assert (out_lens == n).all(), (out_lens, n)
    for b, (tag, _) in enumerate(batch):
        worst = max(worst, float(numpy.abs(out[b, :n[b]] - want[tag]).max()))
assert worst <= 1e-4, worst
print("ONNX Runtime on the dev set in batches of 1, 7 and 92 = retc forward's HDF: max |diff| %.3g" % worst)
PY
pass "ONNX Runtime on 12ax's dev set = retc forward (RETURNN's torch forward)"

"$RETC" export transformer-copy --workdir "$TMP/transformer-copy" --output encoder --onnx "$TMP/enc.onnx" \
  >"$TMP/out" 2>"$TMP/err" || { cat "$TMP/out" "$TMP/err"; fail "retc export transformer-copy --output encoder"; }
grep -q "inputs data, data:size0, data:size1; outputs encoder, encoder:size0, encoder:size1$" "$TMP/out" ||
  fail "the encoder's inputs and outputs: $(cat "$TMP/out")"
export_ok "$TMP/out"
pass "transformer-copy's encoder: $(tail -n 1 "$TMP/out" | sed 's/^retc: //')"

# Errors: one line each (notes aside), nothing written.
line=$(grep -n "return {loop.state" "$RETC_SOURCE_DIR/configs/lstm_attention.cc" | head -n 1 | cut -d: -f1)
expect_error 1 "lstm_attention.cc:$line:.*ONNX export: computed in a loop over 'tgt_time'\(dyn\)" -- \
  "$RETC" export lstm-attention --onnx "$TMP/bad.onnx"
expect_error 2 "export: the tf target has no ONNX export" -- "$RETC" export 12ax --backend tf --onnx "$TMP/bad.onnx"
expect_error 1 "has no output 'nope' \(its outputs: encoder, output\)" -- \
  "$RETC" export transformer-copy --output nope --workdir "$TMP/transformer-copy" --onnx "$TMP/bad.onnx"
[ ! -e "$TMP/bad.onnx" ] || fail "a failed export wrote its file"
pass "unexportable loop at its line, --backend tf, unknown --output: one line each, nothing written"
