#!/usr/bin/env bash
# The speech demo on raw audio, trained on both targets: digits-ctc with
# `--set features=raw` reads the waveforms (OggZipDataset's raw features) and
# computes its log-mel features in the model (nn::log_mel_filterbank_from_raw:
# an STFT of ordinary ops, rf's mel filters; the same per-sequence
# normalization as the dataset's features). It trains on TF and on torch
# from the same corpus as digits_ctc.sh to a final dev label error of at most
# 0.15 (digits-ctc's bound) on each, and `retc search` on torch decodes the
# dev set to at most 0.15 too. Its features against rf's own
# log_mel_filterbank_from_raw: test_modules.py log_mel; across targets:
# cross_backend.mod-log-mel.
# ctest-fixture: digits_corpus
# ctest-cost: 110
source "$(dirname "$0")/lib.sh"

export RETC_CORPUS_DIR="$RETC_BUILD_DIR/test-corpora"  # digits_corpus.sh made it
[ -f "$RETC_CORPUS_DIR/digits/.complete" ] || fail "no test corpus (it.digits_corpus makes it)"
"$RETC" compile digits-ctc --set features=raw -o "$TMP/raw.config" >/dev/null || fail "compile features=raw"
grep -q '"audio": {"features": "raw", "sample_rate": 16000}' "$TMP/raw.config" ||
  fail "the raw variant's datasets do not read raw audio"
grep -q '^batch_size = 1280000$' "$TMP/raw.config" || fail "batch_size not in samples: $(grep '^batch_size' "$TMP/raw.config")"
pass "features=raw: the datasets read 16 kHz samples, batches of 1,280,000 samples (8000 frames)"

for backend in tf torch; do
  start=$SECONDS
  "$RETC" train digits-ctc --set features=raw --backend "$backend" --epochs 4 --workdir "$TMP/$backend" >"$TMP/log_$backend" 2>"$TMP/err" ||
    { tail -n 30 "$TMP/log_$backend" "$TMP/err"; fail "train digits-ctc --set features=raw --backend $backend"; }
  expect_final_error "$TMP/log_$backend" 0.15 "digits-ctc (raw audio) on $backend"
  pass "digits-ctc on raw audio, $backend: final dev label error $FINAL_ERROR in $((SECONDS - start)) s"
done

"$RETC" search digits-ctc --set features=raw --backend torch --workdir "$TMP/torch" -o "$TMP/hyps.py" >"$TMP/search" 2>"$TMP/err" ||
  { tail -n 30 "$TMP/search" "$TMP/err"; fail "retc search digits-ctc --set features=raw --backend torch"; }
last=$(tail -n 1 "$TMP/search")
[[ "$last" =~ ^dev\ label\ error:\ ([0-9.e+-]+)$ ]] || fail "the last line is not the dev label error: $last"
"$VENV/bin/python" -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 0.15 else 1)" "${BASH_REMATCH[1]}" ||
  fail "dev label error ${BASH_REMATCH[1]} > 0.15"
[ "$("$VENV/bin/python" -c "import sys; print(len(eval(open(sys.argv[1]).read())))" "$TMP/hyps.py")" = 200 ] ||
  fail "not 200 hypotheses"
pass "retc search digits-ctc (raw audio, torch): 200 hypotheses, dev label error ${BASH_REMATCH[1]}"
