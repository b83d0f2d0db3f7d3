#!/usr/bin/env bash
# Every bundled model trains on RETURNN's PyTorch engine: blstm-tagger,
# lstm-lm, lstm-attention and 12ax-wn (weight norm's step-stage weights) for
# a short run (2 epochs) with their training loss falling, as the TF test
# (train_bundled.sh) checks them (12ax trains fully on torch in
# torch_12ax.sh, 12ax-wn on TF in demo_12ax_wn.sh). transformer-copy
# trains fully in search_copy.sh (on torch; lstm-attention there on TF),
# conformer-ctc in search_ctc.sh (on torch, decoded on both). The realistic-size
# conformer-12x512: its torch model holds every param of TF's by name and
# gives TF's outputs (test_cross_backend.py), and the published-size
# swb-conformer-hybrid-2021 trains on torch (published_setups.sh).
# ctest-cost: 160
source "$(dirname "$0")/lib.sh"

for model in blstm-tagger lstm-lm lstm-attention 12ax-wn; do
  "$RETC" train "$model" --backend torch --workdir "$TMP/$model" --epochs 2 >"$TMP/log" 2>"$TMP/err" ||
    { tail -n 30 "$TMP/log" "$TMP/err"; fail "train $model --backend torch"; }
  mapfile -t scores < <(grep -oE '^Epoch [12]: Total train loss: [^ ]+ [0-9.e-]+' "$TMP/log" | awk '{print $7}')
  [ "${#scores[@]}" -eq 2 ] || fail "$model: expected 2 epoch losses, got ${#scores[@]}: $(grep '^Epoch' "$TMP/log")"
  "$VENV/bin/python" -c "import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if b < a else 1)" "${scores[@]}" ||
    fail "$model: the training loss did not fall: ${scores[*]}"
  pass "$model on torch: train loss ${scores[0]} -> ${scores[1]}; $(tail -n 1 "$TMP/log")"
done
