#!/usr/bin/env bash
# `retc train 12ax-wn` (weight norm, weight dropout, decoupled weight decay)
# trains to a final dev frame error of at most 0.05, printed last.
source "$(dirname "$0")/lib.sh"

"$RETC" train 12ax-wn --workdir "$TMP/work" >"$TMP/log" 2>"$TMP/err" || { tail -n 40 "$TMP/log" "$TMP/err"; fail "retc train 12ax-wn"; }
grep -E "^(epoch [0-9]+ score|dev: )" "$TMP/log"
grep -q '"L2": 1e-05' "$TMP/work/returnn.config" || fail "no weight decay in the config"
grep -q '^decouple_constraints = True$' "$TMP/work/returnn.config" || fail "weight decay is not decoupled"
grep -q '"param_dropout": 0.1' "$TMP/work/returnn.config" || fail "no weight dropout in the config"
grep -q '"init_by_layer": "out.weight_g.init"' "$TMP/work/returnn.config" || fail "no weight norm in the config"
expect_final_error "$TMP/log" 0.05 12ax-wn
