"""Counterparts of returnn_common's tests/test_nn_generated_layers.py."""

import numpy

import rc


def test_merge_dims():
    n = rc.net("generated-merge-dims")
    f = rc.feed(n)
    x, out = rc.value(n, "data:data", f), rc.value(n, "output", f)  # x [B, T, feat 3, extra 10]
    rc.close(out, numpy.swapaxes(x, 2, 3).reshape(x.shape[0], x.shape[1], 30), 0, "extra x feat -> out")


def _check_repeat(n, f, reps, name="output"):
    x, out = rc.value(n, "data:data", f), rc.value(n, name, f)
    lens, out_lens = rc.lengths(n, "data:data", f), rc.lengths(n, name, f)
    assert list(out_lens) == [t * reps for t in lens], (lens, out_lens)
    for b, t in enumerate(lens):
        rc.close(out[b, :t * reps], numpy.repeat(x[b, :t], reps, axis=0), 0, "repeat, sequence %d" % b)


def test_repeat_int():
    n = rc.net("generated-repeat-int")
    _check_repeat(n, rc.feed(n), 5)


def test_repeat_layer():
    # the repetitions a tensor [B, time] (all 5)
    n = rc.net("generated-repeat-layer")
    _check_repeat(n, rc.feed(n), 5)


def test_repeat_without_out_dim():
    n = rc.net("generated-repeat-train-2")
    f = rc.feed(n)
    p = n.params()
    y = rc.value(n, "data:data", f) @ p["weight/param:0"] + p["bias/param:0"]
    out, lens = rc.value(n, "output", f), rc.lengths(n, "data:data", f)
    for b, t in enumerate(lens):
        rc.close(out[b, :2 * t], numpy.repeat(y[b, :t], 2, axis=0), 1e-5, "the linear's output twice")
    epoch, _ = rc.engine_train("generated-repeat-train-2")
    assert epoch == 1


def test_repeat_without_out_dim_same_as_input():
    n = rc.net("generated-repeat-train-1")
    with n.graph.as_default():
        out = n.net.get_default_output_layer().output
        assert [t.dimension for t in out.dim_tags] == [None, None, 5]
    epoch, _ = rc.engine_train("generated-repeat-train-1")
    assert epoch == 1


def test_repeat_as_loss():
    n = rc.net("generated-repeat-as-loss", train_flag=True)
    f = rc.feed(n)
    _check_repeat(n, f, 1)
    x, lens = rc.value(n, "data:data", f), rc.lengths(n, "data:data", f)
    want = sum(x[b, :t].sum() for b, t in enumerate(lens))
    rc.close(rc.total_loss(n, f), want, 1e-3, "the repeated input summed as the loss")


if __name__ == "__main__":
    rc.main(globals())
