"""Counterparts of returnn_common's tests/test_nn_loss.py."""

import numpy

import rc


def _ce_ref(n, f):
    """Per frame: -log softmax(x W + b)[target]."""
    p = n.params()
    logits = rc.value(n, "data:data", f) @ p["weight/param:0"] + p["bias/param:0"]
    logp = logits - numpy.log(numpy.exp(logits).sum(-1, keepdims=True))
    y = rc.value(n, "data:classes", f)
    return numpy.take_along_axis(logp, y[..., None].astype(int), -1)[..., 0] * -1


def test_cross_entropy():
    # the cross-entropy as a value (the output): RETURNN's sparse_softmax_cross_entropy_with_logits
    path = rc.config_path("loss-cross-entropy")
    assert "sparse_softmax_cross_entropy_with_logits" in open(path).read()
    n = rc.net("loss-cross-entropy")
    rc.check_vars(n, {"weight/param:0": [3, 5], "bias/param:0": [5]})
    f = rc.feed(n)
    out, lens = rc.value(n, "output", f), rc.lengths(n, "data:data", f)
    want = _ce_ref(n, f)
    for b, t in enumerate(lens):
        rc.close(out[b, :t], want[b, :t], 1e-4, "cross-entropy, sequence %d" % b)


def test_mark_as_loss():
    loss = rc.train_steps("loss-mark-as-loss", steps=3)
    assert loss > 0


def test_mark_as_loss_in_subnet():
    # min(2 ce, 10) summed as the loss
    n = rc.net("loss-mark-as-loss-in-subnet", train_flag=True)
    f = rc.feed(n)
    lens = rc.lengths(n, "data:data", f)
    ce = _ce_ref(n, f)
    want = sum(numpy.minimum(2 * ce[b, :t], 10.0).sum() for b, t in enumerate(lens))
    rc.close(rc.total_loss(n, f), want, 1e-3, "the loss")
    rc.train_steps("loss-mark-as-loss-in-subnet", steps=2)


if __name__ == "__main__":
    rc.main(globals())
