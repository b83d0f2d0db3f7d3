#!/usr/bin/env bash
# The spoken-digits corpus of the digits-ctc tests, made once per build (a
# ctest fixture: it.digits_ctc reads it): 1200 training
# utterances, 200 dev utterances of held-out voices, in
# $RETC_BUILD_DIR/test-corpora/digits (kept while it is complete). Also: the
# corpus maker is deterministic (two tiny corpora, byte for byte).
# ctest-fixture-setup: digits_corpus
# ctest-cost: 250
source "$(dirname "$0")/lib.sh"

for run in 1 2; do
  "$VENV/bin/python" "$RETC_SOURCE_DIR/tools/make_digits.py" "$TMP/small$run" --train 12 --dev 4 >/dev/null ||
    fail "make_digits.py"
done
for f in train.zip dev.zip digits.vocab; do
  cmp "$TMP/small1/$f" "$TMP/small2/$f" || fail "make_digits.py is not deterministic: $f"
done
pass "make_digits.py: the same bytes twice"

corpus="$RETC_BUILD_DIR/test-corpora/digits"
if [ ! -f "$corpus/.complete" ]; then
  rm -rf "$corpus"
  "$VENV/bin/python" "$RETC_SOURCE_DIR/tools/make_digits.py" "$corpus" --train 1200 --dev 200 >/dev/null ||
    fail "make_digits.py"
  touch "$corpus/.complete"
fi
pass "the test corpus: $(ls "$corpus" | tr '\n' ' ')"
