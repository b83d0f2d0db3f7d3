#!/usr/bin/env bash
# IR dumps: dot rendered to SVG with modules as clusters and stages as
# colours; JSON with stages; --after; `retc opt` reproduces the pipeline.
source "$(dirname "$0")/lib.sh"

"$RETC" dump-ir 12ax-wn --format svg -o "$TMP/12ax.svg"
head -c 200 "$TMP/12ax.svg" | grep "<svg\|<?xml" >/dev/null || fail "not an SVG"
grep -q "<title>cluster_" "$TMP/12ax.svg" || fail "no module clusters"
grep -q ">lstm</text>" "$TMP/12ax.svg" || fail "no 'lstm' module label"
grep -q 'fill="#ffd98e"' "$TMP/12ax.svg" || fail "no param-init colour"
grep -q 'fill="#cfe3ff"' "$TMP/12ax.svg" || fail "no step colour"
grep -q "param&#45;init: runs once" "$TMP/12ax.svg" || fail "no stage legend"
pass "SVG with modules and stages ($(wc -c <"$TMP/12ax.svg") bytes)"

"$RETC" dump-ir 12ax --format dot | grep "^digraph retc {" >/dev/null || fail "dot"
"$RETC" dump-ir 12ax --format json | "$VENV/bin/python" -c '
import json, sys
j = json.load(sys.stdin)
stages = {n["stage"] for n in j["nodes"]}
assert stages == {"step", "param-init"}, stages
assert all("loc" in n and "stage" in n for n in j["nodes"])'
"$RETC" dump-ir 12ax --after build >"$TMP/built.ir"
grep -q "stage=param-init" "$TMP/built.ir" && fail "the built IR has param-init nodes already"
"$RETC" dump-ir 12ax --after lower-init | grep "random .*stage=param-init" >/dev/null || fail "--after lower-init"
"$RETC" opt "$TMP/built.ir" -o "$TMP/opt.ir"
"$RETC" dump-ir 12ax >"$TMP/pipeline.ir"
cmp "$TMP/opt.ir" "$TMP/pipeline.ir" || fail "retc opt on the built IR differs from the pipeline"
"$RETC" opt "$TMP/built.ir" --passes dce,tf-naming --print-after-all | grep "^# after tf-naming" >/dev/null || fail "--print-after-all"
pass "dot, JSON, --after and retc opt"

printf 'dim f_dim = feature "f" 3\n%%0 = data {key="x"} : [batch_dim, g_dim] float32 stage=step\n' >"$TMP/bad.ir"
expect_error 1 "^$TMP/bad.ir:2:35: error: unknown dim 'g_dim'" -- "$RETC" opt "$TMP/bad.ir" -o "$TMP/never.ir"
[ ! -e "$TMP/never.ir" ] || fail "opt wrote output on error"
expect_error 2 "unknown pass 'nope'" -- "$RETC" dump-ir 12ax --after nope
expect_error 1 "unknown pass 'nope'" -- "$RETC" opt "$TMP/built.ir" --passes nope
pass "IR file errors at line:col"

# --task: what each task computes (train: outputs and losses; search: the decoder only).
"$RETC" dump-ir transformer-copy >"$TMP/train.ir" || fail "dump-ir transformer-copy"
"$RETC" dump-ir transformer-copy --task search >"$TMP/search.ir" || fail "dump-ir --task search"
grep -F 'loss "ce" = ' "$TMP/train.ir" >/dev/null || fail "the train IR lacks the loss"
grep -E ' = (choice|loop_end) ' "$TMP/train.ir" && fail "the train IR has the search decoder"
grep -F 'search "hyps" = ' "$TMP/search.ir" >/dev/null || fail "the search IR lacks its search output"
grep -E ' = choice ' "$TMP/search.ir" >/dev/null || fail "the search IR lacks the choice"
grep -F 'loss "ce"' "$TMP/search.ir" && fail "the search IR has the loss"
expect_error 2 "^retc: error: --task must be train, eval, forward or search" -- "$RETC" dump-ir 12ax --task nope
pass "dump-ir --task: each task's graph"
