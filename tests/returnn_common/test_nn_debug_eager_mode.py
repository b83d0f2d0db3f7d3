"""Counterparts of returnn_common's tests/test_nn_debug_eager_mode.py. returnn_common's
debug eager mode computes each value as the model is built; retc's eager target is
RETURNN's PyTorch engine (`--backend torch`): the same models, run eagerly there."""

# torch (and its compiler) before TensorFlow, as test_cross_backend does
import torch  # noqa: E402
import torch._dynamo  # noqa: E402,F401

import numpy  # noqa: E402

import rc  # noqa: E402
from torch_probe import TorchNet, compile_model  # noqa: E402


def _outputs(model):
    """The torch model's marked outputs (evaluation) on `retc check`'s random batch, and it."""
    import returnn.frontend as rf
    from returnn.torch.data import extern_data as extern_data_util

    tnet = TorchNet(compile_model("rc-" + model), with_updater=False)
    raw, template = tnet.batch(1)
    extern_data = extern_data_util.raw_dict_to_extern_data(
        raw, extern_data_template=template, device="cpu", with_eval_targets=True)
    rf.init_train_step_run_ctx(train_flag=False, step=0, epoch=1)
    with torch.no_grad():
        out = tnet.config.typed_value("train_step")(model=tnet.model, extern_data=extern_data)
    return tnet, raw, out


def test_simple_linear():
    tnet, raw, out = _outputs("eager-simple-linear")
    y = out["output"]
    assert [d.dimension for d in y.dims][-1] == 10
    value = y.raw_tensor.numpy()
    assert value.size > 0 and (value != 0).any()
    p = tnet.params()
    w = [v for k, v in p.items() if k.endswith("weight")][0]
    b = [v for k, v in p.items() if k.endswith("bias")][0]
    rc.close(value, raw["data"].numpy() @ w + b, 1e-5, "x W + b")


def test_conformer():
    _, raw, out = _outputs("eager-conformer")
    y = out["output"].raw_tensor.numpy()
    assert y.shape[0] == raw["data"].shape[0] and y.shape[-1] == 10 and numpy.isfinite(y).all(), y.shape


def test_constant():
    _, _, out = _outputs("eager-constant")
    c = out["const"].raw_tensor.numpy()
    assert c.shape == (3,) and (c == 42.0).all(), c


if __name__ == "__main__":
    rc.main(globals())
