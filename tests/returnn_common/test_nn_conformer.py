"""Counterparts of returnn_common's tests/test_nn_conformer.py."""

import numpy

import rc


def conformer_vars(d, ff, heads, kernel, clipping, layers, feat):
    """retc's ConformerEncoder: the conv frontend (3x3 convs of 32 and 64 channels, time
    stride 2, the features max-pooled by 2), then blocks of two half-step feed-forwards,
    self-attention with relative positions, the conv module, five layer norms."""
    v = {"frontend/conv1/weight/param:0": [3, 3, 1, 32], "frontend/conv1/bias/param:0": [32],
         "frontend/conv2/weight/param:0": [3, 3, 32, 64], "frontend/conv2/bias/param:0": [64],
         "frontend/linear/weight/param:0": [-(-feat // 2) * 64, d],
         "frontend/linear/bias/param:0": [d]}
    for i in range(layers):
        p = "layers/%d/" % i
        for norm in ("ff1_norm", "att_norm", "conv_norm", "ff2_norm", "final_norm"):
            v[p + norm + "/scale/param:0"] = [d]
            v[p + norm + "/bias/param:0"] = [d]
        for f in ("ff1", "ff2"):
            v |= {p + f + "/linear_ff/weight/param:0": [d, ff], p + f + "/linear_ff/bias/param:0": [ff],
                  p + f + "/linear_out/weight/param:0": [ff, d], p + f + "/linear_out/bias/param:0": [d]}
        v |= {p + "self_att/qkv/param:0": [d, 3 * d], p + "self_att/rel_pos/param:0": [2 * clipping + 1, d // heads],
              p + "self_att/proj/weight/param:0": [d, d], p + "self_att/proj/bias/param:0": [d]}
        v |= {p + "conv/pointwise_conv1/weight/param:0": [d, 2 * d], p + "conv/pointwise_conv1/bias/param:0": [2 * d],
              p + "conv/depthwise_conv/weight/param:0": [kernel, 1, d], p + "conv/depthwise_conv/bias/param:0": [d],
              p + "conv/pointwise_conv2/weight/param:0": [d, d], p + "conv/pointwise_conv2/bias/param:0": [d]}
        for k in ("scale", "bias", "running_mean", "running_var"):
            v[p + "conv/norm/%s/param:0" % k] = [d]
    return v


def test_nn_conformer():
    # input 10, model 14, ff 17, 2 heads, 2 layers (returnn_common's dims)
    n = rc.net("conformer-conformer")
    rc.check_vars(n, conformer_vars(14, 17, 2, 31, 16, 2, 10))
    f = rc.feed(n)
    out = rc.value(n, "output", f)
    assert out.shape[0] == 3 and out.shape[-1] == 14 and numpy.isfinite(out).all()
    lens, out_lens = rc.lengths(n, "data:data", f), rc.lengths(n, "output", f)
    assert list(out_lens) == [-(-t // 2) for t in lens], (lens, out_lens)  # time stride 2


if __name__ == "__main__":
    rc.main(globals())
