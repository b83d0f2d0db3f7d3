#!/usr/bin/env bash
# Ctrl-C (SIGINT) mid-epoch stops training cleanly: exit 130, one line on
# stderr, finished epochs' checkpoints intact; a second run resumes and ends.
source "$(dirname "$0")/lib.sh"
set -m  # background jobs keep SIGINT's default, as a terminal's would

work="$TMP/work"
"$RETC_TEST_MODELS" train slow-12ax --workdir "$work" >"$TMP/log1" 2>"$TMP/err1" &
pid=$!
for _ in $(seq 600); do
  grep -q "^train epoch 2, step 50," "$TMP/log1" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || fail "training ended early"
  sleep 0.2
done
kill -INT "$pid"
rc=0; wait "$pid" || rc=$?
[ "$rc" -eq 130 ] || { tail -n 5 "$TMP/log1" "$TMP/err1"; fail "expected exit 130 after Ctrl-C, got $rc"; }
[ "$(wc -l <"$TMP/err1")" -eq 1 ] || fail "expected one line on stderr: $(cat "$TMP/err1")"
grep -q "interrupted" "$TMP/err1" || fail "stderr does not say interrupted: $(cat "$TMP/err1")"
[ -e "$work/model/network.001.index" ] || fail "epoch 1's checkpoint is missing"
pass "Ctrl-C: exit 130, '$(cat "$TMP/err1")'"
"$RETC_TEST_MODELS" train slow-12ax --workdir "$work" >"$TMP/log2" 2>"$TMP/err2" || fail "resume after Ctrl-C"
grep -q "^epoch 1 score" "$TMP/log2" && fail "epoch 1 trained again"
tail -n 1 "$TMP/log2" | grep -E '^final dev frame error: ' >/dev/null || fail "no final line"
pass "resumed after Ctrl-C"
