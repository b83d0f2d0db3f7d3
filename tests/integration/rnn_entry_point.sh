#!/usr/bin/env bash
# The emitted config trains with RETURNN's own entry point (python -m returnn)
# in the venv, for one short epoch.
source "$(dirname "$0")/lib.sh"

"$RETC" compile 12ax -o "$TMP/12ax.config" --epochs 1 --model-dir "$TMP/model"
cd "$TMP"
"$VENV/bin/python" -m returnn "$TMP/12ax.config" >"$TMP/log" 2>&1 || { tail -n 40 "$TMP/log"; fail "python -m returnn"; }
grep -q "^epoch 1 score: " "$TMP/log" || { tail -n 20 "$TMP/log"; fail "no epoch line"; }
grep -q "^dev: score .* error " "$TMP/log" || fail "no dev line"
grep -q "Finished training in epoch 1" "$TMP/log" || fail "training did not finish"
ls "$TMP/model/network.001.index" >/dev/null || fail "no checkpoint"
grep -E "^(epoch 1 score|dev: )" "$TMP/log"
pass "python -m returnn trains the emitted config"
