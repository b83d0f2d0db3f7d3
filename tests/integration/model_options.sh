#!/usr/bin/env bash
# Model options (--set NAME=VALUE) on the command line: a wrong name, type or
# range is a usage error (exit 2, one line naming the option and what it
# takes) that writes nothing; `list --options` and `COMMAND MODEL --help` list
# them; the config header records every value (the same options give the same
# bytes, others another header); and conformer-ctc trains one epoch with 1
# block of 32 dims (test_modules.py's bundled_options compares the sizes
# `retc check` prints with the formula).
source "$(dirname "$0")/lib.sh"

while IFS='|' read -r setting pattern; do
  expect_error 2 "^retc: error: model 'conformer-ctc': $pattern" -- \
    "$RETC" compile conformer-ctc --set "$setting" -o "$TMP/c.config"
  [ ! -e "$TMP/c.config" ] || fail "--set $setting wrote a config"
  expect_error 2 "$pattern" -- "$RETC" train conformer-ctc --set "$setting" --workdir "$TMP/w"
  [ ! -e "$TMP/w" ] || fail "--set $setting made the workdir"
done <<'EOF'
blocks=x|--set blocks=x: blocks is an integer \(at least 1\)
nosuch=1|--set nosuch=1: no option 'nosuch' \(options: blocks, model_dim, ff_dim, heads, conv_kernel, dropout, gradient_checkpoint, train_seqs, learning_rate, epochs, batch_size, max_seqs, lr_schedule\)
blocks=-1|--set blocks=-1: blocks must be at least 1 \(see 'retc list --options conformer-ctc'\)$
dropout=2|--set dropout=2: dropout must be 0.0 to 1.0 \(see 'retc list --options conformer-ctc'\)$
learning_rate=fast|--set learning_rate=fast: learning_rate is a finite number \(at least 0.0\)
EOF
expect_error 2 "^retc: error: --set needs NAME=VALUE, got 'blocks'" -- "$RETC" check conformer-ctc --set blocks
expect_error 2 "weight_norm is a bool \(true or false\)" -- "$RETC" dump-ir conformer-12x512 --set weight_norm=maybe
pass "bad --set values: exit 2, one line naming the option, nothing written"

"$RETC" list --options conformer-ctc >"$TMP/opts" || fail "list --options"
grep -E "^  blocks=2 +int, at least 1 +conformer blocks$" "$TMP/opts" >/dev/null || fail "list --options: $(cat "$TMP/opts")"
"$RETC" compile conformer-ctc --help >"$TMP/help" || fail "compile MODEL --help"
grep -E "^  dropout=0.1 +float, 0.0 to 1.0 +dropout in each block$" "$TMP/help" >/dev/null || fail "help lacks the options"
expect_error 1 "unknown model 'nope'" -- "$RETC" list --options nope
pass "list --options, compile MODEL --help"

"$RETC" compile conformer-ctc --set blocks=3 -o "$TMP/a" && "$RETC" compile conformer-ctc --set blocks=3 -o "$TMP/b" || fail "compile"
cmp "$TMP/a" "$TMP/b" || fail "the same options gave other bytes"
"$RETC" compile conformer-ctc --set learning_rate=0.002 -o "$TMP/lr" || fail "compile learning_rate"
"$RETC" compile conformer-ctc -o "$TMP/default" || fail "compile"
grep -Fx "# options: blocks=3 model_dim=64 ff_dim=128 heads=4 conv_kernel=7 dropout=0.1 gradient_checkpoint=false train_seqs=2000 learning_rate=0.001 epochs=10 batch_size=2000 max_seqs=40 lr_schedule=\"\"" "$TMP/a" >/dev/null ||
  fail "header: $(sed -n 4p "$TMP/a")"
grep -Fx "learning_rate = 0.002" "$TMP/lr" >/dev/null || fail "learning_rate not set"
[ "$(diff "$TMP/default" "$TMP/lr" | grep -c '^[<>]')" = 4 ] || fail "learning_rate changed more than its line and the header's: $(diff "$TMP/default" "$TMP/lr")"
pass "options in the header; the same options, the same bytes"

"$RETC" train conformer-ctc --set blocks=1 --set model_dim=32 --epochs 1 --workdir "$TMP/small" >"$TMP/log" 2>&1 ||
  { tail -n 30 "$TMP/log"; fail "train conformer-ctc --set blocks=1 --set model_dim=32"; }
grep -F '# options: blocks=1 model_dim=32 ' "$TMP/small/returnn.config" >/dev/null || fail "the trained config's header"
grep -F 'model_dim = Dim(32, name="model")' "$TMP/small/returnn.config" >/dev/null ||
  grep -F 'model_dim = FeatureDim("model", 32)' "$TMP/small/returnn.config" >/dev/null || fail "model dim not 32"
[ -e "$TMP/small/model/network.001.index" ] || fail "no checkpoint of epoch 1"
expect_final_error "$TMP/log" 1.0 "conformer-ctc, 1 block of 32 dims, 1 epoch"
