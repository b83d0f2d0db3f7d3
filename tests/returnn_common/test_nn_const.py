"""Counterparts of returnn_common's tests/test_nn_const.py."""

import numpy

import rc


def test_ones():
    n = rc.net("const-ones")
    with n.graph.as_default():
        assert n.net.get_layer("ones").output.dtype == "float32"
    ones = rc.value(n, "ones", rc.feed(n))
    assert ones.shape == (5,) and (ones == 1.0).all(), ones


def test_ones_like_new_spatial_dim():
    # a loop over a new axis of 5 frames (i = 1..5, ended at i >= 5); ones of its type added
    n = rc.net("const-ones-like-new-spatial-dim")
    f = rc.feed(n)
    x, out = rc.value(n, "data:data", f), rc.value(n, "output", f)
    lens = rc.lengths(n, "data:data", f)
    assert list(rc.lengths(n, "output", f)) == [5, 5, 5]
    for b, t in enumerate(lens):
        mean = x[b, :t].mean(0)
        rc.close(out[b], 1.0 + numpy.arange(1, 6)[:, None] * mean, 1e-5, "1 + i * mean, sequence %d" % b)


if __name__ == "__main__":
    rc.main(globals())
