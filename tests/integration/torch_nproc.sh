#!/usr/bin/env bash
# Several processes on the torch target (RETURNN's torch_distributed under
# torchrun, gloo on CPU). Two machines, tested on one: `retc train 12ax
# --backend torch --nnodes 2 --node-rank K --master 127.0.0.1:PORT`, started
# side by side, each node a process with a workdir of its own, train 2 epochs
# to a dev frame error of at most 0.5 (as tasks_12ax.sh's 2 epochs; 12ax's
# full torch training: torch_12ax.sh); node 0 prints it and rank 0's progress
# lines, node 1 says it finished; with --dataset-distribution shard. Then node 0's config as two
# torchrun nodes again, each rank through torch_ddp_probe.py: after one epoch
# both ranks hold identical params and each saw a disjoint half of the epoch's
# sequences. `retc train --nproc 2` (torchrun --standalone) trains an epoch
# with --reduce param --param-sync-step 10. Usage errors: --nproc
# and --nnodes on the tf target, --nproc 0, --nnodes without --master, a
# node rank outside the nodes.
# ctest-serial
# ctest-cost: 40
source "$(dirname "$0")/lib.sh"

# A free port on 127.0.0.1 for node 0's rendezvous.
port=$("$VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
for k in 0 1; do
  OMP_NUM_THREADS=1 "$RETC" train 12ax --backend torch --nnodes 2 --node-rank "$k" --master "127.0.0.1:$port" \
    --dataset-distribution shard --epochs 2 --progress 0.05 --workdir "$TMP/node$k" >"$TMP/log$k" 2>"$TMP/err$k" &
  pids[k]=$!
done
for k in 0 1; do
  wait "${pids[k]}" || { tail -n 30 "$TMP/log$k" "$TMP/err$k"; fail "node $k: retc train 12ax --nnodes 2 --node-rank $k"; }
done
grep -q "^retc: 1 processes on node 0 of 2: .* --nnodes=2 --node-rank=0 --master-addr=127.0.0.1 --master-port=$port " "$TMP/log0" ||
  fail "node 0 did not start torchrun as node 0 of 2: $(grep '^retc:' "$TMP/log0")"
for k in 0 1; do
  grep -q "Start running torch distributed training on local rank 0\." "$TMP/log$k" || fail "node $k: no rank in the log"
done
[ "$(grep -c '^Epoch [0-9]* evaluation: ' "$TMP/log0")" -eq 2 ] || fail "expected 2 evaluated epochs on node 0 (rank 0)"
expect_final_error "$TMP/log0" 0.5 "12ax on torch, 2 nodes of one process, 2 epochs"
[ "$(tail -n 1 "$TMP/log1")" = "retc: node 1 of 2 finished (node 0 keeps the checkpoints and scores)" ] ||
  fail "node 1's last line: $(tail -n 1 "$TMP/log1")"
[ -z "$(ls "$TMP/node1/model" 2>/dev/null)" ] || fail "node 1 saved checkpoints: $(ls "$TMP/node1/model")"
grep -E '^retc: progress: epoch [12] step [0-9]+, ' "$TMP/log0" >"$TMP/progress" || fail "no progress lines from rank 0"
! grep -q '^retc: progress' "$TMP/log1" || fail "progress lines from rank 1"
pass "two nodes on 127.0.0.1: $(tail -n 1 "$TMP/log0"); rank 0's progress: $(tail -n 1 "$TMP/progress")"

grep -qx 'torch_distributed = {"backend": "gloo", "dataset_distribution": "shard"}' "$TMP/node0/returnn.config" ||
  fail "node 0's config lacks the sharded torch_distributed: $(grep torch_distributed "$TMP/node0/returnn.config")"
mkdir -p "$TMP/probe"
port=$("$VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
for k in 0 1; do
  (cd "$TMP/probe" && OMP_NUM_THREADS=1 "$VENV/bin/python" -m torch.distributed.run --nnodes=2 --node-rank="$k" \
    --master-addr=127.0.0.1 --master-port="$port" --nproc-per-node=1 \
    "$RETC_SOURCE_DIR/tests/integration/torch_ddp_probe.py" "$TMP/node0/returnn.config" "$TMP/probe" \
    >"$TMP/probe$k.log" 2>&1) &
  pids[k]=$!
done
for k in 0 1; do
  wait "${pids[k]}" || { tail -n 30 "$TMP/probe$k.log"; fail "torchrun probe, node $k"; }
done
cat "$TMP/probe0.log" "$TMP/probe1.log" >"$TMP/probe.log"
"$VENV/bin/python" - "$TMP/probe" <<'PY' || fail "the ranks' params or data"
import sys
import torch
a = torch.load(sys.argv[1] + "/rank0.pt")
b = torch.load(sys.argv[1] + "/rank1.pt")
assert sorted(a) == sorted(b) and len(a) == 5, (sorted(a), sorted(b))
for k in sorted(a):
    assert torch.equal(a[k], b[k]), (k, (a[k] - b[k]).abs().max())
print("ok: both ranks hold identical params after one epoch:", ", ".join(sorted(a)))
s0, s1 = (open(sys.argv[1] + "/rank%d.seqs.txt" % r).read().split() for r in (0, 1))
assert s0 and s1 and not set(s0) & set(s1), (len(s0), len(s1), sorted(set(s0) & set(s1))[:5])
assert len(set(s0) | set(s1)) == len(s0) + len(s1), "a rank saw a sequence twice"
print("ok: sharded data: rank 0 saw %d sequences, rank 1 %d, none of them both (%d in all)"
      % (len(s0), len(s1), len(s0) + len(s1)))
PY
grep -h "params after" "$TMP/probe.log"

# `retc train --nproc 2`: torchrun --standalone, two processes on this machine,
# here with the params averaged every 10 steps instead of the gradients.
"$RETC" train 12ax --backend torch --nproc 2 --reduce param --param-sync-step 10 --epochs 1 \
  --workdir "$TMP/nproc2" >"$TMP/log" 2>"$TMP/err" ||
  { tail -n 30 "$TMP/log" "$TMP/err"; fail "retc train 12ax --backend torch --nproc 2"; }
grep -qx 'torch_distributed = {"backend": "gloo", "reduce_type": "param", "param_sync_step": 10}' "$TMP/nproc2/returnn.config" ||
  fail "--reduce param: $(grep torch_distributed "$TMP/nproc2/returnn.config")"
grep -q "^retc: 2 processes: .* --standalone --nproc-per-node=2 " "$TMP/log" || fail "not torchrun --standalone with 2 processes"
for r in 0 1; do
  grep -q "Start running torch distributed training on local rank $r\." "$TMP/log" || fail "--nproc 2: no rank $r in the log"
done
tail -n 1 "$TMP/log" | grep -E '^final dev frame error: ' >/dev/null || fail "--nproc 2: no final line"
pass "--nproc 2 on this machine, params averaged every 10 steps, one epoch: $(tail -n 1 "$TMP/log")"

expect_error 2 "^retc: error: --nproc 2: the tf target trains in one process here; several processes are on the torch target \(--backend torch\) \(see 'retc --help'\)$" -- \
  "$RETC" train 12ax --nproc 2 --workdir "$TMP/tf"
expect_error 2 "^retc: error: --nnodes 2: the tf target trains in one process here; several processes are on the torch target \(--backend torch\) \(see 'retc --help'\)$" -- \
  "$RETC" train 12ax --nnodes 2 --node-rank 0 --master 127.0.0.1:1234 --workdir "$TMP/tf"
expect_error 2 "^retc: error: --nproc needs a positive integer, got '0' \(see 'retc --help'\)$" -- \
  "$RETC" train 12ax --backend torch --nproc 0 --workdir "$TMP/zero"
expect_error 2 "^retc: error: --nnodes 2 needs --master HOST:PORT \(node 0's address, the same on every node\) \(see 'retc --help'\)$" -- \
  "$RETC" train 12ax --backend torch --nnodes 2 --node-rank 1 --workdir "$TMP/nomaster"
expect_error 2 "^retc: error: --node-rank 2 is not a node of --nnodes 2 \(0 to 1\) \(see 'retc --help'\)$" -- \
  "$RETC" train 12ax --backend torch --nnodes 2 --node-rank 2 --master 127.0.0.1:1234 --workdir "$TMP/rank"
[ ! -e "$TMP/tf" ] && [ ! -e "$TMP/zero" ] && [ ! -e "$TMP/nomaster" ] && [ ! -e "$TMP/rank" ] || fail "a usage error made a workdir"
pass "--nproc/--nnodes on tf, --nproc 0, --nnodes without --master, --node-rank 2 of 2: usage errors, nothing written"
