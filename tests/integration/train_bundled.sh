#!/usr/bin/env bash
# Each bundled model beyond the 12ax demos trains for a short run (2 epochs)
# with its training loss falling.
# ctest-cost: 75
source "$(dirname "$0")/lib.sh"

for model in blstm-tagger lstm-lm transformer-copy conformer-ctc; do
  "$RETC" train "$model" --workdir "$TMP/$model" --epochs 2 >"$TMP/log" 2>"$TMP/err" ||
    { tail -n 30 "$TMP/log" "$TMP/err"; fail "train $model"; }
  mapfile -t scores < <(grep -oE '^epoch [12] score: [0-9.e-]+' "$TMP/log" | awk '{print $4}')
  [ "${#scores[@]}" -eq 2 ] || fail "$model: expected 2 epoch scores, got ${#scores[@]}"
  "$VENV/bin/python" -c "import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if b < a else 1)" "${scores[@]}" ||
    fail "$model: the training loss did not fall: ${scores[*]}"
  pass "$model: train loss ${scores[0]} -> ${scores[1]}; $(tail -n 1 "$TMP/log")"
done
