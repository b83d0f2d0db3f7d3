#!/usr/bin/env bash
# The bundled models the torch target lowers so far, beyond 12ax, train on
# RETURNN's PyTorch engine for a short run (2 epochs) with their training loss
# falling, as the TF test (train_bundled.sh) checks them.
source "$(dirname "$0")/lib.sh"

for model in blstm-tagger lstm-lm; do
  "$RETC" train "$model" --backend torch --workdir "$TMP/$model" --epochs 2 >"$TMP/log" 2>"$TMP/err" ||
    { tail -n 30 "$TMP/log" "$TMP/err"; fail "train $model --backend torch"; }
  mapfile -t scores < <(grep -oE '^Epoch [12]: Total train loss: [^ ]+ [0-9.e-]+' "$TMP/log" | awk '{print $7}')
  [ "${#scores[@]}" -eq 2 ] || fail "$model: expected 2 epoch losses, got ${#scores[@]}: $(grep '^Epoch' "$TMP/log")"
  "$VENV/bin/python" -c "import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if b < a else 1)" "${scores[@]}" ||
    fail "$model: the training loss did not fall: ${scores[*]}"
  pass "$model on torch: train loss ${scores[0]} -> ${scores[1]}; $(tail -n 1 "$TMP/log")"
done
