#!/usr/bin/env bash
# Two processes on the torch target (RETURNN's torch_distributed under
# torchrun, gloo on CPU): `retc train 12ax --backend torch --nproc 2 --epochs 2`
# trains (dev frame error at most 0.5, as tasks_12ax.sh's 2 epochs; 12ax's
# full torch training: torch_12ax.sh); after an epoch both ranks hold
# identical params; --nproc on the tf target and a bad --nproc are one-line
# errors.
# ctest-serial
source "$(dirname "$0")/lib.sh"

"$RETC" train 12ax --backend torch --nproc 2 --epochs 2 --workdir "$TMP/work" >"$TMP/log" 2>"$TMP/err" ||
  { tail -n 40 "$TMP/log" "$TMP/err"; fail "retc train 12ax --backend torch --nproc 2"; }
for r in 0 1; do
  grep -q "Start running torch distributed training on local rank $r\." "$TMP/log" || fail "no rank $r in the log"
done
[ "$(grep -c '^Epoch [0-9]* evaluation: ' "$TMP/log")" -eq 2 ] || fail "expected 2 evaluated epochs (rank 0)"
expect_final_error "$TMP/log" 0.5 "12ax on torch, 2 processes, 2 epochs"

mkdir -p "$TMP/probe"
(cd "$TMP/probe" && "$VENV/bin/python" -m torch.distributed.run --standalone --nproc_per_node=2 \
  "$RETC_SOURCE_DIR/tests/integration/torch_ddp_probe.py" "$TMP/work/returnn.config" "$TMP/probe" \
  >"$TMP/probe.log" 2>&1) || { tail -n 30 "$TMP/probe.log"; fail "torchrun probe"; }
"$VENV/bin/python" - "$TMP/probe" <<'PY' || fail "the ranks' params differ"
import sys
import torch
a = torch.load(sys.argv[1] + "/rank0.pt")
b = torch.load(sys.argv[1] + "/rank1.pt")
assert sorted(a) == sorted(b) and len(a) == 5, (sorted(a), sorted(b))
for k in sorted(a):
    assert torch.equal(a[k], b[k]), (k, (a[k] - b[k]).abs().max())
print("ok: both ranks hold identical params after one epoch:", ", ".join(sorted(a)))
PY
grep -h "params after" "$TMP/probe.log"

expect_error 2 "^retc: error: --nproc 2: the tf target trains in one process here; several processes are on the torch target \(--backend torch\) \(see 'retc --help'\)$" -- \
  "$RETC" train 12ax --nproc 2 --workdir "$TMP/tf"
expect_error 2 "^retc: error: --nproc needs a positive integer, got '0' \(see 'retc --help'\)$" -- \
  "$RETC" train 12ax --backend torch --nproc 0 --workdir "$TMP/zero"
pass "--nproc on tf and --nproc 0 are usage errors"
