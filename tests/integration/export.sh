#!/usr/bin/env bash
# `retc export MODEL --onnx OUT` (the torch target, RETURNN's export path):
# 12ax, 12ax-wn (weight norm: torch's fused kernel has no ONNX op, the export
# takes vector_norm) and conformer-ctc after one torch epoch export, and `retc export` itself
# runs the file in ONNX Runtime against the torch forward on three batches of
# other sizes than the traced one (1, 4 and 9 sequences of up to 5, 13 and 24
# frames), within 1e-4. Independently of that: ONNX Runtime on each dev set, in
# batches of 1, 7 and the rest, gives `retc forward`'s HDF (RETURNN's torch
# forward, another process) within 1e-4 on every frame. transformer-copy's
# encoder (--output encoder) and the whole model (encoder and teacher-forced
# decoder, two inputs) export the same way. Errors, nothing written: a model
# with a loop over a dynamic axis (lstm-attention's decoder) names the op at
# its line; --backend tf is a usage error naming the target; an unknown
# --output lists the model's outputs.
# ctest-cost: 80
source "$(dirname "$0")/lib.sh"

# export_ok LOG: three ONNX Runtime checks, each within 1e-4.
export_ok() {
  [ "$(grep -c '^retc: ONNX Runtime = torch on ' "$1")" -eq 3 ] || fail "expected 3 ONNX Runtime checks: $(cat "$1")"
  grep '^retc: ONNX Runtime = torch on ' "$1" | sed -E 's/.*max \|diff\| //' | while read -r d; do
    "$VENV/bin/python" -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 1e-4 else 1)" "$d" || fail "max |diff| $d > 1e-4"
  done
}

# independent MODEL ONNX HDF CONFIG SIZES: ONNX Runtime on the dev set (CONFIG's `dev`), in
# batches of 1, 7 and the rest (SIZES "ones": each sequence alone), gives `retc forward`'s HDF
# (RETURNN's torch forward, another process).
independent() {
  "$VENV/bin/python" - "$@" <<'PY' || fail "$1: ONNX Runtime differs from retc forward"
import sys
import h5py
import numpy
import onnxruntime
from returnn.config import Config
from returnn.datasets import init_dataset

model, onnx_path, hdf_path, config_path, sizes = sys.argv[1:]
with h5py.File(hdf_path, "r") as f:
    lens = f["seqLengths"][:, 0]
    starts = numpy.concatenate([[0], numpy.cumsum(lens)[:-1]])
    tags = [t.decode() if isinstance(t, bytes) else str(t) for t in f["seqTags"][:]]
    want = {tag: f["inputs"][s:s + n] for tag, s, n in zip(tags, starts, lens)}
config = Config()
config.load_file(config_path)
dev = init_dataset(config.typed_value("dev"))
dev.init_seq_order(epoch=1)
dev.load_seqs(0, dev.num_seqs)
seqs = [(dev.get_tag(i), dev.get_data(i, "data")) for i in range(dev.num_seqs)]
assert sorted(t for t, _ in seqs) == sorted(want), "the HDF's sequences are not the dev set's"
session = onnxruntime.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
types = {"tensor(int32)": "int32", "tensor(int64)": "int64", "tensor(float)": "float32"}
kinds = {i.name: types[i.type] for i in session.get_inputs()}
worst, start = 0.0, 0
sizes = [1] * len(seqs) if sizes == "ones" else [1, 7, len(seqs) - 8]
for size in sizes:
    batch = seqs[start:start + size]
    start += size
    n = numpy.array([len(x) for _, x in batch])
    x = numpy.zeros((size, n.max()) + batch[0][1].shape[1:], kinds["data"])
    for b, (_, seq) in enumerate(batch):
        x[b, :len(seq)] = seq
    feed = {"data": x, "data:size0": numpy.array(size), "data:size1": n}
    out, _, out_lens = session.run(None, {k: numpy.asarray(v).astype(kinds[k]) for k, v in feed.items()})
    for b, (tag, _) in enumerate(batch):
        assert out_lens[b] == len(want[tag]), (tag, out_lens[b], len(want[tag]))
        worst = max(worst, float(numpy.abs(out[b, :out_lens[b]] - want[tag]).max()))
assert worst <= 1e-4, worst
print("%s: ONNX Runtime on the dev set (%d sequences) in batches of %s = retc forward's HDF: max |diff| %.3g"
      % (model, len(seqs), "1" if len(set(sizes)) == 1 else ", ".join(map(str, sizes)), worst))
PY
}

for model in 12ax 12ax-wn conformer-ctc transformer-copy; do
  sets=()
  [[ "$model" = 12ax* ]] || sets=(--set train_seqs=400)  # one short epoch
  "$RETC" train "$model" --backend torch --epochs 1 "${sets[@]}" --progress 0 --workdir "$TMP/$model" >"$TMP/log" 2>"$TMP/err" ||
    { tail -n 20 "$TMP/log" "$TMP/err"; fail "retc train $model --backend torch --epochs 1"; }
done

for model in 12ax 12ax-wn conformer-ctc; do
  "$RETC" export "$model" --workdir "$TMP/$model" --onnx "$TMP/$model.onnx" >"$TMP/out" 2>"$TMP/err" ||
    { cat "$TMP/out" "$TMP/err"; fail "retc export $model"; }
  grep -q "^retc: wrote $TMP/$model.onnx (ONNX opset 17): inputs data, data:size0, data:size1; outputs output, output:size0, output:size1$" "$TMP/out" ||
    fail "$model: the export's inputs and outputs: $(cat "$TMP/out")"
  export_ok "$TMP/out"
  [ -z "$(ls -A "$TMP" | grep retc-tmp)" ] || fail "a scratch directory was left: $(ls -A "$TMP")"
  pass "$model: $(grep 'ONNX Runtime = torch' "$TMP/out" | sed 's/^retc: ONNX Runtime = torch on //' | tr '\n' ';')"
  [ "$model" != 12ax-wn ] || continue  # its weight norm exports (ReduceL2): the rest is 12ax's
  # conformer-ctc's strided conv pads as TF does, by the batch's longest length: a
  # sequence's frames depend on its batch, so each goes alone on both sides.
  alone=()
  [ "$model" = 12ax ] || alone=(--set max_seqs=1)
  "$RETC" forward "$model" --backend torch --workdir "$TMP/$model" "${alone[@]}" -o "$TMP/$model.hdf" >"$TMP/log" 2>"$TMP/err" ||
    { tail -n 20 "$TMP/log" "$TMP/err"; fail "retc forward $model --backend torch"; }
  "$RETC" compile "$model" --backend torch -o "$TMP/$model.config"
  independent "$model" "$TMP/$model.onnx" "$TMP/$model.hdf" "$TMP/$model.config" "$([ ${#alone[@]} = 0 ] && echo mixed || echo ones)"
done

"$RETC" export transformer-copy --workdir "$TMP/transformer-copy" --output encoder --onnx "$TMP/enc.onnx" \
  >"$TMP/out" 2>"$TMP/err" || { cat "$TMP/out" "$TMP/err"; fail "retc export transformer-copy --output encoder"; }
grep -q "inputs data, data:size0, data:size1; outputs encoder, encoder:size0, encoder:size1$" "$TMP/out" ||
  fail "the encoder's inputs and outputs: $(cat "$TMP/out")"
export_ok "$TMP/out"
pass "transformer-copy's encoder: $(tail -n 1 "$TMP/out" | sed 's/^retc: //')"
"$RETC" export transformer-copy --workdir "$TMP/transformer-copy" --onnx "$TMP/tc.onnx" >"$TMP/out" 2>"$TMP/err" ||
  { cat "$TMP/out" "$TMP/err"; fail "retc export transformer-copy"; }
export_ok "$TMP/out"
pass "transformer-copy, encoder and teacher-forced decoder: $(grep '^retc: wrote' "$TMP/out" | sed 's/^.*: inputs/inputs/')"

# Errors: one line each (notes aside), nothing written.
line=$(grep -n "return {loop.state" "$RETC_SOURCE_DIR/configs/lstm_attention.cc" | head -n 1 | cut -d: -f1)
expect_error 1 "lstm_attention.cc:$line:.*ONNX export: computed in a loop over 'tgt_time'\(dyn\)" -- \
  "$RETC" export lstm-attention --onnx "$TMP/bad.onnx"
expect_error 2 "export: the tf target has no ONNX export" -- "$RETC" export 12ax --backend tf --onnx "$TMP/bad.onnx"
expect_error 1 "has no output 'nope' \(its outputs: encoder, output\)" -- \
  "$RETC" export transformer-copy --output nope --workdir "$TMP/transformer-copy" --onnx "$TMP/bad.onnx"
[ ! -e "$TMP/bad.onnx" ] || fail "a failed export wrote its file"
pass "unexportable loop at its line, --backend tf, unknown --output: one line each, nothing written"
