"""Parameter options, reparametrizations and stages on the torch target, read
back from RETURNN's PyTorch engine: the same figures test_params.py measures
on TF, with the same documented updates.

Run alone as `python test_params_torch.py NAME`; ctest runs the cases in groups (cases.py).
"""
# ctest-group: 13  (cases per process: tests/integration/cases.py)

import os
import sys

import numpy

from torch_probe import TorchNet, compile_model


def close(a, b, tol, what):
    a, b = numpy.asarray(a, "float64"), numpy.asarray(b, "float64")
    err = numpy.abs(a - b).max() if a.size else 0.0
    assert a.shape == b.shape and err <= tol, "%s: max |diff| %g > %g (shapes %s, %s)" % (
        what, err, tol, a.shape, b.shape)


# test_params.py's schedule (that file imports TF, which must not load beside torch).
SCHEDULE = [(0, 1e-4), (100, 1e-2), (400, 1e-4), (1000, 1e-5)]
SCHEDULE_STEPS = [0, 1, 50, 100, 250, 399, 400, 700, 1000, 5000]


def test_step_schedule():
    """--set lr_schedule on torch: the effective learning rate RETURNN's torch
    updater sets at each global train step (an int) is test_params.py's
    schedule (its points and the lines between them)."""
    import os

    setting = "lr_schedule=" + ",".join("%d:%g" % p for p in SCHEDULE)
    net = TorchNet(compile_model("12ax", os.environ["RETC"], ["--set", setting]))
    rates = []
    for s in SCHEDULE_STEPS:
        net.updater.set_current_train_step(global_train_step=s, epoch=1)
        rates.append(net.updater.get_effective_learning_rate())
    want = numpy.interp(SCHEDULE_STEPS, [p for p, _ in SCHEDULE], [r for _, r in SCHEDULE])
    close(rates, want, 1e-12, "torch's rates at steps %s" % SCHEDULE_STEPS)
    print("%s: torch's rates at steps %s: %s" % (setting, SCHEDULE_STEPS, ["%.4g" % r for r in rates]))


def _steps(model, n, lr=0.1, seed=1):
    net = TorchNet(compile_model(model), learning_rate=lr)
    batch = net.batch(seed)
    before = net.params()
    for _ in range(n):
        net.step(batch)
    return net, before, net.params()


def test_weight_decay_decoupled():
    """Decoupled, as on TF: with the gradient held at zero, w shrinks by (1 - 2*lambda) per step."""
    lam, steps = 0.01, 5
    _, before, after = _steps("wd-decoupled", steps)
    w0, w5 = before["decayed.weight"], after["decayed.weight"]
    factor = (1 - 2 * lam) ** steps
    close(w5, w0 * factor, 1e-6, "decayed weight")
    print("w_5 / w_0 = %.6f, documented (1 - 2*0.01)^5 = %.6f" % ((w5 / w0).mean(), factor))
    assert not numpy.allclose(before["lin.weight"], after["lin.weight"])


def test_weight_decay_coupled():
    """Coupled, as on TF: lambda * sum(w^2) is a term of the loss; decoupled adds none."""
    lam = 0.01
    net = TorchNet(compile_model("wd-coupled"))
    w = net.params()["decayed.weight"].astype("float64")
    ctx = net.run(net.batch())
    term = float(ctx.losses["weight_decay"].loss.raw_tensor)
    close(term, lam * (w ** 2).sum(), 1e-5, "loss term")
    print("loss term %.6f = 0.01 * sum(w^2) = %.6f" % (term, lam * (w ** 2).sum()))
    dec = TorchNet(compile_model("wd-decoupled"))
    assert "weight_decay" not in dec.run(dec.batch()).losses


def test_trainable_false():
    _, before, after = _steps("opt-frozen", 3)
    assert (before["weight"] == after["weight"]).all()
    assert not numpy.allclose(before["bias"], after["bias"])


def test_lr_multiplier():
    """With SGD, the first update of a param with multiplier k is k times the plain one."""
    _, b1, a1 = _steps("opt-plain", 1)
    _, b3, a3 = _steps("opt-lr-mult", 1)
    d1, d3 = a1["weight"] - b1["weight"], a3["weight"] - b3["weight"]
    assert numpy.abs(d1).max() > 1e-4
    close(d3, 3 * d1, 1e-6, "update with multiplier 3")
    close(a3["bias"] - b3["bias"], a1["bias"] - b1["bias"], 1e-7, "bias")
    print("measured update ratio %.6f (want 3)" % (numpy.abs(d3).sum() / numpy.abs(d1).sum()))


def test_gradient_clip():
    """Clipping at c caps each gradient entry: the update is the plain one clipped entry-wise."""
    lr, c = 0.1, 0.01
    _, b1, a1 = _steps("opt-plain", 1, lr)
    _, bc, ac = _steps("opt-clip", 1, lr)
    d1, dc = a1["weight"] - b1["weight"], ac["weight"] - bc["weight"]
    assert numpy.abs(d1).max() > lr * c * 1.5, "the plain gradient must exceed the clip for this test"
    assert numpy.abs(dc).max() <= lr * c * (1 + 1e-5)
    close(dc, numpy.clip(d1, -lr * c, lr * c), 1e-7, "clipped update")
    print("max |update| plain %.5f, clipped %.5f (cap %.5f)" % (numpy.abs(d1).max(), numpy.abs(dc).max(), lr * c))


def test_weight_norm():
    """v keeps the plain weight's name and initial value, g0 = ||v0||, both train."""
    plain = TorchNet(compile_model("rep-plain")).params()
    _, before, after = _steps("rep-weight-norm", 5, lr=0.5)
    for name in ["out", "ff1"]:
        v0, g0 = before[name + ".weight"], before[name + ".weight_g"]
        assert (v0 == plain[name + ".weight"]).all(), name
        close(g0, numpy.sqrt((v0.astype("float64") ** 2).sum(axis=0)), 1e-5, name + " g0")
        v5, g5 = after[name + ".weight"], after[name + ".weight_g"]
        assert not numpy.allclose(v5, v0) and not numpy.allclose(g5, g0), name + " did not train"
    print("weight norm: v0 = plain initial weight, g0 = ||v0||, g and v trained")


def test_weight_norm_fold():
    """_weight_norm_dot's three ways give x · (g v / ‖v‖) and its gradients:
    _WeightNormFold (a small batch: at most in/2 rows) passes torch's gradcheck
    in float64, and in float32 it, the fused kernel (more rows) and the fold
    in rf's ops (v with two out dims) agree with the product written out,
    values and gradients of x, v and g, within 1e-5 of their scale."""
    import runpy
    import torch
    import returnn.frontend as rf
    from returnn.tensor import Dim

    helpers = runpy.run_path(compile_model("rep-weight-norm"))
    fold, dot = helpers["_WeightNormFold"], helpers["_weight_norm_dot"]
    rng = torch.Generator().manual_seed(1)
    x, v, g = (torch.randn(*shape, dtype=torch.float64, generator=rng, requires_grad=True)
               for shape in [(5, 12), (12, 7), (7,)])
    assert torch.autograd.gradcheck(fold.apply, (x, v, g)), "gradcheck"

    calls = []
    orig_apply = fold.apply
    fold.apply = lambda *a: calls.append(1) or orig_apply(*a)
    try:
        in_dim, out_dim, out2_dim = Dim(12, name="in"), Dim(7, name="out"), Dim(2, name="out2")
        for rows, v_dims, way in [(6, [in_dim, out_dim], "the fold in one autograd step"),
                                  (40, [in_dim, out_dim], "the fused kernel"),
                                  (6, [in_dim, out_dim, out2_dim], "the fold in rf's ops")]:
            time_dim = Dim(rows, name="time")
            raws = [torch.randn(*shape, generator=rng, requires_grad=True)
                    for shape in [(rows, 12), [d.dimension for d in v_dims], [d.dimension for d in v_dims[1:]]]]
            xt, vt, gt = (rf.convert_to_tensor(r, dims=dims) for r, dims in
                          zip(raws, [[time_dim, in_dim], v_dims, v_dims[1:]]))
            calls.clear()
            y = dot(xt, vt, gt, axis=[in_dim], reduce=[in_dim])
            assert bool(calls) == (way == "the fold in one autograd step"), (way, calls)
            y = y.copy_transpose([time_dim] + v_dims[1:]).raw_tensor
            xr, vr, gr = raws
            want = torch.tensordot(xr, gr * vr / vr.norm(dim=0), dims=1)
            close(y.detach(), want.detach(), 1e-5 * float(want.abs().max()), way)
            cot = torch.randn(*want.shape, generator=rng)
            got = torch.autograd.grad(y, raws, cot)
            for name, a, b in zip("xvg", got, torch.autograd.grad(want, raws, cot)):
                close(a, b, 1e-5 * float(b.abs().max()), "%s: the gradient of %s" % (way, name))
            print("%s (%d rows, v %s): the product and its gradients" % (way, rows, [d.dimension for d in v_dims]))
    finally:
        fold.apply = orig_apply


def _counting(config_globals, names, counts):
    """Wraps the config's helper functions `names` so that each call is counted."""
    for name in names:
        func = config_globals[name]

        def counted(*args, _func=func, _name=name, **kwargs):
            counts[_name] = counts.get(_name, 0) + 1
            return _func(*args, **kwargs)

        config_globals[name] = counted


def test_stages_counted():
    """The stages, made real on an eager backend. Param-init runs once, when
    the model is made: g's initial value ||v0|| (one norm per weight-normed
    param). The step stage runs at every step: the derived weight's norm once
    per step and param, though out.weight has two readers (its two products
    scaled by g/||v||: _norm), ff1.weight has one (w made by torch's fused
    kernel: _weight_norm_dot); weight dropout and weight noise once per
    training step, new values each time, off in evaluation. The gradient
    reaches v and g."""
    from returnn.config import Config

    steps = 3
    for model, helper, per_step in [("rep-weight-norm", "_norm", {"_norm": 1, "_weight_norm_dot": 1}),
                                    ("rep-dropout", "_weight_dropout", {"_weight_dropout": 1}),
                                    ("rep-noise", "_weight_noise", {"_weight_noise": 1})]:
        path = compile_model(model)
        counts = {}
        orig_load = Config.load_file

        def load_and_count(self, *args, **kwargs):
            orig_load(self, *args, **kwargs)
            config_globals = self.typed_value("train_step").__globals__
            # A config holds only the helpers it uses: count those of these it has.
            _counting(config_globals, sorted(n for n in {"_norm", "_weight_norm_dot", "_random_values", helper}
                                        if n in config_globals),
                      counts)

        Config.load_file = load_and_count
        try:
            net = TorchNet(path, learning_rate=0.1)
        finally:
            Config.load_file = orig_load
        at_creation = dict(counts)
        want_init = {"rep-weight-norm": {"_norm": 2, "_random_values": 3}}.get(model, {"_random_values": 3})
        assert at_creation == want_init, (model, "model creation", at_creation, want_init)
        batch = net.batch()
        for step in range(steps):
            counts.clear()
            net.step(batch)
            assert counts == per_step, (model, "step", step, counts, per_step)
            if model == "rep-weight-norm" and step == 0:
                for p in ["out.weight", "out.weight_g", "ff1.weight", "ff1.weight_g"]:
                    grad = net.pt_model.get_parameter(p).grad
                    assert grad is not None and float(grad.abs().sum()) > 0, (p, "no gradient")
        # New values at each training step, none in evaluation.
        train_outputs = [net_output(net, batch, True) for _ in range(2)]
        eval_outputs = [net_output(net, batch, False) for _ in range(2)]
        if model != "rep-weight-norm":
            assert not numpy.allclose(train_outputs[0], train_outputs[1]), (model, "two training steps agree")
        close(eval_outputs[0], eval_outputs[1], 0.0, model + " evaluation")
        print("%s: at creation %s; in each of %d steps %s" % (model, at_creation, steps, per_step))


def test_lstm_padded():
    """The torch target's LSTMs without a state output (blstm-tagger's two BLSTMs)
    run over the padded frames, each sequence reversed within its length for a
    backward one: in a training step torch packs no sequence, and on the CPU
    oneDNN's fused LSTM runs them (aten::mkldnn_rnn_layer, its backward too), not
    the step-by-step path of a packed sequence (13 to 16 times as slow; README, nn::Lstm);
    their frames past a sequence's end are 0; a step under autocast (--amp bfloat16)
    runs. Their values: cross_backend.blstm-tagger and the other LSTM models."""
    import torch

    net = TorchNet(compile_model("blstm-tagger", binary=os.environ["RETC"]), learning_rate=0.1)
    batch = net.batch()
    net.step(batch)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        net.step(batch)
    ops = {e.key: e.count for e in prof.key_averages()}
    packed = sorted(o for o in ops if "pack" in o)
    assert not packed, packed
    assert ops.get("aten::mkldnn_rnn_layer") == 4, sorted((o, n) for o, n in ops.items() if "rnn" in o or "lstm" in o)
    assert ops.get("aten::mkldnn_rnn_layer_backward") == 4, sorted((o, n) for o, n in ops.items() if "rnn" in o)
    with torch.autocast("cpu", dtype=torch.bfloat16):  # --amp bfloat16: the LSTM's output in bfloat16
        net.step(batch)
    # The frames past a sequence's end are 0, as rf's packed LSTM and TF's kernel give them.
    net = TorchNet(compile_model("sweep:lstm:plain"), with_updater=False)
    batch = net.batch()
    lengths = batch[0]["data:seq_len"].tolist()
    assert min(lengths) < max(lengths), lengths
    y = net_output(net, batch, False)  # [time, batch, out]
    past = [float(numpy.abs(y[n:, b]).max()) for b, n in enumerate(lengths) if n < y.shape[0]]
    assert past and max(past) == 0.0, ("frames past the end", lengths, past)
    assert float(numpy.abs(y[0]).min()) > 0.0, "an LSTM output of exactly 0 within the sequences"
    print("blstm-tagger's step on torch: 4 LSTMs by aten::mkldnn_rnn_layer forward and backward, no packed "
          "sequence; sweep:lstm:plain: 0 past each sequence's end (lengths %s)" % lengths)


def test_max_pool_tiled():
    """Max pooling whose windows tile static axes (window = stride, dividing the axis;
    conformer-ctc's frontend pools its 16 features by 2) runs as _max_pool_tiled: no
    max_pool op in its trace, and its output and the gradient of x exactly those of
    rf's pool (torch's max_pool) on the same values, over one axis and over two; a
    window that does not tile its axis keeps rf's pool. Against TF: cross_backend.conformer-ctc."""
    import runpy
    import torch
    import returnn.frontend as rf
    from returnn.tensor import Dim

    rf.select_backend_torch()
    pool = runpy.run_path(compile_model("conformer-ctc", binary=os.environ["RETC"]))["_pool"]
    rng = torch.Generator().manual_seed(3)
    batch, time, feat, ch = Dim(3, name="batch"), Dim(6, name="time"), Dim(16, name="feat"), Dim(4, name="ch")
    for axes, size, strides, tiled in [([feat], [2], [2], True), ([time, feat], [2, 4], [2, 4], True),
                                       ([feat], [3], [2], False)]:
        raw = torch.randn(3, 6, 16, 4, generator=rng, requires_grad=True)
        x = rf.convert_to_tensor(raw, dims=[batch, time, feat, ch])
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            y, = [pool(x, mode="max", size=size, strides=strides, padding="valid", axes=axes,
                       out_axes=[Dim((a.dimension - k) // s + 1, name=a.name + "_out")
                                 for a, k, s in zip(axes, size, strides)])]
        pooled = [e.key for e in prof.key_averages() if "max_pool" in e.key]
        assert bool(pooled) != tiled, (axes, size, strides, pooled)
        want, computed = rf.pool(x, mode="max", pool_size=size, padding="valid", strides=strides,
                                 in_spatial_dims=axes, use_mask=False)
        for c, d in zip(computed, [d for d in y.dims if d not in x.dims]):
            want = rf.replace_dim_v2(want, in_dim=c, out_dim=d)
        want = want.copy_transpose(y.dims).raw_tensor
        assert torch.equal(y.raw_tensor, want), (axes, size)
        cot = torch.randn(*want.shape, generator=rng)
        got, = torch.autograd.grad(y.raw_tensor, raw, cot)
        ref, = torch.autograd.grad(want, raw, cot)
        assert torch.equal(got, ref), (axes, size)
    print("max pooling by windows that tile static axes: no max_pool op, output and gradient as rf's pool's "
          "(one axis, two axes); a window that does not tile its axis: rf's pool")


def net_output(net, batch, train):
    import torch

    raw, template = batch
    from returnn.torch.data import extern_data as extern_data_util
    import returnn.frontend as rf

    extern_data = extern_data_util.raw_dict_to_extern_data(
        raw, extern_data_template=template, device="cpu", with_eval_targets=True)
    rf.init_train_step_run_ctx(train_flag=train, step=0, epoch=1)
    with torch.no_grad():
        out = net.config.typed_value("train_step")(model=net.model, extern_data=extern_data)
    return out["output"].raw_tensor.numpy().copy()


def test_weight_dropout_and_noise_eval_is_plain():
    """In evaluation a weight with dropout or noise is the plain weight: outputs equal rep-plain's."""
    plain_net = TorchNet(compile_model("rep-plain"))
    plain = net_output(plain_net, plain_net.batch(3), False)
    for model in ["rep-dropout", "rep-noise"]:
        net = TorchNet(compile_model(model))
        batch = net.batch(3)
        a, b = net_output(net, batch, True), net_output(net, batch, True)
        assert not numpy.allclose(a, b), model + ": two training runs gave the same output"
        assert (net_output(net, batch, False) == plain).all(), model + ": eval output differs from plain"
        print("%s: training runs differ (max diff %.4f); eval equals plain exactly" % (model, numpy.abs(a - b).max()))


def test_state_dict_keys():
    """The state_dict keys are the module paths (TF's variable names with '.' for '/')."""
    plain = ["ff1.bias", "ff1.weight", "ff2.bias", "ff2.weight", "out.bias", "out.weight"]
    for model, keys in [("rep-plain", plain), ("rep-dropout", plain), ("rep-noise", plain),
                        ("rep-weight-norm", sorted(plain + ["ff1.weight_g", "out.weight_g"]))]:
        assert sorted(TorchNet(compile_model(model)).params()) == keys, model
    print("state_dict keys pinned")


def test_dtype():
    """A dtype scope reaches the torch params; their initial values have it."""
    net = TorchNet(compile_model("scoped-dtype"))
    params = dict(net.pt_model.named_parameters())
    params.update(dict(net.pt_model.named_buffers()))
    for name in ["double_outer", "double_normal"]:
        assert params[name].dtype.__repr__() == "torch.float64", (name, params[name].dtype)
    assert params["lin.weight"].dtype.__repr__() == "torch.float32"
    assert (params["double_outer"].detach().numpy() == 1.0).all()
    net.step(net.batch())
    print("float64 params under the dtype scope")


if __name__ == "__main__":
    globals()["test_" + sys.argv[1]]()
