#!/usr/bin/env bash
# Length normalization in beam search, on both targets (TF: RETURNN's
# ChoiceLayer; torch: retc's _Search), on a search whose log-probs are fixed
# (test model length-norm-search: p(end) 0.4 in the first frame, 0.1 in every
# later one, a loop state whose next value comes from outside the loop; at
# most 5 frames): `retc search` (--length-norm on, the default, as
# RETURNN's) decodes every sequence to five 1s (best log-prob sum per frame),
# --length-norm off to the end label at once (best sum). The tagger under it
# trains one epoch on TF (the search needs a checkpoint), converted for torch.
# ctest-cost: 30
source "$(dirname "$0")/lib.sh"
model=length-norm-search

"$RETC_TEST_MODELS" train $model --workdir "$TMP/w" >"$TMP/log" 2>&1 ||
  { tail -n 20 "$TMP/log"; fail "retc train $model"; }
"$RETC_TEST_MODELS" convert-checkpoint $model --from tf "$TMP/w/model/network.001" "$TMP/c.pt" >/dev/null ||
  fail "convert-checkpoint"
for backend in tf torch; do
  ckpt=("--workdir" "$TMP/w")
  [ "$backend" = torch ] && ckpt=(--checkpoint "$TMP/c.pt")
  for norm in on off; do
    "$RETC_TEST_MODELS" search $model --backend $backend "${ckpt[@]}" --beam 4 --length-norm $norm \
      -o "$TMP/$backend.$norm.py" >"$TMP/search" 2>&1 ||
      { tail -n 20 "$TMP/search"; fail "retc search --backend $backend --length-norm $norm"; }
    want=$([ $norm = on ] && echo "1 1 1 1 1" || echo "0")
    "$VENV/bin/python" - "$TMP/$backend.$norm.py" "$want" <<'PY' || fail "$backend, --length-norm $norm"
import sys
hyps = eval(open(sys.argv[1]).read())
wrong = {k: v for k, v in hyps.items() if v != sys.argv[2]}
assert hyps and not wrong, "not %r: %s" % (sys.argv[2], wrong)
PY
    pass "$backend, --length-norm $norm: all $(grep -c "^'" "$TMP/$backend.$norm.py") sequences '$want'"
  done
done
