"""Counterparts of returnn_common's tests/test_nn_attention.py."""

import numpy

import rc


def _att(prefix, in_dim, qkv_bias, proj_bias):
    v = {prefix + "proj/weight/param:0": [33, 5]}
    if proj_bias:
        v[prefix + "proj/bias/param:0"] = [5]
    if qkv_bias:
        v[prefix + "qkv/weight/param:0"] = [in_dim, 2 * 21 + 33]
        v[prefix + "qkv/bias/param:0"] = [2 * 21 + 33]
    else:
        v[prefix + "qkv/param:0"] = [in_dim, 2 * 21 + 33]
    return v


def _run(model, lens_list=(None,)):
    n = rc.net(model)
    for lens in lens_list:
        f = rc.feed(n, seed=2, lens=lens)
        out = rc.value(n, "output", f)
        assert out.shape[-1] == 5 and numpy.isfinite(out).all(), out.shape
    return n


def test_self_attention():
    # key 21 and value 33 over 3 heads, projected to 5
    n = _run("attention-self-attention")
    rc.check_vars(n, _att("self_att/", 13, qkv_bias=False, proj_bias=True))


def test_rel_pos_self_attention():
    n = _run("attention-rel-pos-self-attention")
    want = _att("self_att/", 12, qkv_bias=True, proj_bias=True)
    want.update({"self_att/linear_pos/weight/param:0": [12, 21], "self_att/pos_bias_u/param:0": [3, 7],
                 "self_att/pos_bias_v/param:0": [3, 7]})
    rc.check_vars(n, want)


def test_rel_pos_self_attention_learnable():
    # Shaw et al.: a table of 2 * 3 + 1 offsets x key per head 7, no biases; run again on
    # sequences of 3, 3, 1 and 4 frames (the returnn_common issue 238)
    n = _run("attention-rel-pos-learnable", lens_list=([3, 3], [3, 2], [1, 1], [4, 2]))
    want = _att("self_att/", 12, qkv_bias=False, proj_bias=False)
    want["self_att/rel_pos/param:0"] = [7, 7]
    rc.check_vars(n, want)


if __name__ == "__main__":
    rc.main(globals())
