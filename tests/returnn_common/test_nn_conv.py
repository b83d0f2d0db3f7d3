"""Counterparts of returnn_common's tests/test_nn_conv.py."""

import numpy

import rc


def _conv(model, weight_shape, stride, groups):
    n = rc.net(model)
    rc.check_vars(n, {"weight/param:0": weight_shape, "bias/param:0": [13]})
    f = rc.feed(n, seed=4)
    x, out = rc.value(n, "data:data", f), rc.value(n, "output", f)
    lens, out_lens = rc.lengths(n, "data:data", f), rc.lengths(n, "output", f)
    p = n.params()
    w, bias = p["weight/param:0"], p["bias/param:0"]  # [4, in / groups, out]
    per_group_in, per_group_out = 13 // groups, 13 // groups
    for b, t in enumerate(lens):
        n_out = -(-(t - 4 + 1) // stride)  # "valid"
        assert out_lens[b] == n_out, (out_lens[b], n_out)
        for s in range(n_out):
            window = x[b, s * stride:s * stride + 4]  # [4, in]
            want = numpy.zeros(13) + bias
            for g in range(groups):
                xs = window[:, g * per_group_in:(g + 1) * per_group_in]
                ws = w[:, :, g * per_group_out:(g + 1) * per_group_out]
                want[g * per_group_out:(g + 1) * per_group_out] += numpy.einsum("ki,kio->o", xs, ws)
            rc.close(out[b, s], want, 1e-4, "frame %d of sequence %d" % (s, b))


def test_conv1d():
    # kernel 4, stride 3, "valid", 13 -> 13
    _conv("conv-conv1d", [4, 13, 13], 3, 1)


def test_conv1d_depthwise():
    # groups 13: one filter per channel
    _conv("conv-conv1d-depthwise", [4, 1, 13], 1, 13)


if __name__ == "__main__":
    rc.main(globals())
