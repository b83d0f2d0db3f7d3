#!/usr/bin/env bash
# The copy-task decoders (arguments: MODEL, transformer-copy or
# lstm-attention; the backend, tf or torch; the epochs): `retc train MODEL`
# (epochs of 2000 sequences; 5 of transformer-copy's 8 on torch, whose dev
# token error is 0.0005 after epoch 4 and 0 from epoch 5; 15 of
# lstm-attention's 20 on TF, 0.002 after epoch 15 and 0.003 after 20)
# reaches at least 90% token accuracy on dev (final dev frame error, the
# teacher-forced decoder's token error, at most 0.10). Then
# `retc search` decodes dev without teacher forcing (the decoder step by
# step: the Transformer's cached keys and values, the LSTM's state; its own
# labels fed back): sequence accuracy at least 90% with --beam 4 and with
# --beam 1. The checkpoint converted to the other backend decodes there to
# the same best hypothesis for at least 99% of the dev sequences. And an
# undertrained checkpoint (epoch 2's: most hypotheses wrong, so the beam's
# choices matter) decodes to exactly the same hypotheses on both targets
# (RETURNN's own search on TF: its choice and decide layers; retc's beam
# search on torch) with --length-norm on (transformer-copy) and off
# (lstm-attention), beam 4.
# Each model trains once, on one backend, and decodes on both (a full
# training is minutes; that each trains on the other backend too is the short
# run of train_bundled.sh for transformer-copy on TF, and of
# torch_bundled.sh for lstm-attention on torch).
# ctest-cases: it.search_transformer-copy.torch transformer-copy torch 5
# ctest-cases: it.search_lstm-attention.tf lstm-attention tf 15
# ctest-cost: 80
source "$(dirname "$0")/lib.sh"
model=${1:?MODEL}
backend=${2:-tf}
train_epochs=${3:?EPOCHS}
if [ "$backend" = torch ]; then other=tf; else other=torch; fi

start=$SECONDS
"$RETC" train $model --backend "$backend" --epochs "$train_epochs" --workdir "$TMP/work" >"$TMP/log" 2>"$TMP/err" ||
  { tail -n 40 "$TMP/log" "$TMP/err"; fail "retc train $model --backend $backend"; }
epochs=$(grep -cE '^(epoch [0-9]* score: |Epoch [0-9]* evaluation: )' "$TMP/log")
expect_final_error "$TMP/log" 0.10 "$model on $backend"
pass "$model on $backend: token accuracy $("$VENV/bin/python" -c "print(1 - float('$FINAL_ERROR'))") after $epochs epochs in $((SECONDS - start)) s"

# seq_error LOG: the sequence error of a search log.
seq_error() {
  [[ "$(tail -n 2 "$1" | head -n 1)" =~ ^dev\ sequence\ error:\ ([0-9.e+-]+)\ \( ]] || fail "no sequence error in $1: $(tail -n 3 "$1")"
  echo "${BASH_REMATCH[1]}"
}
for beam in 4 1; do
  start=$SECONDS
  "$RETC" search $model --backend "$backend" --workdir "$TMP/work" --beam "$beam" -o "$TMP/hyps$beam.py" \
    >"$TMP/search" 2>"$TMP/err" || { tail -n 30 "$TMP/search" "$TMP/err"; fail "retc search --beam $beam"; }
  tail -n 2 "$TMP/search"
  err=$(seq_error "$TMP/search")
  "$VENV/bin/python" -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 0.10 else 1)" "$err" ||
    fail "--beam $beam: sequence error $err > 0.10"
  pass "retc search $model --backend $backend --beam $beam: sequence accuracy $("$VENV/bin/python" -c "print(1 - float('$err'))") in $((SECONDS - start)) s"
done

epochs=$(printf "%03d" "$epochs")  # RETURNN's checkpoint names
if [ "$backend" = torch ]; then
  ckpt="$TMP/work/model/network.$epochs.pt"; converted="$TMP/conv/network.$epochs"
else
  ckpt="$TMP/work/model/network.$epochs"; converted="$TMP/conv/network.$epochs.pt"
fi
mkdir -p "$TMP/conv"
"$RETC" convert-checkpoint $model --from "$backend" "$ckpt" "$converted" >/dev/null || fail "convert-checkpoint"
"$RETC" search $model --backend "$other" --checkpoint "$converted" --beam 4 -o "$TMP/other.py" \
  >"$TMP/search" 2>"$TMP/err" || { tail -n 30 "$TMP/search" "$TMP/err"; fail "retc search --backend $other"; }
"$VENV/bin/python" - "$TMP/hyps4.py" "$TMP/other.py" <<'PY' || fail "the backends' best hypotheses differ"
import sys
a, b = (eval(open(p).read()) for p in sys.argv[1:])
assert sorted(a) == sorted(b), "different sequences"
same = sum(a[k] == b[k] for k in a)
print("same best hypothesis on both backends: %d of %d dev sequences" % (same, len(a)))
assert same >= 0.99 * len(a)
PY
pass "the $backend checkpoint converted to $other decodes to the same hypotheses"

# Epoch 2's checkpoint, converted: the same hypotheses on both targets.
if [ "$backend" = torch ]; then
  early="$TMP/work/model/network.002.pt"; early_conv="$TMP/conv/network.002"
else
  early="$TMP/work/model/network.002"; early_conv="$TMP/conv/network.002.pt"
fi
"$RETC" convert-checkpoint $model --from "$backend" "$early" "$early_conv" >/dev/null || fail "convert-checkpoint epoch 2"
# One length-norm setting per model (both are covered across the two cases;
# search_length_norm.sh tests the option itself): transformer-copy's default
# (on), lstm-attention off.
if [ "$model" = transformer-copy ]; then norm=on; else norm=off; fi
for norm in $norm; do
  "$RETC" search $model --backend "$backend" --checkpoint "$early" --beam 4 --length-norm $norm \
    -o "$TMP/early_$backend.py" >"$TMP/search" 2>&1 || { tail -n 20 "$TMP/search"; fail "search epoch 2 on $backend"; }
  "$RETC" search $model --backend "$other" --checkpoint "$early_conv" --beam 4 --length-norm $norm \
    -o "$TMP/early_$other.py" >"$TMP/search" 2>&1 || { tail -n 20 "$TMP/search"; fail "search epoch 2 on $other"; }
  "$VENV/bin/python" - "$TMP/early_$backend.py" "$TMP/early_$other.py" "$norm" <<'PY' || fail "epoch 2, --length-norm $norm: the targets' hypotheses differ"
import sys
a, b = (eval(open(p).read()) for p in sys.argv[1:3])
assert sorted(a) == sorted(b), "different sequences"
differ = [k for k in a if a[k] != b[k]]
assert not differ, "%d differ, e.g. %s: %r vs %r" % (len(differ), differ[0], a[differ[0]], b[differ[0]])
print("epoch 2, --length-norm %s: the same %d hypotheses on both targets" % (sys.argv[3], len(a)))
PY
done
pass "an undertrained checkpoint (epoch 2) decodes to the same hypotheses on both targets, --length-norm $norm"
