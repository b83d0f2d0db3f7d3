"""`retc stats` against what torch measures, on bundled models.

For each model: `retc stats MODEL --json` at a batch of B x T frames, and
the model's torch config (`retc compile --backend torch`) run by RETURNN's
torch engine on a batch of that size (every dynamic dim of the data T
frames long, no padding), one training step's forward (train_step, the
losses) and backward pass:

- FLOPs: torch.profiler's count (with_flops: matmuls, convolutions, the
  elementwise mul and add) of the forward and of the backward pass, against
  the stats' forward and forward+backward FLOPs, within FLOP_TOL.
- Activations: the bytes of the tensors autograd keeps for the backward pass
  (torch.autograd.graph.saved_tensors_hooks: each storage once, params not
  counted), against the stats' activation memory, within MEM_TOL (at the
  batch given; the acceptance's figure is at 8 x 500).

Usage: test_stats.py MODEL BATCH FRAMES [--no-memory]
"""
# The cases ctest runs (tests/CMakeLists.txt reads these lines), in one process:
# ctest-group: 3
# ctest-cases: stats.conformer-ctc conformer-ctc 8 500
# ctest-cases: stats.transformer-copy transformer-copy 8 50
# ctest-cases: stats.digits-ctc digits-ctc 2 1600

import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from bench import torch_batch, torch_config  # noqa: E402: after its folder is on the path

FLOP_TOL = 0.10
MEM_TOL = 0.25


def retc(*args):
    return subprocess.run([os.environ.get("RETC", "retc")] + list(args), check=True, stdout=subprocess.PIPE,
                          text=True).stdout


def measure(config_path, batch, frames):
    """(forward FLOPs, backward FLOPs, saved bytes) of one training step."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    import returnn.frontend as rf
    from returnn.tensor import TensorDict
    from returnn.torch.data import extern_data as extern_data_util
    from returnn.torch.frontend.bridge import rf_module_to_pt_module

    config = torch_config(config_path)
    model = config.typed_value("get_model")(epoch=1, step=0)
    pt_model = rf_module_to_pt_module(model)
    params = {p.untyped_storage().data_ptr() for p in pt_model.parameters()}
    template = TensorDict()
    template.update(config.typed_value("extern_data"), auto_convert=True)
    raw = torch_batch(template, batch, frames, frames, full=True)
    extern_data = extern_data_util.raw_dict_to_extern_data(raw, extern_data_template=template, device="cpu",
                                                           with_eval_targets=True)
    rf.init_train_step_run_ctx(train_flag=True, step=0, epoch=1)
    saved = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            saved[storage.data_ptr()] = storage.nbytes()
        return t

    with profile(activities=[ProfilerActivity.CPU], with_flops=True) as fwd:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            config.typed_value("train_step")(model=model, extern_data=extern_data)
            loss = rf.get_run_ctx().total_loss().raw_tensor
    with profile(activities=[ProfilerActivity.CPU], with_flops=True) as bwd:
        loss.backward()

    def flops(prof):
        return float(sum(e.flops for e in prof.key_averages()))

    return flops(fwd), flops(bwd), float(sum(saved.values()))


def main(model, batch, frames, *flags):
    batch, frames = int(batch), int(frames)
    check_memory = "--no-memory" not in flags
    stats = json.loads(retc("stats", model, "--json", "--batch", str(batch), "--frames", str(frames)))
    total = stats["modules"][0]
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "torch.config")
        retc("compile", model, "--backend", "torch", "-o", config)
        fwd, bwd, saved = measure(config, batch, frames)
    rows = [("forward FLOPs", total["forward_flops"], fwd, FLOP_TOL),
            ("forward+backward FLOPs", total["forward_flops"] + total["backward_flops"], fwd + bwd, FLOP_TOL),
            ("activation bytes", total["activation_bytes"], saved, MEM_TOL if check_memory else None)]
    failed = []
    for what, estimate, measured, tol in rows:
        ratio = estimate / measured if measured else float("inf")
        print("%s %d x %d: %s: retc stats %.4g, torch %.4g, ratio %.3f%s" % (
            model, batch, frames, what, estimate, measured, ratio,
            "" if tol is None else " (tolerance %.0f%%)" % (100 * tol)))
        if tol is not None and abs(ratio - 1) > tol:
            failed.append(what)
    if stats["assumed"]:
        print("assumed sizes:", ", ".join(stats["assumed"]))
    if failed:
        raise AssertionError("%s: outside the tolerance: %s" % (model, ", ".join(failed)))


if __name__ == "__main__":
    main(*sys.argv[1:])
