#!/usr/bin/env bash
# Shallow fusion with the bundled lstm-lm, its params loaded with --preload
# (#26): lstm-lm trains one epoch on TF, and so does lm-fusion (test model: a
# bigram tagger of lstm-lm's task with lstm-lm's network as its module "lm",
# frozen, fused as log_softmax(tagger) + lm_scale * log_softmax(lm)); both
# checkpoints are converted to torch. On each target, `retc forward lm-fusion
# --preload lm=LM_CKPT` with lm_scale 0 and 0.5, and `retc forward lstm-lm`
# (the LM's own logits) on the dev set: the fused log-probs at 0.5 minus those
# at 0 equal 0.5 * log_softmax(the LM's logits) within 1e-4 at every frame
# (the formula, and the LM's params taken from its own checkpoint: without
# the preload, lm-fusion's untrained "lm" would give other numbers: checked
# on TF). `retc search lm-fusion --preload` gives the same hypotheses on both
# targets at lm_scale 0.5, and on TF other ones at lm_scale 0 (the LM changes
# the choices; both targets' searches at 0 were alike too, at 1a6d395). A --preload
# checkpoint of another model is one line naming the param, and writes nothing.
# ctest-cost: 80
source "$(dirname "$0")/lib.sh"

bin() { [ "$1" = lstm-lm ] && echo "$RETC" || echo "$RETC_TEST_MODELS"; }  # bundled or test model
train() {  # MODEL DIR [ARGS...]: one epoch on TF
  local model=$1 dir=$2
  shift 2
  "$(bin "$model")" train "$model" --epochs 1 --workdir "$dir" "$@" >"$TMP/log" 2>&1 ||
    { tail -n 20 "$TMP/log"; fail "train $model"; }
}
train lstm-lm "$TMP/lm" --set train_seqs=300
train lm-fusion "$TMP/fusion"
mkdir -p "$TMP/conv"
"$RETC" convert-checkpoint lstm-lm --from tf "$TMP/lm/model/network.001" "$TMP/conv/lm.pt" >/dev/null ||
  fail "convert lstm-lm"
"$RETC_TEST_MODELS" convert-checkpoint lm-fusion --from tf "$TMP/fusion/model/network.001" "$TMP/conv/fusion.pt" \
  >/dev/null || fail "convert lm-fusion"

for backend in tf torch; do
  if [ "$backend" = tf ]; then
    lm="$TMP/lm/model/network.001"; am="$TMP/fusion/model/network.001"
  else
    lm="$TMP/conv/lm.pt"; am="$TMP/conv/fusion.pt"
  fi
  run() {  # COMMAND MODEL OUT [ARGS...]
    local cmd=$1 model=$2 out=$3
    shift 3
    "$(bin "$model")" "$cmd" "$model" --backend "$backend" -o "$out" "$@" >"$TMP/out" 2>&1 ||
      { tail -n 20 "$TMP/out"; fail "$cmd $model --backend $backend $*"; }
  }
  run forward lstm-lm "$TMP/lm_$backend.hdf" --checkpoint "$lm"
  # Without the preload (TF): lm-fusion's own (untrained) "lm".
  [ "$backend" = torch ] ||
    run forward lm-fusion "$TMP/fused_${backend}_own.hdf" --checkpoint "$am" --set lm_scale=0.5
  for scale in 0 0.5; do
    run forward lm-fusion "$TMP/fused_${backend}_$scale.hdf" --checkpoint "$am" --preload "lm=$lm" \
      --set lm_scale=$scale
  done
  # The search: at lm_scale 0.5 on both targets, at 0 (the hypotheses the LM changes) on TF.
  for scale in $([ "$backend" = tf ] && echo 0) 0.5; do
    run search lm-fusion "$TMP/hyps_${backend}_$scale.py" --checkpoint "$am" --preload "lm=$lm" --set lm_scale=$scale
  done
  "$VENV/bin/python" - "$TMP" "$backend" <<'PY' || fail "$backend: the fused log-probs are not the formula's"
import sys
import h5py
import numpy
tmp, backend = sys.argv[1:]
def read(name):
    with h5py.File("%s/%s.hdf" % (tmp, name), "r") as f:
        return f["inputs"][...].astype("float64"), f["seqLengths"][...]
logits, lens = read("lm_" + backend)
f0, lens0 = read("fused_%s_0" % backend)
f5, lens5 = read("fused_%s_0.5" % backend)
assert (lens == lens0).all() and (lens == lens5).all() and logits.shape == f0.shape == f5.shape, (logits.shape, f0.shape)
z = logits - logits.max(-1, keepdims=True)
lm = z - numpy.log(numpy.exp(z).sum(-1, keepdims=True))
diff = float(numpy.abs((f5 - f0) - 0.5 * lm).max())
assert diff <= 1e-4, diff
assert float(numpy.abs(f5 - f0).max()) > 0.1  # the LM counts
if backend == "tf":
    own, _ = read("fused_%s_own" % backend)
    assert float(numpy.abs(own - f5).max()) > 0.1, "the preload changes nothing"
print("%s: fused(0.5) - fused(0) = 0.5 * log_softmax(lstm-lm) over %d frames: max |diff| %.2g"
      % (backend, f0.shape[0], diff))
PY
  pass "$backend: shallow fusion's log-probs follow the formula with lstm-lm's own params (--preload)"
done

"$VENV/bin/python" - "$TMP" <<'PY' || fail "the searches"
import sys
tmp = sys.argv[1]
h = {(b, s): eval(open("%s/hyps_%s_%s.py" % (tmp, b, s)).read()) for b, s in (("tf", "0"), ("tf", "0.5"), ("torch", "0.5"))}
a, b = h["tf", "0.5"], h["torch", "0.5"]
differ = [k for k in a if a[k] != b[k]]
assert a.keys() == b.keys() and not differ, len(differ)
changed = sum(h["tf", "0"][k] != h["tf", "0.5"][k] for k in h["tf", "0"])
assert changed > 0, "lm_scale changes no hypothesis"
print("search: the same %d hypotheses on both targets at lm_scale 0.5; the LM changes %d of them (TF, against lm_scale 0)"
      % (len(a), changed))
PY
pass "lm-fusion's search with the preloaded LM: the same hypotheses on both targets"

# A preload checkpoint of another model (lm-fusion's own, whose params are named lm.*).
rc=0
"$RETC_TEST_MODELS" search lm-fusion --checkpoint "$TMP/fusion/model/network.001"   --preload "lm=$TMP/fusion/model/network.001" -o "$TMP/bad.py" >"$TMP/out" 2>"$TMP/err" || rc=$?
[ "$rc" -eq 1 ] || fail "a wrong --preload checkpoint: exit $rc: $(cat "$TMP/err")"
[ ! -e "$TMP/bad.py" ] || fail "a wrong --preload checkpoint wrote hypotheses"
grep -q "lacks the param embed/weight/param" "$TMP/err" || fail "a wrong --preload checkpoint: $(cat "$TMP/err")"
pass "a --preload checkpoint of another model: $(head -n 1 "$TMP/err")"
# Usage mistakes, before RETURNN starts.
ckpt=(--checkpoint "$TMP/fusion/model/network.001")
expect_error 2 "^retc: error: --preload wants MODULE=CHECKPOINT, got 'lm'" -- \
  "$RETC_TEST_MODELS" search lm-fusion "${ckpt[@]}" --preload lm -o "$TMP/bad.py"
expect_error 2 "^retc: error: --preload: 'lm-fusion' has no params under 'decoder' for its search task" -- \
  "$RETC_TEST_MODELS" search lm-fusion "${ckpt[@]}" --preload "decoder=$TMP/lm/model/network.001" -o "$TMP/bad.py"
expect_error 1 "^retc: error: --preload: no tf checkpoint '$TMP/nope'" -- \
  "$RETC_TEST_MODELS" forward lm-fusion "${ckpt[@]}" --preload "lm=$TMP/nope" -o "$TMP/bad.hdf"
[ ! -e "$TMP/bad.py" ] && [ ! -e "$TMP/bad.hdf" ] || fail "a usage mistake wrote output"
pass "--preload usage mistakes: one line each, nothing written"
