#!/usr/bin/env bash
# The bundled published setups (argument: the backend, tf or torch):
# librispeech-att-2019 and swb-conformer-hybrid-2021 train one short epoch on
# random data (3 sequences) with a finite training loss, and
# librispeech-att-2019 then decodes the dev set with beam search (12
# hypotheses), one hypothesis of BPE labels per sequence. Every layer kind
# and connection of the published networks, their feature and label dims
# (40 features, 10025 BPE labels, 9001 states), but narrower and shallower
# (SHRINK below): the published sizes are built by test_published.py (both
# targets' models, against the published files' networks); here the
# training, its checkpoints and the search run, which at the published size
# cost a minute per model on TF (graph construction, most of it) for no
# other claim. (No `retc check` first: the epoch constructs both networks
# and runs their steps, which is what check proves; check_12ax.sh tests the
# check command.)
# ctest-variants: tf torch
# ctest-cost: 60
source "$(dirname "$0")/lib.sh"
backend=${1:-tf}

# SHRINK MODEL: its --set options here (the smallest depths that keep every
# structure: librispeech's time pooling after its first two BLSTM layers,
# swb's auxiliary losses after blocks 4 and 8).
shrink() {
  case $1 in
  librispeech-att-2019) echo --set lstm_layers=3 --set lstm_dim=64 ;;
  swb-conformer-hybrid-2021) echo --set blocks=8 --set model_dim=64 --set ff_dim=128 ;;
  esac
}

for model in librispeech-att-2019 swb-conformer-hybrid-2021; do
  start=$SECONDS
  # shellcheck disable=SC2046  # shrink's words are separate arguments
  "$RETC" train "$model" $(shrink "$model") --backend "$backend" --workdir "$TMP/$model" >"$TMP/log" 2>"$TMP/err" ||
    { tail -n 30 "$TMP/log" "$TMP/err"; fail "train $model $(shrink "$model") --backend $backend"; }
  # One score per loss: TF "epoch 1 score: ce 7.97 ctc 21.0 error: ...", torch
  # "Epoch 1: Total train loss: ce 7.967 ce_error 1.000 ctc 21.023 ...".
  score=$(grep -E '^(epoch 1 score|Epoch 1: Total train loss): ' "$TMP/log" |
    sed -E 's/^(epoch 1 score|Epoch 1: Total train loss): //; s/ error:.*//') ||
    fail "$model: no epoch 1 train score"
  "$VENV/bin/python" -c "
import math, sys
values = [float(v) for v in sys.argv[1].split() if v[0].isdigit() or v[0] in '-n']
sys.exit(0 if values and all(math.isfinite(v) for v in values) else 1)" "$score" ||
    fail "$model: train score $score"
  tail -n 1 "$TMP/log" | grep -qE '^final dev (frame|label) error: [0-9.e+-]+$' ||
    fail "$model: the last line is not the final dev error: $(tail -n 1 "$TMP/log")"
  pass "$model $(shrink "$model") on $backend: one epoch in $((SECONDS - start)) s, train score $score; $(tail -n 1 "$TMP/log")"
done

model=librispeech-att-2019
# shellcheck disable=SC2046
"$RETC" search "$model" $(shrink "$model") --backend "$backend" --workdir "$TMP/$model" -o "$TMP/hyps.py" \
  >"$TMP/search" 2>"$TMP/err" ||
  { tail -n 30 "$TMP/search" "$TMP/err"; fail "retc search $model --backend $backend"; }
last=$(tail -n 1 "$TMP/search")
[[ "$last" =~ ^dev\ label\ error:\ ([0-9.e+-]+)$ ]] || fail "the last line is not the dev label error: $last"
"$VENV/bin/python" - "$TMP/hyps.py" <<'PY' || fail "the hypotheses file"
import sys
hyps = eval(open(sys.argv[1]).read())
assert len(hyps) == 2, len(hyps)  # the dev set
for tag, hyp in hyps.items():
    labels = [int(v) for v in hyp.split()]
    assert labels and all(0 <= v < 10025 for v in labels), (tag, hyp)  # BPE labels
print("hyps:", len(hyps), "sequences, lengths", [len(h.split()) for h in hyps.values()])
PY
pass "retc search $model ($backend, beam 12): $last"
