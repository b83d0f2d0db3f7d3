"""Parameter options and reparametrizations, read back from RETURNN.

Run alone as `python test_params.py NAME`; ctest runs the cases in groups (cases.py).
"""
# ctest-group: 15  (cases per process: tests/integration/cases.py)

import math
import re
import sys

import numpy
import tensorflow as tf

import returnn_probe
from returnn_probe import Net, close, compile_model

FAN_IN, FAN_OUT = 200.0, 300.0
N = FAN_IN * FAN_OUT


def test_init_schemes():
    """Empirical mean and variance of each initializer match its formula.

    Tolerance: with N = 60000 samples, the standard error of the mean is
    sigma/sqrt(N) and of the variance about var*sqrt(2/N) (0.58%); we allow 5
    standard errors: |mean - mu| <= 5 sigma/sqrt(N), |var/v - 1| <= 5 sqrt(2/N)
    (2.9%; uniform distributions have a smaller error, so this is looser).
    """
    net = Net(compile_model("inits"))
    p = net.params()
    avg = (FAN_IN + FAN_OUT) / 2
    trunc = 0.87962566103423978
    expected = {
        # name: (mean, variance, (min, max) or None)
        "glorot_uniform": (0.0, 1.0 / avg, (-math.sqrt(3 / avg), math.sqrt(3 / avg))),
        "glorot_normal": (0.0, 1.0 / avg, (-2 * math.sqrt(1 / avg) / trunc, 2 * math.sqrt(1 / avg) / trunc)),
        "he_normal": (0.0, 2.0 / FAN_IN, (-2 * math.sqrt(2 / FAN_IN) / trunc, 2 * math.sqrt(2 / FAN_IN) / trunc)),
        "he_uniform": (0.0, 2.0 / FAN_IN, (-math.sqrt(6 / FAN_IN), math.sqrt(6 / FAN_IN))),
        "vs_fan_out_normal": (0.0, 0.5 / FAN_OUT, None),
        "vs_fan_in_truncated": (0.0, 3.0 / FAN_IN, (-2 * math.sqrt(3 / FAN_IN) / trunc, 2 * math.sqrt(3 / FAN_IN) / trunc)),
        "normal": (0.3, 0.2 ** 2, None),
        "uniform": (0.1, 0.4 ** 2 / 12, (-0.1, 0.3)),
        "subgraph": (1.0, 4.0, None),
    }
    for name, (mean, var, bounds) in expected.items():
        w = p["%s/weight/param:0" % name].astype("float64")
        assert w.shape == (200, 300), (name, w.shape)
        m, v = w.mean(), w.var()
        assert abs(m - mean) <= 5 * math.sqrt(var / N), (name, "mean", m, mean)
        assert abs(v / var - 1) <= 5 * math.sqrt(2 / N), (name, "variance", v, var)
        if bounds:
            assert w.min() >= bounds[0] - 1e-6 and w.max() <= bounds[1] + 1e-6, (name, w.min(), w.max(), bounds)
        print("%-20s mean %+.5f (want %+.5f)  var %.6f (want %.6f)" % (name, m, mean, v, var))
    assert (p["constant/weight/param:0"] == numpy.float32(0.7)).all()
    # Seeds come from param paths: two schemes never share values.
    assert not numpy.allclose(p["glorot_uniform/weight/param:0"], p["he_uniform/weight/param:0"] / math.sqrt(2 * avg / FAN_IN))


def test_init_is_seeded_by_path():
    """The same model compiled twice initializes identically; inits do not
    depend on other params (rep-plain and rep-weight-norm share ff2's)."""
    a = Net(compile_model("rep-plain")).params()
    b = Net(compile_model("rep-plain")).params()
    for k in a:
        assert (a[k] == b[k]).all(), k
    c = Net(compile_model("rep-weight-norm")).params()
    assert (a["ff2/weight/param:0"] == c["ff2/weight/param:0"]).all()


def _steps(model, n, lr=0.1, seed=1):
    net = Net(compile_model(model), with_updater=True, learning_rate=lr)
    feed = net.feed(seed)
    before = net.params()
    for _ in range(n):
        net.step(feed)
    return net, before, net.params()


def test_weight_decay_decoupled():
    """Decoupled: with the gradient held at zero, w shrinks by (1 - 2*lambda) per step."""
    lam, steps = 0.01, 5
    net, before, after = _steps("wd-decoupled", steps)
    w0, w5 = before["decayed/weight/param:0"], after["decayed/weight/param:0"]
    factor = (1 - 2 * lam) ** steps
    close(w5, w0 * factor, 1e-6, "decayed weight")
    print("w_5 / w_0 = %.6f, documented (1 - 2*0.01)^5 = %.6f" % ((w5 / w0).mean(), factor))
    # Without decay a zero-gradient weight would not move: the trained one does.
    assert not numpy.allclose(before["lin/weight/param:0"], after["lin/weight/param:0"])


def test_weight_decay_coupled():
    """Coupled: RETURNN adds lambda * sum(w^2) to the loss; decoupled adds nothing."""
    lam = 0.01
    net = Net(compile_model("wd-coupled"))
    w = net.variable("decayed/weight/param:0").astype("float64")
    term = net.run(net.net.get_total_constraints, {})
    close(term, lam * (w ** 2).sum(), 1e-5, "constraint term")
    feed = net.feed()
    total, loss = net.run(lambda: [net.net.get_objective(), net.net.get_total_loss()], feed)
    close(total - loss, lam * (w ** 2).sum(), 1e-4, "objective - loss")
    print("loss term %.6f = 0.01 * sum(w^2) = %.6f" % (term, lam * (w ** 2).sum()))
    dec = Net(compile_model("wd-decoupled"))
    assert float(dec.run(dec.net.get_total_constraints, {})) == 0.0


def test_trainable_false():
    _, before, after = _steps("opt-frozen", 3)
    assert (before["weight/param:0"] == after["weight/param:0"]).all()
    assert not numpy.allclose(before["bias/param:0"], after["bias/param:0"])


def test_lr_multiplier():
    """With SGD, the first update of a param with multiplier k is k times the plain one."""
    _, b1, a1 = _steps("opt-plain", 1)
    _, b3, a3 = _steps("opt-lr-mult", 1)
    d1 = a1["weight/param:0"] - b1["weight/param:0"]
    d3 = a3["weight/param:0"] - b3["weight/param:0"]
    assert numpy.abs(d1).max() > 1e-4
    close(d3, 3 * d1, 1e-6, "update with multiplier 3")
    close(a3["bias/param:0"] - b3["bias/param:0"], a1["bias/param:0"] - b1["bias/param:0"], 1e-7, "bias")
    print("measured update ratio %.6f (want 3)" % (numpy.abs(d3).sum() / numpy.abs(d1).sum()))


# The learning rate per step of test_step_schedule (test_params_torch.py has a copy: it
# cannot import TF beside torch).
SCHEDULE = [(0, 1e-4), (100, 1e-2), (400, 1e-4), (1000, 1e-5)]
SCHEDULE_STEPS = [0, 1, 50, 100, 250, 399, 400, 700, 1000, 5000]


def test_step_schedule():
    """--set lr_schedule (a learning rate per step, piecewise linear): the rate
    RETURNN's TF updater applies at each global train step (the step a tensor)
    equals the schedule's points and the lines between them, before the first
    and after the last step its end rates (torch: test_params_torch.py)."""
    import os

    setting = "lr_schedule=" + ",".join("%d:%g" % p for p in SCHEDULE)
    net = Net(compile_model("12ax", os.environ["RETC"], ["--set", setting]), with_updater=True)
    with net.graph.as_default():
        rate = net.updater.get_current_step_learning_rate()
        # The step as the updater reads it, fed.
        rates = [float(net.session.run(rate, {net.updater.global_train_step: s})) for s in SCHEDULE_STEPS]
    for s, r in zip(SCHEDULE_STEPS, rates):
        want = numpy.interp(s, [p for p, _ in SCHEDULE], [r for _, r in SCHEDULE])
        # float32: the segments' sum rounds at the scale of the largest rate
        assert abs(r - want) <= 1e-6 * max(v for _, v in SCHEDULE), ("TF's rate at step %d" % s, r, want)
    print("%s: TF's rates at steps %s: %s" % (setting, SCHEDULE_STEPS, ["%.4g" % r for r in rates]))


def test_gradient_clip():
    """Clipping at c caps each gradient entry: |update| <= lr*c, and the
    update is the plain one clipped entry-wise."""
    lr, c = 0.1, 0.01
    _, b1, a1 = _steps("opt-plain", 1, lr)
    _, bc, ac = _steps("opt-clip", 1, lr)
    d1 = a1["weight/param:0"] - b1["weight/param:0"]
    dc = ac["weight/param:0"] - bc["weight/param:0"]
    assert numpy.abs(d1).max() > lr * c * 1.5, "the plain gradient must exceed the clip for this test"
    assert numpy.abs(dc).max() <= lr * c * (1 + 1e-5)
    close(dc, numpy.clip(d1, -lr * c, lr * c), 1e-7, "clipped update")
    print("max |update| plain %.5f, clipped %.5f (cap %.5f)" % (numpy.abs(d1).max(), numpy.abs(dc).max(), lr * c))


def _derived(g, v, axes=(0,)):
    return g * v / numpy.sqrt((v.astype("float64") ** 2).sum(axis=axes, keepdims=True))


def test_weight_norm():
    plain = Net(compile_model("rep-plain")).params()
    net, before, after = _steps("rep-weight-norm", 5, lr=0.5)
    for name in ["out", "ff1"]:
        v0, g0 = before[name + "/weight/param:0"], before[name + "/weight_g/param:0"]
        # v keeps the plain weight's name and initial value; g = ||v0||.
        assert (v0 == plain[name + "/weight/param:0"]).all(), name
        close(g0, numpy.sqrt((v0.astype("float64") ** 2).sum(axis=0)), 1e-5, name + " g0")
        # The effective initial weight equals the plain model's.
        close(_derived(g0, v0), plain[name + "/weight/param:0"], 1e-5, name + " initial weight")
        v5, g5 = after[name + "/weight/param:0"], after[name + "/weight_g/param:0"]
        assert not numpy.allclose(v5, v0) and not numpy.allclose(g5, g0), name + " did not train"
    # The Linear's dot folds the norm: x.(g v/||v||) = (x.v) * (g/||v||), with
    # the bias one linear layer on TF. On the read-back values after training,
    # the scale is g/||v|| and the layer equals the product with the derived
    # weight w = g v / ||v||, plus the bias.
    g5, v5 = after["out/weight_g/param:0"], after["out/weight/param:0"]
    close(net.layer("out.div"), g5 / numpy.sqrt((v5.astype("float64") ** 2).sum(axis=0)), 1e-5, "g/||v||")
    feed = net.feed(2)
    close(net.layer("out.add", feed), net.layer("activation", feed) @ _derived(g5, v5) + after["out/bias/param:0"],
          1e-4, "x.w + b")
    # ff1's Linear alone reads its weight: its layer computes the norm (norm_here), by retc's
    # ops in this venv (runtime/tf/weight_norm_ops.cc); trained by TF's own ops instead
    # (RETC_TF_WEIGHT_NORM_OPS=0), every param ends within float32 rounding of the same.
    types = {op.type for op in net.graph.get_operations()}
    assert {"RetcAxisDot", "RetcAxisScaleAdd"} <= types, sorted(t for t in types if t.startswith("Retc"))
    import os
    os.environ["RETC_TF_WEIGHT_NORM_OPS"] = "0"
    try:
        tf_net, tf_before, tf_after = _steps("rep-weight-norm", 5, lr=0.5)
    finally:
        os.environ.pop("RETC_TF_WEIGHT_NORM_OPS")
    assert not any(op.type.startswith("Retc") for op in tf_net.graph.get_operations())
    for name, value in after.items():
        assert (tf_before[name] == before[name]).all(), name
        close(tf_after[name], value, 1e-5, name + " trained by TF's ops")
    print("weight norm: initial weights equal, g and v trained, x.(g*v/||v||) + b holds; trained by "
          "retc's ops as by TF's")


def test_weight_norm_computed_once():
    """out.weight has two consumers (dots over its norm axis): one norm and
    one scale g/||v|| per step, read by both; no weight-sized w is made."""
    import ast
    src = open(compile_model("rep-weight-norm")).read()
    tree = ast.parse(src)
    network = next(s.value for s in tree.body if isinstance(s, ast.Assign) and s.targets[0].id == "network")
    layers = {ast.literal_eval(k): v for k, v in zip(network.keys, network.values)}

    def field(layer, key):
        for k, v in zip(layer.keys, layer.values):
            if ast.literal_eval(k) == key:
                return v

    def reads(layer, name):
        f = field(layer, "from")
        if f is None:
            return False
        return name in ([ast.literal_eval(f)] if isinstance(f, ast.Constant) else [ast.literal_eval(e) for e in f.elts])

    def is_norm(layer):  # the config's _retc_norm (an eval layer)
        return ast.literal_eval(field(layer, "class")) == "eval" and \
            ast.literal_eval(field(layer, "eval")) == "norm(self, source, axis=axis)"

    norms_of_v = [n for n, l in layers.items() if is_norm(l) and reads(l, "out.weight")]
    users_of_scale = [n for n, l in layers.items() if reads(l, "out.div")]
    users_of_v = sorted(n for n, l in layers.items() if reads(l, "out.weight"))
    g_inits = [n for n, l in layers.items() if n == "out.weight_g.init"]
    assert len(norms_of_v) == 1, norms_of_v
    assert len(users_of_scale) == 2, users_of_scale
    assert users_of_v == ["out.add", "out.add_2", "out.norm"], users_of_v  # linear layers (dot, scale, bias)
    assert len(g_inits) == 1
    print("weight norm of out: 1 norm and 1 scale layer per step, the scale read by %d layers: %s" % (
        len(users_of_scale), users_of_scale))


def test_weight_norm_scaled_linear():
    """The config's _retc_scaled_linear (weight norm's x . (v s) + b as one layer) chooses by
    the rows at run time, as torch's _weight_norm_dot: (x . v) s for at most in/2 rows, x . (v s)
    for more (which one ran is read from the step's trace). Both give the product and its
    gradients for x, v, s and b as written out, in float64 within 1e-12 of their scale, for a
    weight [in, out] and [out, in]; so do they with norm_here (s = g / |v| computed in the layer,
    the gradients for x, v, g and b), by retc's ops (runtime/tf/weight_norm_ops.cc, which
    tools/setup.sh built into the venv: RetcAxisDot and RetcAxisScaleAdd in the graph) and with
    RETC_TF_WEIGHT_NORM_OPS=0 by TF's own (neither in the graph)."""
    import os
    import runpy
    scaled = runpy.run_path(compile_model("rep-weight-norm"))["_retc_scaled_linear"]
    retc_ops = {"RetcAxisDot", "RetcAxisScaleAdd"}
    rng = numpy.random.RandomState(1)
    n_in, n_out = 12, 7
    for mode, norm_here, env in [("s given", False, "1"), ("norm here, retc's ops", True, "1"),
                                 ("norm here, TF's ops", True, "0")]:
        os.environ["RETC_TF_WEIGHT_NORM_OPS"] = env
        for rows, way in [(6, "product"), (40, "weight")]:
            for w_in in (0, 1):
                values = [rng.randn(rows, n_in), rng.randn(*[(n_in, n_out), (n_out, n_in)][w_in]),
                          rng.rand(n_out) + 0.5, rng.randn(n_out), rng.randn(rows, n_out)]
                graph = tf.Graph()
                with graph.as_default():
                    x, v, s, b, cot = inputs = [tf.compat.v1.placeholder(tf.float64, a.shape) for a in values]
                    y = scaled(x, v, s, b, w_in, norm_here)
                    fetches = [y] + tf.gradients(y, [x, v, s, b], cot)
                    assert not _matmuls_transposing_b(graph), (rows, w_in)
                    types = {op.type for op in graph.get_operations()}
                    assert types & retc_ops == (retc_ops if norm_here and env == "1" else set()), (mode, types & retc_ops)
                    scale = s / tf.norm(v, axis=w_in) if norm_here else s
                    want = tf.matmul(x, (v if w_in == 0 else tf.transpose(v)) * scale) + b
                    wanted = [want] + tf.gradients(want, [x, v, s, b], cot)
                    feed = dict(zip(inputs, values))
                    with tf.compat.v1.Session() as session:
                        options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
                        meta = tf.compat.v1.RunMetadata()
                        got = session.run(fetches, feed, options=options, run_metadata=meta)
                        expected = session.run(wanted, feed)
                ran = {node.node_name.split("/")[-1] for dev in meta.step_stats.dev_stats for node in dev.node_stats}
                assert sorted(ran & {"scaled_product", "scaled_weight"}) == ["scaled_" + way], (rows, sorted(ran))
                for name, a, e in zip(["y", "dx", "dv", "dg" if norm_here else "ds", "db"], got, expected):
                    close(a, e, 1e-12 * float(numpy.abs(e).max()), "%s, %s, weight %s: %s" % (mode, way, w_in, name))
                print("%s: %d rows, weight %s: the %s scaled; the product and its gradients" % (
                    mode, rows, "[in, out]" if w_in == 0 else "[out, in]", way))
    os.environ.pop("RETC_TF_WEIGHT_NORM_OPS")


def _matmuls_transposing_b(graph):
    """The MatMul ops of `graph` with transpose_b (oneDNN's slow path on the CPU, see the
    config's _retc_dot)."""
    return [op.name for op in graph.get_operations() if op.type == "MatMul" and op.get_attr("transpose_b")]


def test_plain_linear():
    """The config's _retc_plain_linear (x . w + b, a Linear without weight norm) and its
    gradient written out: the product and its gradients for x, w and b as TF's own of
    matmul and bias, in float64 within 1e-12 of their scale, for a weight [in, out] and
    [out, in]; no MatMul with transpose_b in it, forward or backward (TF's own gradient of
    x . w has one for x)."""
    import runpy
    linear = runpy.run_path(compile_model("rep-plain"))["_retc_plain_linear"]
    rng = numpy.random.RandomState(2)
    n_in, n_out, rows = 12, 7, 9
    for w_in in (0, 1):
        values = [rng.randn(rows, n_in), rng.randn(*[(n_in, n_out), (n_out, n_in)][w_in]), rng.randn(n_out),
                  rng.randn(rows, n_out)]
        graph = tf.Graph()
        with graph.as_default():
            x, w, b, cot = inputs = [tf.compat.v1.placeholder(tf.float64, a.shape) for a in values]
            y = linear(x, w, b, w_in)
            fetches = [y] + tf.gradients(y, [x, w, b], cot)
            assert not _matmuls_transposing_b(graph), w_in
            want = tf.matmul(x, w, transpose_b=w_in == 1) + b
            wanted = [want] + tf.gradients(want, [x, w, b], cot)
            assert _matmuls_transposing_b(graph), "TF's own transposes no operand b: the check checks nothing"
            with tf.compat.v1.Session() as session:
                got, expected = session.run([fetches, wanted], dict(zip(inputs, values)))
        for name, a, e in zip(["y", "dx", "dw", "db"], got, expected):
            close(a, e, 1e-12 * float(numpy.abs(e).max()), "weight %s: %s" % (w_in, name))
        print("weight %s: the product and its gradients as TF's own, no MatMul with transpose_b" % (
            "[in, out]" if w_in == 0 else "[out, in]"))


def _outputs(model, train, feed_seed=3):
    net = Net(compile_model(model), train_flag=train)
    feed = net.feed(feed_seed)
    return net.layer("output", feed), net.layer("output", feed)


def test_weight_dropout_and_noise():
    plain, _ = _outputs("rep-plain", train=False)
    for model in ["rep-dropout", "rep-noise"]:
        a, b = _outputs(model, train=True)
        assert not numpy.allclose(a, b), model + ": two training runs gave the same output"
        e1, e2 = _outputs(model, train=False)
        assert (e1 == plain).all() and (e2 == plain).all(), model + ": eval output differs from the plain weight's"
        print("%s: training runs differ (max diff %.4f); eval equals plain exactly" % (model, numpy.abs(a - b).max()))


def _variables(model, binary=None):
    return sorted(returnn_probe.constructed(model, binary))


def test_variable_names():
    """Pinned variable names: weight dropout and noise rename nothing, weight
    norm adds <param>_g."""
    import os
    plain = ["ff1/bias/param:0", "ff1/weight/param:0", "ff2/bias/param:0", "ff2/weight/param:0",
             "out/bias/param:0", "out/weight/param:0"]
    assert _variables("rep-plain") == plain
    assert _variables("rep-dropout") == plain
    assert _variables("rep-noise") == plain
    assert _variables("rep-weight-norm") == sorted(plain + ["ff1/weight_g/param:0", "out/weight_g/param:0"])
    demo = ["lstm/bias/param:0", "lstm/ff_weight/param:0", "lstm/rec_weight/param:0", "out/bias/param:0",
            "out/weight/param:0"]
    assert _variables("12ax", os.environ["RETC"]) == demo
    assert _variables("12ax-wn", os.environ["RETC"]) == sorted(demo + ["lstm/ff_weight_g/param:0", "out/weight_g/param:0"])
    print("variable names pinned")


def test_scopes_in_returnn():
    """dtype and device scopes reach RETURNN's variables."""
    net = Net(compile_model("scoped"))
    vs = {v.name: v for v in net.net.get_params_list()}
    for name in ["double_outer/param:0", "double_inner/param:0", "explicit_device/param:0"]:
        assert vs[name].dtype.base_dtype.name == "float64", (name, vs[name].dtype)
    assert vs["lin/weight/param:0"].dtype.base_dtype.name == "float32"
    src = open(compile_model("scoped")).read()
    assert re.search(r'"double_outer": \{[^}]*"param_device": "CPU:0"', src), src
    assert re.search(r'"double_inner": \{[^}]*"param_device": "CPU"', src)
    assert re.search(r'"explicit_device": \{[^}]*"param_device": "CPU:0"', src)
    for name in ["double_outer/param:0", "double_inner/param:0"]:
        assert "CPU" in vs[name].device, (name, vs[name].device)
    print("float64 params under the dtype scope; devices per innermost scope")


def test_stochastic_depth():
    """Eval: x + branch exactly. Training: each sequence gets either x or
    x + branch / (1 - p), and runs differ."""
    ev = Net(compile_model("stochastic-depth"), train_flag=False)
    feed = ev.feed(5)
    x = ev.layer("data:data", feed)
    branch = ev.layer("lin.add", feed)
    assert (ev.layer("residual", feed) == x + branch).all()
    tr = Net(compile_model("stochastic-depth"), train_flag=True)
    feed = tr.feed(5)
    x, branch = tr.layer("data:data", feed), tr.layer("lin.add", feed)
    kept = dropped = 0
    outs = []
    for _ in range(8):
        y = tr.layer("residual", feed)
        outs.append(y)
        for i in range(y.shape[0]):
            if numpy.allclose(y[i], x[i], atol=1e-6):
                dropped += 1
            else:
                close(y[i], x[i] + branch[i] / 0.5, 1e-5, "kept branch of sequence %d" % i)
                kept += 1
    assert kept and dropped, (kept, dropped)
    assert any(not numpy.allclose(outs[0], o) for o in outs[1:])
    print("stochastic depth, 24 sequences: %d kept (scaled 1/(1-p)), %d dropped; eval = x + branch" % (kept, dropped))


def _grad(model, var):
    net = Net(compile_model(model))
    feed = net.feed(2)

    def make():
        v = next(p for p in net.net.get_params_list() if p.name == var)
        (g,) = tf.gradients(net.net.get_objective(), [v])
        return g if g is not None else tf.zeros_like(v)

    return net.run(make, feed)


def test_gradient_scale_and_stop():
    plain = _grad("grad-plain", "lin/weight/param:0")
    scaled = _grad("grad-scaled", "lin/weight/param:0")
    stopped = _grad("grad-stopped", "lin/weight/param:0")
    assert numpy.abs(plain).max() > 1e-4
    close(scaled, 0.25 * plain, 1e-6, "scaled gradient")
    assert (stopped == 0).all()
    # The other branch's gradient is untouched.
    close(_grad("grad-stopped", "decayed/weight/param:0"), _grad("grad-plain", "decayed/weight/param:0"), 1e-6, "other")
    print("gradient x0.25 and stopped, measured on lin.weight")


if __name__ == "__main__":
    globals()["test_" + sys.argv[1]]()
    print("ok:", sys.argv[1])
