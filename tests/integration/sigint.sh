#!/usr/bin/env bash
# Ctrl-C (SIGINT) mid-epoch stops training cleanly: exit 130, one line on
# stderr, finished epochs' checkpoints intact; a second run resumes and ends.
# `sigint.sh torch` does the same on the torch target.
# ctest-variants: tf torch
source "$(dirname "$0")/lib.sh"
set -m  # background jobs keep SIGINT's default, as a terminal's would

backend=${1:-tf}
if [ "$backend" = torch ]; then
  step_line="^ep 2 train, step 50,"; epoch1_line="^Epoch 1: Trained"; ckpt1="network.001.pt"
else
  step_line="^train epoch 2, step 50,"; epoch1_line="^epoch 1 score"; ckpt1="network.001.index"
fi

work="$TMP/work"
"$RETC_TEST_MODELS" train slow-12ax --backend "$backend" --workdir "$work" >"$TMP/log1" 2>"$TMP/err1" &
pid=$!
for _ in $(seq 600); do
  grep -q "$step_line" "$TMP/log1" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || fail "training ended early"
  sleep 0.2
done
kill -INT "$pid"
rc=0; wait "$pid" || rc=$?
[ "$rc" -eq 130 ] || { tail -n 5 "$TMP/log1" "$TMP/err1"; fail "expected exit 130 after Ctrl-C, got $rc"; }
[ "$(wc -l <"$TMP/err1")" -eq 1 ] || fail "expected one line on stderr: $(cat "$TMP/err1")"
grep -q "interrupted" "$TMP/err1" || fail "stderr does not say interrupted: $(cat "$TMP/err1")"
[ -e "$work/model/$ckpt1" ] || fail "epoch 1's checkpoint is missing"
pass "$backend: Ctrl-C: exit 130, '$(cat "$TMP/err1")'"
"$RETC_TEST_MODELS" train slow-12ax --backend "$backend" --workdir "$work" >"$TMP/log2" 2>"$TMP/err2" ||
  fail "resume after Ctrl-C"
grep -q "$epoch1_line" "$TMP/log2" && fail "epoch 1 trained again"
tail -n 1 "$TMP/log2" | grep -E '^final dev frame error: ' >/dev/null || fail "no final line"
pass "$backend: resumed after Ctrl-C"
