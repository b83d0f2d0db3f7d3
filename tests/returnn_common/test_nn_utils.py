"""Counterparts of returnn_common's tests/test_nn_utils.py."""

import numpy

import rc


def test_prev_target_seq():
    # BOS (0) before the labels: one frame longer
    n = rc.net("utils-prev-target-seq")
    f = rc.feed(n)
    x, out = rc.value(n, "data:data", f), rc.value(n, "output", f)
    lens, out_lens = rc.lengths(n, "data:data", f), rc.lengths(n, "output", f)
    assert list(out_lens) == [t + 1 for t in lens]
    with n.graph.as_default():
        assert n.net.get_layer("output").output.sparse_dim.dimension == 3
    for b, t in enumerate(lens):
        assert list(out[b, :t + 1]) == [0] + list(x[b, :t])


def _linear(n, f):
    p = n.params()
    return rc.value(n, "data:data", f) @ p["weight/param:0"] + p["bias/param:0"]


def test_register_call_post_hook():
    n = rc.net("utils-register-call-post-hook")
    f = rc.feed(n)
    rc.close(rc.value(n, "output", f), 2 * _linear(n, f), 1e-5, "the hook doubles the output")


def test_weight_norm():
    n = rc.net("utils-weight-norm")
    rc.check_vars(n, {"weight/param:0": [3, 5], "weight_g/param:0": [5], "bias/param:0": [5]})
    f = rc.feed(n)
    p = n.params()
    v, g = p["weight/param:0"], p["weight_g/param:0"]
    w = g * v / numpy.sqrt((v ** 2).sum(0))
    rc.close(rc.value(n, "output", f), rc.value(n, "data:data", f) @ w + p["bias/param:0"], 1e-5, "g v / |v|")


def _train_vs_eval(model):
    ev = rc.net(model)
    f = rc.feed(ev)
    rc.close(rc.value(ev, "output", f), _linear(ev, f), 1e-5, "evaluation: the plain weight")
    tr = rc.net(model, train_flag=True)
    f = rc.feed(tr)
    assert not numpy.allclose(rc.value(tr, "output", f), _linear(tr, f)), "training: the weight changes"


def test_variational_weight_noise():
    _train_vs_eval("utils-variational-weight-noise")


def test_weight_dropout():
    _train_vs_eval("utils-weight-dropout")


def test_random_frame_drop():
    # evaluation keeps every frame; training drops some (probability 0.1)
    n = rc.net("utils-random-frame-drop")
    f = rc.feed(n)
    x, out, lens = rc.data_out(n, f)
    assert list(rc.lengths(n, "output", f)) == list(lens)
    for b, t in enumerate(lens):
        rc.close(out[b, :t], x[b, :t], 0, "evaluation")
    n = rc.net("utils-random-frame-drop", train_flag=True)
    dropped = 0
    for seed in range(5):
        f = rc.feed(n, seed=seed)
        lens, out_lens = rc.lengths(n, "data:data", f), rc.lengths(n, "output", f)
        assert (out_lens <= lens).all()
        dropped += int((lens - out_lens).sum())
    assert dropped > 0, "no frame dropped in 5 batches"


if __name__ == "__main__":
    rc.main(globals())
