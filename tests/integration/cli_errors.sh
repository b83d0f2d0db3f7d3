#!/usr/bin/env bash
# Bad input gives one clear line on stderr, a non-zero exit and no output file.
source "$(dirname "$0")/lib.sh"

expect_error 1 "^retc: error: unknown model 'nope'; known models: 12ax, 12ax-wn, blstm-tagger, lstm-lm, transformer-copy, lstm-attention, conformer-ctc, conformer-ctc-grow, conformer-12x512, conformer-transducer, digits-ctc, librispeech-att-2019, swb-conformer-hybrid-2021$" -- "$RETC" compile nope -o "$TMP/a.config"
[ ! -e "$TMP/a.config" ] || fail "unknown model wrote a file"
expect_error 1 "unknown model" -- "$RETC" check nope
expect_error 1 "unknown model" -- "$RETC" train nope --workdir "$TMP/w"
expect_error 2 "^retc: error: unknown backend .nope.; backends: tf, torch" -- "$RETC" compile 12ax --backend nope -o "$TMP/b.config"
[ ! -e "$TMP/b.config" ] || fail "wrote a config for an unknown backend"
expect_error 1 "unknown model" -- "$RETC" dump-ir nope
pass "unknown model"
# A bad RETC_TF_GRAPH_OPTIMIZER (on or off): one line, before RETURNN builds anything.
RETC_TF_GRAPH_OPTIMIZER=maybe expect_error 1 "^retc: error: RETURNN check failed: RETC_TF_GRAPH_OPTIMIZER must be on or off, not 'maybe' " -- "$RETC" check 12ax
pass "a bad RETC_TF_GRAPH_OPTIMIZER"

expect_error 1 "^retc: error: cannot write '$TMP/missing/dir/a.config': No such file or directory$" -- \
  "$RETC" compile 12ax -o "$TMP/missing/dir/a.config"
[ ! -e "$TMP/missing" ] || fail "a directory was created"
mkdir "$TMP/ro"
chmod 555 "$TMP/ro"
if [ "$(id -u)" = 0 ] && touch "$TMP/ro/probe" 2>/dev/null; then
  rm -f "$TMP/ro/probe"  # root ignores permissions; a directory path is unwritable for anyone
  expect_error 1 "cannot write '$TMP/ro'" -- "$RETC" compile 12ax -o "$TMP/ro"
else
  expect_error 1 "cannot write '$TMP/ro/a.config'" -- "$RETC" compile 12ax -o "$TMP/ro/a.config"
fi
[ -z "$(ls -A "$TMP/ro")" ] || fail "files left in $TMP/ro: $(ls -A "$TMP/ro")"
pass "unwritable output"

line=$(grep -n 'lin->forward(x).mark_as_output();' "$RETC_SOURCE_DIR/tests/test_models.cc" | head -1 | cut -d: -f1)
expect_error 1 "test_models\.cc:$line:[0-9]+: error: linear '<root>': input dim 'feat'\(512\) does not match in_dim 'hidden'\(256\)$" -- \
  "$RETC_TEST_MODELS" compile bad-dims -o "$TMP/bad.config"
[ ! -e "$TMP/bad.config" ] || fail "bad model wrote a file"
expect_error 1 "test_models\.cc:$line:" -- "$RETC_TEST_MODELS" check bad-dims
expect_error 1 "test_models\.cc:$line:" -- "$RETC_TEST_MODELS" train bad-dims --workdir "$TMP/w2"
[ ! -e "$TMP/w2/returnn.config" ] || fail "train wrote a config for a bad model"
pass "model with mismatched dims"

line=$(grep -n 'nn::Tensor init = nn::dot(x, aux' "$RETC_SOURCE_DIR/tests/test_models.cc" | cut -d: -f1)
NOTES=1 expect_error 1 "test_models\.cc:$line:[0-9]+: error: node %[0-9]+ \(dot\): a param-init node may not read data" -- \
  "$RETC_TEST_MODELS" compile init-reads-data -o "$TMP/init.config"
[ ! -e "$TMP/init.config" ] || fail "stage violation wrote a file"
pass "an initial value computed from data (stage violation)"

line=$(grep -n '// raw samples: no feature dim' "$RETC_SOURCE_DIR/tests/test_models.cc" | cut -d: -f1)
expect_error 1 "test_models\.cc:$line:[0-9]+: error: extern data 'data' \[B, 'time'\(dyn\)\] float32 has no feature dim, which RETURNN's DummyGenericDataset \(the training setup's random data\) needs" -- \
  "$RETC_TEST_MODELS" train raw-samples --workdir "$TMP/w3"
pass "data without a feature dim, random training data: $(cat "$TMP/err")"

line=$(grep -n '// skips every other frame' "$RETC_SOURCE_DIR/tests/test_models.cc" | cut -d: -f1)
expect_error 1 "test_models\.cc:$line:[0-9]+: error: pool: a stride of 2 over a window of 1 skips frames, which the tf target's pooling \(tf\.nn\.pool\) refuses" -- \
  "$RETC_TEST_MODELS" compile pool-skips -o "$TMP/pool.config"
"$RETC_TEST_MODELS" compile pool-skips --backend torch -o "$TMP/pool.py" || fail "pool-skips on torch"
pass "pooling that skips frames: refused on tf naming the target, compiled for torch"

expect_error 2 "unknown command 'frobnicate'" -- "$RETC" frobnicate
expect_error 2 "compile needs -o FILE" -- "$RETC" compile 12ax
expect_error 2 "unknown option '--bogus'" -- "$RETC" compile 12ax --bogus -o x
expect_error 2 "--epochs needs a positive integer" -- "$RETC" compile 12ax -o "$TMP/e.config" --epochs zero
expect_error 2 "--dim needs NAME=SIZE with a positive SIZE" -- "$RETC" stats 12ax --dim labels=0
[ ! -e "$TMP/e.config" ] || fail "usage error wrote a file"
rc=0; "$RETC" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "no command should exit 2, got $rc"
pass "usage errors"

"$RETC" --help | grep "usage: retc COMMAND" >/dev/null || fail "retc --help"
for c in list compile check train eval forward search export convert-checkpoint dump-ir stats opt; do
  "$RETC" "$c" --help | grep "^usage: retc $c" >/dev/null || fail "retc $c --help"
done
pass "help on every command"
