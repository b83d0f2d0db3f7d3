"""Checkpoints of other tools into retc's models by a shipped map.

i6_models: an i6_models ConformerEncoderV1 (pinned i6-models; the config in
i6_encoder below) with random, perturbed params (batch-norm statistics too)
saves its state dict; `retc convert-checkpoint mod-i6-conformer --from
torch-state-dict --map configs/maps/i6_conformer_v1.map` loads it into retc's
ConformerEncoder (every param matched once, BatchNorm1d's num_batches_tracked
listed as unused), and retc's model gives i6_models' outputs on the same batch
(valid frames) within 1e-4 on torch and, imported for TF (--to tf), on TF.
Two of i6_models' choices differ from RETURNN's and are set in i6_models'
modules for the comparison: its LayerNorms' epsilon (torch's 1e-5, retc's
1e-6), and its convolutions read the padding frames' values (retc's, like
RETURNN's on both targets, see zeros past each sequence's end), so the input's
padding is zeroed and the depthwise convolutions' inputs masked.

Run alone as `python test_import.py NAME`; ctest runs the cases in groups (cases.py).
"""
# ctest-group: 2  (cases per process: tests/integration/cases.py)

import os
import subprocess
import sys

import numpy
import torch  # noqa: F401  (before TensorFlow: cases.py)

import returnn_probe
import torch_probe
from returnn_probe import TMP, Net, compile_model

BIN = os.environ["RETC_TEST_MODELS"]
MAP = os.path.join(os.environ["RETC_SOURCE_DIR"], "configs", "maps", "i6_conformer_v1.map")


def i6_encoder(seed=5):
    """i6_models' ConformerEncoderV1 as mod-i6-conformer: 5 features, model 8, ff 16, 2
    heads, kernel 3, 2 blocks, WindowConvolutionFrontendV1 (kernel 3, stride 1), swish;
    every param perturbed, in evaluation."""
    from i6_models.assemblies.conformer.conformer_v1 import (ConformerBlockV1Config, ConformerEncoderV1,
                                                              ConformerEncoderV1Config)
    from i6_models.config import ModuleFactoryV1
    from i6_models.parts.conformer import (ConformerConvolutionV1Config, ConformerMHSAV1Config,
                                           ConformerPositionwiseFeedForwardV1Config)
    from i6_models.parts.frontend.window_convolution import (WindowConvolutionFrontendV1,
                                                              WindowConvolutionFrontendV1Config)

    silu = torch.nn.functional.silu
    torch.manual_seed(seed)
    cfg = ConformerEncoderV1Config(
        num_layers=2,
        frontend=ModuleFactoryV1(WindowConvolutionFrontendV1, WindowConvolutionFrontendV1Config(
            input_dim=5, output_dim=8, dropout=0.0, kernel_size=3, stride=1, activation=silu)),
        block_cfg=ConformerBlockV1Config(
            ff_cfg=ConformerPositionwiseFeedForwardV1Config(input_dim=8, hidden_dim=16, dropout=0.1, activation=silu),
            mhsa_cfg=ConformerMHSAV1Config(input_dim=8, num_att_heads=2, att_weights_dropout=0.0, dropout=0.1),
            conv_cfg=ConformerConvolutionV1Config(channels=8, kernel_size=3, dropout=0.1, activation=silu,
                                                  norm=torch.nn.BatchNorm1d(8))))
    model = ConformerEncoderV1(cfg).eval()
    rng = numpy.random.RandomState(seed)
    with torch.no_grad():
        for name, t in model.state_dict().items():
            if not t.dtype.is_floating_point:
                continue
            noise = rng.uniform(0.5, 1.5, t.shape) if "running_var" in name else rng.normal(0.0, 0.2, t.shape)
            base = torch.zeros_like(t) if "running_var" in name else t.clone()
            t.copy_(base + torch.tensor(noise, dtype=t.dtype))
    for m in model.modules():
        if isinstance(m, torch.nn.LayerNorm):
            m.eps = 1e-6
    return model


def i6_outputs(model, x, lens):
    """The encoder's outputs on x [B, T, F] (padding zeroed; depthwise convolutions
    masked past each sequence's end)."""
    mask = torch.arange(x.shape[1])[None, :] < torch.tensor(lens)[:, None]
    hooks = [block.conv.depthwise_conv.register_forward_pre_hook(lambda _, a: (a[0] * mask[:, None, :],))
             for block in model.module_list]
    with torch.no_grad():
        out, _ = model(torch.tensor(x) * mask[:, :, None], mask)
    for h in hooks:
        h.remove()
    return out.numpy()


def imported(to):
    """i6_encoder's state dict imported for `to` ("torch": a .pt, "tf": a checkpoint prefix)."""
    src = os.path.join(TMP, "i6_encoder.pt")
    if not os.path.exists(src):
        torch.save(i6_encoder().state_dict(), src)
    out = os.path.join(TMP, "i6_imported_%s" % to, "network" + (".pt" if to == "torch" else ""))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    r = subprocess.run([BIN, "convert-checkpoint", "mod-i6-conformer", "--from", "torch-state-dict", "--map", MAP,
                        "--to", to, src, out], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "retc: imported 66 params of 'mod-i6-conformer'" in r.stdout, r.stdout
    assert "no rule took: module_list.0.conv.norm.num_batches_tracked, " \
           "module_list.1.conv.norm.num_batches_tracked" in r.stdout, r.stdout
    return out


def worst_valid(got, want, lens):
    return max(float(numpy.abs(got[b, :n] - want[b, :n]).max()) for b, n in enumerate(lens))


def test_i6_conformer_torch():
    from test_cross_backend import torch_outputs

    state = torch.load(imported("torch"), map_location="cpu")["model"]
    tnet = torch_probe.TorchNet(torch_probe.compile_model("mod-i6-conformer"), with_updater=False)
    tnet.pt_model.load_state_dict(state, strict=True)
    batch = tnet.batch(3, max_time=9)
    raw = batch[0]
    x, lens = raw["data"].numpy(), raw["data:seq_len"].numpy()
    out = torch_outputs(tnet, batch)["output"]
    got = out.copy_transpose([d for name in ("batch", "time", "model") for d in out.dims
                              if (d.is_batch_dim() and name == "batch") or d.name == name]).raw_tensor.numpy()
    worst = worst_valid(got, i6_outputs(i6_encoder(), x, lens), lens)
    assert worst <= 1e-4, worst
    print("i6_models ConformerEncoderV1 -> retc (torch) by %s: lengths %s, max |diff| %.3g"
          % (os.path.basename(MAP), [int(n) for n in lens], worst))


def test_i6_conformer_tf():
    import tensorflow as tf

    reader = tf.train.load_checkpoint(imported("tf"))
    net = Net(compile_model("mod-i6-conformer"), train_flag=False)
    with net.graph.as_default():
        for v in net.net.get_params_list():
            v.load(reader.get_tensor(v.name[:-len(":0")]), net.session)
    feed = net.feed(4, max_time=9)
    x, got = net.layer("data:data", feed), net.layer("output", feed)
    lens = net.run(lambda: net.net.extern_data.data["data"].get_sequence_lengths(), feed)
    worst = worst_valid(got, i6_outputs(i6_encoder(), x, lens), lens)
    assert worst <= 1e-4, worst
    print("i6_models ConformerEncoderV1 -> retc (TF, imported --to tf): lengths %s, max |diff| %.3g"
          % ([int(n) for n in lens], worst))


if __name__ == "__main__":
    globals()["test_" + sys.argv[1]]()
