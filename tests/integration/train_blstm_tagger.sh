#!/usr/bin/env bash
# The bundled blstm-tagger trains for a short run (2 epochs) with its loss falling.
source "$(dirname "$0")/lib.sh"

"$RETC" train blstm-tagger --workdir "$TMP/work" --epochs 2 >"$TMP/log" 2>"$TMP/err" || { tail -n 30 "$TMP/log" "$TMP/err"; fail "train"; }
mapfile -t scores < <(grep -oE '^epoch [12] score: [0-9.e-]+' "$TMP/log" | awk '{print $4}')
[ "${#scores[@]}" -eq 2 ] || fail "expected 2 epoch scores, got ${#scores[@]}"
"$VENV/bin/python" -c "import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if b < a else 1)" "${scores[@]}" ||
  fail "the training loss did not fall: ${scores[*]}"
pass "blstm-tagger train loss ${scores[0]} -> ${scores[1]}; $(tail -n 1 "$TMP/log")"
