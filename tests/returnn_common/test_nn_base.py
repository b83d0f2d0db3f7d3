"""Counterparts of returnn_common's tests/test_nn_base.py."""

import subprocess

import numpy

import rc


def _run(model, want_vars, seed=1, train_flag=False, output="output"):
    n = rc.net(model, train_flag=train_flag)
    rc.check_vars(n, want_vars)
    f = rc.feed(n, seed)
    return n, f, rc.value(n, output, f)


def _linear_out(n, f, x, prefix=""):
    p = n.params()
    return x @ p[prefix + "weight/param:0"] + p[prefix + "bias/param:0"]


def test_simple_linear():
    n, f, out = _run("base-simple-linear", rc.lin("", 13, 13))
    rc.close(out, _linear_out(n, f, rc.value(n, "data:data", f)), 1e-5, "linear")


def test_simple_linear_ex():
    n, f, out = _run("base-simple-linear-ex", rc.lin("", 3, 5))
    rc.close(out, _linear_out(n, f, rc.value(n, "data:data", f)), 1e-5, "linear")


def test_simple_net_linear():
    _run("base-simple-net-linear", rc.lin("linear/", 13, 13))


def test_simple_net_linear_square_matrix():
    _run("base-square-matrix", rc.lin("linear/", 13, 13) | rc.lin("linear2/", 13, 13))


def test_simple_net_arithmetic():
    n, f, out = _run("base-arithmetic", {})
    x = rc.value(n, "data:data", f)
    lens = rc.lengths(n, "data:data", f)
    for b, t in enumerate(lens):
        rc.close(out[b, :t], 1.0 / x[b, :t] + 2.0 * x[b, :t], 1e-4, "1 / x + 2 x")


def test_functional_auto_name_ctx():
    n, f, out = _run("base-functional", {})
    x = rc.value(n, "data:data", f)
    g = lambda v: numpy.tanh((v + 1.0) * 0.5)  # noqa: E731
    rc.close(out, g(g(x - 1.0) + 1.0), 1e-5, "functional twice")


def test_simple_net_share_params():
    # linear2 applied twice: still one weight and one bias
    n, f, out = _run("base-share-params", rc.lin("linear/", 13, 13) | rc.lin("linear2/", 13, 13))
    x = rc.value(n, "data:data", f)
    h = _linear_out(n, f, _linear_out(n, f, _linear_out(n, f, x, "linear/"), "linear2/"), "linear2/")
    rc.close(out, h, 1e-4, "shared linear2")


def test_explicit_root_ctx_sub():
    # dropout (train only) then linear; in evaluation the output is the linear's
    n, f, out = _run("base-explicit-root-ctx", rc.lin("linear/", 13, 13))
    rc.close(out, _linear_out(n, f, rc.value(n, "data:data", f), "linear/"), 1e-5, "eval: no dropout")
    dropout = [v for v in n.config.typed_value("network").values() if v["class"] == "dropout"]
    assert len(dropout) == 1 and dropout[0]["dropout"] == 0.1, dropout


def test_root_mod_call_twice():
    n, f, _ = _run("base-root-mod-call-twice", rc.lin("linear/", 5, 13), output="y")
    for key, name in (("input1", "y"), ("input2", "z")):
        rc.close(rc.value(n, name, f), _linear_out(n, f, rc.value(n, "data:" + key, f), "linear/"), 1e-5, name)


def test_multiple_returns_depth_1():
    _run("base-multiple-returns-depth-1", rc.lin("sub/linear/", 13, 13))


def test_multiple_returns_depth_2():
    _run("base-multiple-returns-depth-2", rc.lin("sub/sub/linear/", 13, 13))


def test_from_call_variations():
    want = {}
    for s in ("sub/", "sub2/"):
        want |= rc.lin(s + "linear/", 13, 13) | rc.lin(s + "linear2/", 13, 13)
    _run("base-from-call-variations", want)


def test_from_call_variations2():
    want = rc.lin("linear/", 13, 13)
    for s in ("sub/", "sub2/"):
        want |= rc.lin(s + "linear/", 13, 13) | rc.lin(s + "linear2/", 13, 13)
    _run("base-from-call-variations2", want)


def test_get_name_in_current_ctx():
    # the nesting root > sub_1 > same > child_1 and root > sub_2 > child_2 names the variables
    _run("base-name-in-ctx", rc.lin("sub_1/same/child_1/", 13, 13) | rc.lin("sub_2/child_2/", 13, 13))


def test_deepcopy():
    _run("base-deepcopy", rc.lin("0/", 13, 3) | rc.lin("1/", 3, 4) | rc.lin("2/", 4, 5))


def test_deepcopy_same_linear():
    _run("base-deepcopy-same-linear", rc.lin("0/", 13, 13) | rc.lin("1/", 13, 13) | rc.lin("2/", 13, 13))


def test_deepcopy_same_linear_diff_init():
    # the copies are new variables: their random initial values differ
    n, _, _ = _run("base-deepcopy-same-linear", rc.lin("0/", 13, 13) | rc.lin("1/", 13, 13) | rc.lin("2/", 13, 13))
    p = n.params()
    w0, w1 = p["0/weight/param:0"], p["1/weight/param:0"]
    assert (w0 != 0.0).any() and (w0 != w1).any()


def test_deepcopy_deep():
    # copies of a module with a submodule; the weight decay set on the original holds for each copy
    n, _, _ = _run("base-deepcopy-deep", rc.lin("0/lin/", 13, 13) | rc.lin("1/lin/", 13, 13) | rc.lin("2/lin/", 13, 13))
    net = n.config.typed_value("network")
    decays = {k: v.get("L2") for k, v in net.items() if v.get("class") == "variable"}
    assert sorted(k for k, v in decays.items() if v == 0.01) == ["0.lin.weight", "1.lin.weight", "2.lin.weight"], decays
    assert n.config.bool("decouple_constraints", False)


def test_variable():
    n, f, out = _run("base-variable", {"variable/param:0": [5]})
    rc.close(out, rc.value(n, "data:data", f) + n.params()["variable/param:0"], 1e-6, "x + variable")


def test_parameter_weight_decay():
    n, _, _ = _run("base-parameter-weight-decay", rc.lin("", 5, 4))
    net = n.config.typed_value("network")
    l2 = {k: v["L2"] for k, v in net.items() if "L2" in v}
    assert sorted(l2.values()) == [1.1, 1.1], l2


def test_const_array_serialization():
    n, f, out = _run("base-const-array", {})
    rc.close(out, rc.value(n, "data:data", f) + numpy.linspace(0.0, 10.0, 13), 1e-5, "x + linspace")


def test_asr_specaug_v1_eval_func_serialization():
    # SpecAugment: masks in training, the identity in evaluation
    n, f, out = _run("base-specaugment", {})
    rc.close(out, rc.value(n, "data:data", f), 0, "evaluation")
    n = rc.net("base-specaugment", train_flag=True)
    out = rc.value(n, "output", rc.feed(n))
    assert numpy.isfinite(out).all()


def test_returnn_config_direct_construction():
    epoch, _ = rc.engine_train("base-direct-construction")
    assert epoch == 1


def test_param_name_deep():
    # sub2 calls sub's Linear: one weight and one bias, out = 2 * linear(x)
    n, f, out = _run("base-param-name-deep", rc.lin("sub/linear/", 13, 13))
    rc.close(out, 2 * _linear_out(n, f, rc.value(n, "data:data", f), "sub/linear/"), 1e-5, "shared")


def test_mod_early_setattr():
    _run("base-mod-early-setattr", rc.lin("linear/", 13, 13))


def test_make_layer_subnet_deep():
    # deep_{i+1} = deep_i + deep_{i-1}, deep0 = deep1 = x: deep100 = fib(101) x
    n, f, out = _run("base-make-layer-subnet-deep", {})
    a, b = 1, 1
    for _ in range(99):
        a, b = b, a + b
    x = rc.value(n, "data:data", f)
    rc.close(out / float(b), x, 1e-5, "100 layers deep")


def test_linear_wrong_type():
    # C++: Linear::forward takes a Tensor; called on a map, the model does not compile
    import os
    root = os.environ["RETC_SOURCE_DIR"]
    src = os.path.join(root, "tests", "compile_fail", "linear_wrong_type.cc")
    cmd = [os.environ.get("CXX", "g++"), "-std=c++20", "-fsyntax-only", "-I", root, src]
    ok = subprocess.run(cmd, capture_output=True, text=True)
    assert ok.returncode == 0, "the right call does not build: " + ok.stderr[-2000:]
    bad = subprocess.run(cmd + ["-DRETC_WRONG_TYPE"], capture_output=True, text=True)
    assert bad.returncode != 0, "a Linear called on a map builds"
    assert "cannot convert" in bad.stderr and "Linear::forward" in bad.stderr, bad.stderr[-2000:]


if __name__ == "__main__":
    rc.main(globals())
