"""Counterparts of returnn_common's tests/test_nn_math.py."""

import numpy

import rc


def test_op_broadcasting():
    # x [x(3)] + y [y(5)]: retc broadcasts by dim (returnn_common needs
    # allow_broadcast_all_sources); retc's extern data has a batch dim
    n = rc.net("math-op-broadcasting")
    f = rc.feed(n)
    x, y, out = rc.value(n, "data:x", f), rc.value(n, "data:y", f), rc.value(n, "output", f)
    assert out.shape == (3, 3, 5), out.shape
    rc.close(out, x[:, :, None] + y[:, None, :], 1e-6, "x + y")


def test_split_glu():
    n = rc.net("math-split-glu")
    net = n.config.typed_value("network")
    # returnn_common compares its net dict (split, sigmoid, mul); retc's too: the two slices
    # that cut the features are one split layer, each half a copy of its part
    splits = [v for v in net.values() if v["class"] == "split"]
    assert len(splits) == 1 and [d.dimension for d in splits[0]["out_dims"]] == [3, 3], net
    assert not [v for v in net.values() if v["class"] == "slice"], net
    assert [v.get("activation") for v in net.values() if v["class"] == "activation"] == ["sigmoid"], net
    assert net["output"]["class"] == "combine" and net["output"]["kind"] == "mul", net
    f = rc.feed(n)
    x, out = rc.value(n, "data:data", f), rc.value(n, "output", f)
    rc.close(out, x[..., :3] / (1 + numpy.exp(-x[..., 3:])), 1e-5, "a * sigmoid(b)")


def test_cumcum():
    n = rc.net("math-cumsum")
    f = rc.feed(n)
    x, out, lens = rc.data_out(n, f)
    for b, t in enumerate(lens):
        rc.close(out[b, :t], numpy.cumsum(x[b, :t], 0), 1e-4, "cumsum")


def test_logical_and():
    n = rc.net("math-logical-and")
    f = rc.feed(n)
    x = rc.value(n, "data:x", f)
    with n.graph.as_default():
        f[n.net.extern_data.data["x"].placeholder] = x = numpy.array([[True, False, True]] * 3)
    out = rc.value(n, "output", f)
    assert out.dtype == bool and (out == x).all(), out


if __name__ == "__main__":
    rc.main(globals())
