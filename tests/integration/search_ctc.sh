#!/usr/bin/env bash
# CTC decoding, trained once and decoded on both targets: conformer-ctc
# trains fully on torch (dev label error <= 0.05), then `retc search`
# decodes dev greedily (repeats collapsed, blanks removed; the model's
# mark_as_search_output), writes one hypothesis per sequence in RETURNN's
# search output format and prints the dev label error, <= 0.05, as its last
# line; the checkpoint converted to TF decodes there to the same hypotheses.
# The training uses the torch engine's production options: mixed precision
# (--amp bfloat16, autocast on the CPU), a data-loader worker and a cleanup
# of old checkpoints (--keep-last 2 --keep-best 1: exactly those epochs'
# checkpoints and optimizer states remain); a second run resumes for one
# more epoch and the cleanup follows.
# (CTC training on TF: digits_ctc.sh; conformer-ctc's on TF: train_bundled.sh.)
# ctest-cost: 60
source "$(dirname "$0")/lib.sh"
backend=torch
work="$TMP/work"

start=$SECONDS
production=(--amp bfloat16 --workers 1 --keep-last 2 --keep-best 1)
"$RETC" train conformer-ctc --backend "$backend" --workdir "$work" "${production[@]}" >"$TMP/log" 2>"$TMP/err" ||
  { tail -n 30 "$TMP/log" "$TMP/err"; fail "train conformer-ctc --backend $backend"; }
expect_final_error "$TMP/log" 0.05 "conformer-ctc on $backend"
grep -q "^Using autocast (automatic mixed precision (AMP)) with dtype torch.bfloat16$" "$TMP/log" ||
  fail "RETURNN did not train with autocast in bfloat16"
grep -q "^torch_dataloader_opts = {\"num_workers\": 1}$" "$work/returnn.config" || fail "no data-loader worker"
pass "conformer-ctc on $backend (bfloat16 autocast, a data-loader worker): final dev error $FINAL_ERROR in $((SECONDS - start)) s"
expect_kept_checkpoints "$work" 2 1 .pt .opt.pt
"$RETC" train conformer-ctc --backend "$backend" --workdir "$work" "${production[@]}" --epochs 11 >"$TMP/log11" 2>"$TMP/err" ||
  { tail -n 30 "$TMP/log11" "$TMP/err"; fail "resume conformer-ctc --backend $backend --epochs 11"; }
[ "$(grep -c '^Epoch [0-9]*: Trained' "$TMP/log11")" -eq 1 ] && grep -q '^Epoch 11: Trained' "$TMP/log11" ||
  fail "the resumed run did not train epoch 11 alone"
expect_kept_checkpoints "$work" 2 1 .pt .opt.pt
pass "resumed after the cleanup: epoch 11 trained alone, $(tail -n 1 "$TMP/log11")"

"$RETC" search conformer-ctc --backend "$backend" --workdir "$work" -o "$TMP/hyps.py" >"$TMP/search" 2>"$TMP/err" ||
  { tail -n 30 "$TMP/search" "$TMP/err"; fail "retc search conformer-ctc --backend $backend"; }
tail -n 3 "$TMP/search"
last=$(tail -n 1 "$TMP/search")
[[ "$last" =~ ^dev\ label\ error:\ ([0-9.e+-]+)$ ]] || fail "the last line is not the dev label error: $last"
"$VENV/bin/python" -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 0.05 else 1)" "${BASH_REMATCH[1]}" ||
  fail "dev label error ${BASH_REMATCH[1]} > 0.05"
"$VENV/bin/python" - "$TMP/hyps.py" <<'PY' || fail "the hypotheses file"
import sys
hyps = eval(open(sys.argv[1]).read())
assert len(hyps) == 200, len(hyps)  # the dev set
for tag, hyp in hyps.items():
    labels = [int(v) for v in hyp.split()]
    assert labels and all(0 <= v < 16 for v in labels), (tag, hyp)  # hex digits, no blank (16)
print("hyps:", len(hyps), "sequences, e.g.", next(iter(hyps.items())))
PY
pass "retc search conformer-ctc ($backend): ${last}"

mkdir -p "$TMP/conv"
ckpt=$(ls "$work/model/"network.*.pt | grep -v '\.opt\.pt$' | sort | tail -n 1)
conv="$TMP/conv/$(basename "$ckpt" .pt)"  # network.NNN: RETURNN reads the epoch from the name
"$RETC" convert-checkpoint conformer-ctc --from torch "$ckpt" "$conv" >/dev/null ||
  fail "convert-checkpoint conformer-ctc --from torch"
"$RETC" search conformer-ctc --checkpoint "$conv" -o "$TMP/hyps_tf.py" >"$TMP/search_tf" 2>"$TMP/err" ||
  { tail -n 20 "$TMP/search_tf" "$TMP/err"; fail "TF search with the converted checkpoint"; }
"$VENV/bin/python" - "$TMP/hyps.py" "$TMP/hyps_tf.py" <<'PY' || fail "the targets' hypotheses differ"
import sys
a, b = (eval(open(p).read()) for p in sys.argv[1:])
assert sorted(a) == sorted(b), "different sequences"
diff = [k for k in a if a[k] != b[k]]
assert not diff, "%d of %d differ, e.g. %s: torch %r, TF %r" % (len(diff), len(a), diff[0], a[diff[0]], b[diff[0]])
PY
[ "$(tail -n 1 "$TMP/search_tf")" = "$last" ] || fail "TF search: '$(tail -n 1 "$TMP/search_tf")', torch: '$last'"
pass "the converted checkpoint on TF: the same $(grep -c . "$TMP/hyps_tf.py") lines of hypotheses; ${last}"
