#!/usr/bin/env bash
# The spoken-digits corpus of the digits-ctc tests (a ctest fixture:
# it.digits_ctc and it.digits_ctc_raw read it): 1200 training utterances, 200
# dev utterances of held-out voices, at $RETC_BUILD_DIR/test-corpora/digits,
# a link into a cache made once per version of the maker (below). Also: the
# corpus maker is deterministic (two tiny corpora, byte for byte).
# ctest-fixture-setup: digits_corpus
# ctest-cost: 40
source "$(dirname "$0")/lib.sh"

for run in 1 2; do
  "$VENV/bin/python" "$RETC_SOURCE_DIR/tools/make_digits.py" "$TMP/small$run" --train 12 --dev 4 >/dev/null ||
    fail "make_digits.py"
done
for f in train.zip dev.zip digits.vocab; do
  cmp "$TMP/small1/$f" "$TMP/small2/$f" || fail "make_digits.py is not deterministic: $f"
done
pass "make_digits.py: the same bytes twice"

# Made once per version of the maker (and of espeak-ng, whose voices it
# records) in a cache beside the venv, as ccache keeps the C++ build: 200 s
# of one core a fresh clone need not spend again; the build's test-corpora/digits
# links to it. Made in a temporary directory and renamed: complete or absent.
cache=${XDG_CACHE_HOME:-$HOME/.cache}/retc/test-corpora
key=$({ cat "$RETC_SOURCE_DIR/tools/make_digits.py"; espeak-ng --version; echo "1200 200"; } | sha256sum | cut -c1-16)
made="$cache/digits-$key"
if [ ! -f "$made/.complete" ]; then
  mkdir -p "$cache"
  partial=$(mktemp -d "$cache/.digits-$key.XXXXXX")
  "$VENV/bin/python" "$RETC_SOURCE_DIR/tools/make_digits.py" "$partial/digits" --train 1200 --dev 200 >/dev/null ||
    { rm -rf "$partial"; fail "make_digits.py"; }
  touch "$partial/digits/.complete"
  if ! mv -T "$partial/digits" "$made" 2>/dev/null; then
    [ -f "$made/.complete" ] || fail "could not put the corpus at $made"  # another run made it first
  fi
  rm -rf "$partial"
  echo "made the test corpus in $made"
else
  echo "the test corpus from the cache: $made"
fi
corpus="$RETC_BUILD_DIR/test-corpora/digits"
mkdir -p "$RETC_BUILD_DIR/test-corpora"
rm -rf "$corpus"
ln -s "$made" "$corpus"
pass "the test corpus: $(ls "$corpus/" | tr '\n' ' ')"
