#!/usr/bin/env bash
# The speech demo, trained once and decoded on both targets: digits-ctc
# trains on TF (4 of its 5 epochs) on a spoken-digits corpus made here (tools/make_digits.py:
# 1200 training utterances, 200 dev utterances of held-out voices; the
# bundled corpus of tools/setup.sh has 3000) through OggZipDataset with
# RETURNN's log-mel features, to a final dev label error of at most 0.15 (its
# last line), and `retc search` decodes the dev set to a label error of at
# most 0.15; its curriculum (epoch_wise_filter) shortens epoch 1. The TF
# checkpoint converted to torch decodes the dev set there (the same
# pipeline: OggZipDataset, log-mel features, CTC decoding) to the same label
# error, and `retc eval` runs on it. Also: a missing corpus is a one-line
# error that says how to make it. During training, retc's progress lines
# appear, plain and without control characters when piped. The corpus: digits_corpus.sh (a fixture;
# it also checks that the maker is deterministic). CTC training on torch:
# search_ctc.sh (conformer-ctc).
# ctest-fixture: digits_corpus
# ctest-cost: 170
source "$(dirname "$0")/lib.sh"
backend=tf

RETC_CORPUS_DIR="$TMP/none" expect_error 1 "reads $TMP/none/digits/train.zip, which does not exist: make the digits corpus with tools/setup.sh" -- \
  "$RETC" train digits-ctc --backend "$backend" --workdir "$TMP/never"
[ ! -e "$TMP/never" ] || fail "train made a workdir without its corpus"
pass "a missing corpus: one line, how to make it"

export RETC_CORPUS_DIR="$RETC_BUILD_DIR/test-corpora"  # digits_corpus.sh made it
[ -f "$RETC_CORPUS_DIR/digits/.complete" ] || fail "no test corpus (it.digits_corpus makes it)"
start=$SECONDS
# 4 of its 5 epochs: on the test corpus its dev label error is 0.039 after epoch 4 and after 5.
"$RETC" train digits-ctc --backend "$backend" --epochs 4 --workdir "$TMP/work" --progress 2 >"$TMP/log" 2>"$TMP/err" ||
  { tail -n 30 "$TMP/log" "$TMP/err"; fail "train digits-ctc --backend $backend"; }
expect_final_error "$TMP/log" 0.15 "digits-ctc on $backend"
# The curriculum (epoch_wise_filter: epoch 1 on utterances of a mean of at
# most 0.8 s) makes epoch 1 shorter than epoch 2.
mapfile -t steps < <(grep -oE '^train epoch [12], finished after [0-9]+ steps' "$TMP/log" | awk '{print $6}')
[ "${#steps[@]}" -eq 2 ] && [ $((steps[0] * 3)) -lt $((steps[1] * 2)) ] ||
  fail "epoch_wise_filter: steps in epochs 1 and 2: ${steps[*]}"
pass "the curriculum: ${steps[0]} steps in epoch 1, ${steps[1]} in epoch 2"
tail -n 1 "$TMP/log" | grep -E '^final dev label error: ' >/dev/null || fail "not a label error: $(tail -n 1 "$TMP/log")"
# Progress during an epoch (retc's lines, not RETURNN's log file's; an epoch of
# the test corpus takes a few seconds, hence every 2 s), plain when piped: "retc: progress: epoch E step S, N seqs/s N frames/s, ctc L, elapsed
# H:MM:SS, eta H:MM:SS", and no control characters anywhere in the output.
grep -E '^retc: progress: epoch [0-9]+ step [0-9]+, [0-9.]+ seqs/s [0-9]+ frames/s, [a-z_:]+ [0-9.e+-]+, elapsed [0-9]+:[0-9]{2}:[0-9]{2}, eta [0-9]+:[0-9]{2}:[0-9]{2}$' "$TMP/log" >"$TMP/progress" ||
  fail "no progress line during training: $(head -n 40 "$TMP/log")"
! grep -q "retc: progress" "$TMP/work/returnn.log" || fail "progress lines in RETURNN's own log file"
! LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$TMP/log" || fail "control characters in piped output"
pass "$(wc -l <"$TMP/progress") progress lines during training, plain when piped: $(head -n 1 "$TMP/progress")"
pass "digits-ctc on $backend: final dev label error $FINAL_ERROR in $((SECONDS - start)) s"

"$RETC" search digits-ctc --backend "$backend" --workdir "$TMP/work" -o "$TMP/hyps.py" >"$TMP/search" 2>"$TMP/err" ||
  { tail -n 30 "$TMP/search" "$TMP/err"; fail "retc search digits-ctc --backend $backend"; }
tail -n 3 "$TMP/search"
last=$(tail -n 1 "$TMP/search")
[[ "$last" =~ ^dev\ label\ error:\ ([0-9.e+-]+)$ ]] || fail "the last line is not the dev label error: $last"
"$VENV/bin/python" -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 0.15 else 1)" "${BASH_REMATCH[1]}" ||
  fail "dev label error ${BASH_REMATCH[1]} > 0.15"
"$VENV/bin/python" - "$TMP/hyps.py" <<'PY' || fail "the hypotheses file"
import sys
hyps = eval(open(sys.argv[1]).read())
assert len(hyps) == 200, len(hyps)  # the dev set: 200 utterances of held-out voices
voices = {tag.rsplit("/", 1)[1] for tag in hyps}
assert all(v.split("+")[0] in ("en-gb-scotland", "en-gb-x-gbclan") for v in voices), voices
for tag, hyp in hyps.items():
    assert all(0 <= int(v) < 10 for v in hyp.split()), (tag, hyp)  # digits, no blank (10)
print("%d hypotheses, voices %s" % (len(hyps), sorted(voices)))
PY
pass "retc search digits-ctc ($backend) on held-out voices: dev label error ${BASH_REMATCH[1]}"

# The TF checkpoint converted to torch decodes the same: its params are all
# in it (the random layers' state variables of TF, SpecAugment's, are not
# params; torch has none).
mkdir -p "$TMP/conv"
ckpt=$(ls "$TMP/work/model/"network.*.index | sort | tail -n 1)
conv="$TMP/conv/$(basename "$ckpt" .index).pt"  # network.NNN.pt: RETURNN reads the epoch from the name
"$RETC" convert-checkpoint digits-ctc --from tf "${ckpt%.index}" "$conv" >/dev/null ||
  fail "convert-checkpoint digits-ctc --from tf"
"$RETC" search digits-ctc --backend torch --checkpoint "$conv" -o "$TMP/hyps_torch.py" >"$TMP/search_torch" 2>"$TMP/err" ||
  { tail -n 20 "$TMP/search_torch" "$TMP/err"; fail "torch search with the converted checkpoint"; }
[ "$(tail -n 1 "$TMP/search_torch")" = "$last" ] ||
  fail "torch search of the converted checkpoint: '$(tail -n 1 "$TMP/search_torch")', TF: '$last'"
"$RETC" eval digits-ctc --backend torch --checkpoint "$conv" >"$TMP/eval_torch" 2>"$TMP/err" ||
  { tail -n 20 "$TMP/eval_torch" "$TMP/err"; fail "torch eval with the converted checkpoint"; }
pass "the converted checkpoint on torch: search '$(tail -n 1 "$TMP/search_torch")' as on TF; eval '$(tail -n 1 "$TMP/eval_torch")'"
