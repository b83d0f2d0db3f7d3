#!/usr/bin/env bash
# Checkpoints of other tools by a map (`retc convert-checkpoint MODEL --from
# returnn-tf|torch-state-dict --map MAP [--to tf|torch] IN OUT`): 12ax's params
# (random values in a RETURNN torch checkpoint) written as a plain torch LSTM and Linear
# keep them (rnn.weight_ih_l0 [4*out, in] in torch's gate order i, f, g, o, an
# unused bias_hh_l0, output.weight [out, in]) and, as another TF config would
# name them, under other TF names. Imported by a map (transpose, gates=ifgo,
# {name} captures), each gives retc's params value for value: the torch import
# equals the original checkpoint, the TF one evaluates to its dev error on TF,
# and the unused source param is listed. A map that misses a param, gives a
# wrong shape, matches a param twice, names a missing source param or has an
# unknown op: one line naming the param (or the map's line), exit 1, nothing
# written.
# ctest-cost: 25
source "$(dirname "$0")/lib.sh"

# 12ax's params with random values as a RETURNN torch checkpoint (what they are
# does not matter here: training them proves nothing more).
"$RETC" compile 12ax --backend torch -o "$TMP/12ax.config"
orig="$TMP/random.pt"
"$VENV/bin/python" - "$TMP/12ax.config" "$orig" <<'PY' || fail "writing a random 12ax checkpoint"
import sys
import numpy, torch
import returnn.frontend as rf
from returnn.config import Config, set_global_config
from returnn.torch.frontend.bridge import rf_module_to_pt_module
config = Config()
config.load_file(sys.argv[1])
set_global_config(config)
rf.select_backend_torch()
state = rf_module_to_pt_module(config.typed_value("get_model")(epoch=1, step=0)).state_dict()
rng = numpy.random.RandomState(3)
state = {k: torch.tensor(rng.normal(0, 0.5, v.shape).astype("float32")) for k, v in state.items()}
torch.save({"model": state, "epoch": 1, "step": 0, "effective_learning_rate": None}, sys.argv[2])
PY
mkdir -p "$TMP/retc_tf" "$TMP/foreign_tf" "$TMP/imp_tf"
"$RETC" convert-checkpoint 12ax --from torch "$orig" "$TMP/retc_tf/network" >/dev/null ||
  fail "convert-checkpoint --from torch"

# The same values as other tools store them.
"$VENV/bin/python" - "$orig" "$TMP/foreign.pt" "$TMP/retc_tf/network" "$TMP/foreign_tf/net" <<'PY' || fail "writing the foreign checkpoints"
import os, sys
import numpy, torch
src, out_pt, retc_tf, out_tf = sys.argv[1:]
state = torch.load(src, map_location="cpu")["model"]
def ifgo(w):  # retc's gate blocks g, i, f, o (last axis) in torch's order i, f, g, o
    g, i, f, o = numpy.split(w, 4, axis=-1)
    return numpy.concatenate([i, f, g, o], axis=-1)
v = {k: t.numpy() for k, t in state.items()}
foreign = {
    "rnn.weight_ih_l0": ifgo(v["lstm.ff_weight"]).T, "rnn.weight_hh_l0": ifgo(v["lstm.rec_weight"]).T,
    "rnn.bias_ih_l0": ifgo(v["lstm.bias"]), "rnn.bias_hh_l0": numpy.zeros_like(v["lstm.bias"]),
    "output.weight": v["out.weight"].T, "output.bias": v["out.bias"]}
torch.save({k: torch.tensor(numpy.ascontiguousarray(a)) for k, a in foreign.items()}, out_pt)
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow as tf
reader = tf.train.load_checkpoint(retc_tf)
names = {"lstm/ff_weight/param": "lstm0_fw/rec/W", "lstm/rec_weight/param": "lstm0_fw/rec/W_re",
         "lstm/bias/param": "lstm0_fw/rec/b", "out/weight/param": "output/weight", "out/bias/param": "output/bias"}
with tf.Graph().as_default():
    vs = [tf.Variable(reader.get_tensor(a), name=b) for a, b in names.items()]
    saver = tf.compat.v1.train.Saver(var_list=vs)
    with tf.compat.v1.Session() as s:
        s.run(tf.compat.v1.global_variables_initializer())
        saver.save(s, out_tf, write_meta_graph=False, write_state=False)
PY

cat >"$TMP/torch.map" <<'EOF'
# 12ax from a torch LSTM and Linear
lstm.ff_weight   rnn.weight_ih_l0  transpose=1,0 gates=ifgo
lstm.rec_weight  rnn.weight_hh_l0  transpose=1,0 gates=ifgo
lstm.bias        rnn.bias_ih_l0    gates=ifgo
out.weight       output.weight     transpose=1,0
out.bias         output.bias
EOF
cat >"$TMP/tf.map" <<'EOF'
lstm.ff_weight   lstm0_fw/rec/W
lstm.rec_weight  lstm0_fw/rec/W_re
lstm.bias        lstm0_fw/rec/b
out.{p}          output/{p}    # weight and bias: the capture stands for the same text
EOF

"$RETC" convert-checkpoint 12ax --from torch-state-dict --map "$TMP/torch.map" "$TMP/foreign.pt" "$TMP/imported.pt" \
  >"$TMP/out" || fail "import --from torch-state-dict"
grep -q "^retc: imported 5 params of '12ax' from torch-state-dict" "$TMP/out" || fail "$(cat "$TMP/out")"
grep -q "^retc: 1 params of $TMP/foreign.pt no rule took: rnn.bias_hh_l0$" "$TMP/out" || fail "unmatched: $(cat "$TMP/out")"
"$RETC" convert-checkpoint 12ax --from returnn-tf --map "$TMP/tf.map" --to torch "$TMP/foreign_tf/net" "$TMP/imported_tf.pt" \
  >/dev/null || fail "import --from returnn-tf --to torch"
"$VENV/bin/python" - "$orig" "$TMP/imported.pt" "$TMP/imported_tf.pt" <<'PY' || fail "the imported params differ"
import sys, torch
want = torch.load(sys.argv[1], map_location="cpu")["model"]
for path in sys.argv[2:]:
    got = torch.load(path, map_location="cpu")["model"]
    assert sorted(got) == sorted(want), (sorted(got), sorted(want))
    for k in want:
        assert torch.equal(got[k], want[k]), k
print("both imports equal the original checkpoint, value for value")
PY
pass "torch-state-dict and returnn-tf imports equal the original params; the unused bias_hh_l0 is listed"

"$RETC" convert-checkpoint 12ax --from torch-state-dict --map "$TMP/torch.map" --to tf "$TMP/foreign.pt" "$TMP/imp_tf/network" \
  >/dev/null || fail "import --to tf"
want=$("$RETC" eval 12ax --backend torch --checkpoint "$orig" 2>/dev/null | tail -n 1)
got=$("$RETC" eval 12ax --checkpoint "$TMP/imp_tf/network" 2>/dev/null | tail -n 1)
[[ "$want" == "dev frame error: "* ]] || fail "eval of the original checkpoint: $want"
[ "$got" = "$want" ] || fail "the TF import evaluates to '$got', the original torch checkpoint to '$want'"
pass "the import for TF evaluates on TF as the original checkpoint on torch: $got"

# Bad maps: one line, nothing written.
bad() {  # NAME PATTERN: the map $TMP/NAME.map fails with PATTERN
  expect_error 1 "$2" -- "$RETC" convert-checkpoint 12ax --from torch-state-dict --map "$TMP/$1.map" "$TMP/foreign.pt" "$TMP/bad.pt"
  [ ! -e "$TMP/bad.pt" ] || fail "$1: a failed import wrote its file"
}
grep -v '^out.bias' "$TMP/torch.map" >"$TMP/missing.map"
bad missing "the map matches no rule to retc's param out.bias \(shape \[2\]\)"
sed 's/^out.weight .*/out.weight       output.weight/' "$TMP/torch.map" >"$TMP/shape.map"
bad shape "retc's param out.weight has the shape \[10, 2\], but .*foreign.pt's output.weight gives \[2, 10\] \(.*shape.map:5\)"
{ cat "$TMP/torch.map"; echo "out.{p} output.{p}"; } >"$TMP/twice.map"
bad twice "retc's param out.weight is matched by two rules: .*twice.map:5 and .*twice.map:7"
sed 's/rnn.bias_ih_l0/rnn.bias/' "$TMP/torch.map" >"$TMP/nosource.map"
bad nosource "retc's param lstm.bias: .*foreign.pt \(.*nosource.map:4\) has no rnn.bias \("
sed 's/gates=ifgo$/flip=1/' "$TMP/torch.map" >"$TMP/op.map"
bad op "op.map:2: unknown op 'flip'"
pass "a missing rule, a wrong shape, a double match, a missing source, an unknown op: one line each, nothing written"
