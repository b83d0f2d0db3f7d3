"""Gradient checkpointing of a module (nn::checkpoint; the Conformer's
`gradient_checkpoint` option checkpoints each block), on the torch target: the
emitted train step runs each block's ops in RETURNN's
`rf.gradient_checkpoint_scope()` and drops their values after their last use.
The same losses and gradients (within 1e-6) as without it on conformer-ctc's
2-block Conformer with dropout on (the recomputation replays the random
numbers); a lower peak memory of one training step where activations matter
(6 blocks, 16 sequences of up to 1000 frames: the RSS growth of a process over
the step, each variant in a process of its own); on the tf target an error at
the model's line naming the target.
"""
# ctest-group: 3  (cases per process: tests/integration/cases.py)

import json
import os
import resource
import subprocess
import sys
import tempfile

RETC = os.environ["RETC"]


def compile_torch(path, *sets):
    args = [RETC, "compile", "conformer-ctc", "--backend", "torch", "-o", path]
    for s in sets:
        args += ["--set", s]
    subprocess.run(args, check=True)


def train_step(config_path, batch, frames):
    """One training step (forward and backward) of the config's model on a random batch:
    (loss, {param: grad}, RSS growth over the step in MiB). Seeds fixed: the same params,
    the same batch and the same dropout masks for configs that differ only in checkpointing."""
    import torch_probe

    net = torch_probe.TorchNet(config_path, with_updater=False)
    raw = net.batch(batch=batch, max_time=frames)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    loss = net.run(raw).total_loss().raw_tensor
    loss.backward()
    growth = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024.0
    grads = {name: p.grad.detach().clone() for name, p in net.pt_model.named_parameters()
             if p.grad is not None}  # (batch norm's running statistics have none)
    return float(loss), grads, growth


def test_same_losses_and_gradients():
    with tempfile.TemporaryDirectory() as tmp:
        plain, ckpt = os.path.join(tmp, "plain.config"), os.path.join(tmp, "ckpt.config")
        compile_torch(plain)
        compile_torch(ckpt, "gradient_checkpoint=true")
        text = open(ckpt).read()
        assert text.count("with rf.gradient_checkpoint_scope():") >= 2, "no checkpoint scope per block"
        assert "gradient_checkpoint_scope" not in open(plain).read()
        loss_a, grads_a, _ = train_step(plain, 8, 200)
        loss_b, grads_b, _ = train_step(ckpt, 8, 200)
    assert abs(loss_a - loss_b) <= 1e-6 * max(1.0, abs(loss_a)), (loss_a, loss_b)
    assert sorted(grads_a) == sorted(grads_b)
    worst = 0.0
    for name in grads_a:
        diff = float((grads_a[name] - grads_b[name]).abs().max())
        assert diff <= 1e-6, (name, diff)
        worst = max(worst, diff)
    assert any(float(g.abs().max()) > 0 for g in grads_a.values())
    print("ok: the same loss (%.6f) and gradients of %d params, largest difference %.2e"
          % (loss_a, len(grads_a), worst))


def test_lower_peak_memory():
    with tempfile.TemporaryDirectory() as tmp:
        growth = {}
        for name, sets in (("plain", ["blocks=6"]), ("checkpointed", ["blocks=6", "gradient_checkpoint=true"])):
            path = os.path.join(tmp, name + ".config")
            compile_torch(path, *sets)
            code = ("import json, sys; sys.path.insert(0, %r); import test_gradient_checkpoint as t; "
                    "print(json.dumps(t.train_step(%r, 16, 1000)[2]))" % (os.path.dirname(__file__), path))
            r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr[-3000:]
            growth[name] = json.loads(r.stdout.strip().splitlines()[-1])
    ratio = growth["checkpointed"] / growth["plain"]
    print("ok: peak RSS growth of one training step (6 blocks, 16 x 1000 frames): %.0f MiB plain, "
          "%.0f MiB checkpointed (%.2fx)" % (growth["plain"], growth["checkpointed"], ratio))
    assert ratio < 0.75, growth


def test_tf_target_refuses():
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "c.config")
        r = subprocess.run([RETC, "compile", "conformer-ctc", "--set", "gradient_checkpoint=true", "-o", out],
                           capture_output=True, text=True)
        assert r.returncode == 1, r
        assert len(r.stderr.splitlines()) == 1, r.stderr
        assert r.stderr.startswith("configs/conformer_ctc.cc:") or "conformer_ctc.cc:" in r.stderr, r.stderr
        assert ("error: checkpoint 'encoder.layers.0': the tf target has no gradient checkpointing of a "
                "module") in r.stderr, r.stderr
        assert not os.path.exists(out)
        # retc train: the same error before anything is written, not even the workdir.
        work = os.path.join(tmp, "work")
        r2 = subprocess.run([RETC, "train", "conformer-ctc", "--set", "gradient_checkpoint=true", "--workdir",
                             work], capture_output=True, text=True)
        assert r2.returncode == 1 and r2.stderr == r.stderr, (r2.returncode, r2.stderr)
        assert not os.path.exists(work)
    print("ok: tf: " + r.stderr.strip())


if __name__ == "__main__":
    globals()["test_" + sys.argv[1]]()
