"""Counterparts of returnn_common's tests/test_nn_array.py."""

import numpy

import rc


def test_concat():
    n = rc.net("array-concat", train_flag=True)
    f = rc.feed(n)
    x, out = rc.value(n, "data:data", f), rc.value(n, "output", f)
    rc.close(out, numpy.concatenate([x, 2 * x], -1), 1e-6, "concat")
    assert rc.variables(n) == {}
    assert numpy.isfinite(rc.total_loss(n, f))


def test_concat_features():
    n = rc.net("array-concat-features", train_flag=True)
    f = rc.feed(n)
    x, out = rc.value(n, "data:data", f), rc.value(n, "output", f)
    rc.close(out, numpy.concatenate([x, 2 * numpy.tanh(x)], -1), 1e-6, "concat_features")


def ceildiv(a, b):
    return -(-a // b)


def naive_window(source, window, stride=1, padding="same"):
    """returnn_common's naive_window: source (time, ...) -> (time', window, ...)."""
    if padding == "same":
        n_time = source.shape[0]
        w_right = window // 2
        w_left = window - w_right - 1
    else:
        n_time = source.shape[0] - window + 1
        w_right = w_left = 0
    pad_left = numpy.zeros((w_left,) + source.shape[1:], dtype=source.dtype)
    pad_right = numpy.zeros((w_right,) + source.shape[1:], dtype=source.dtype)
    padded = numpy.concatenate([pad_left, source, pad_right], axis=0)
    final = numpy.zeros((ceildiv(n_time, stride), window) + source.shape[1:], dtype=source.dtype)
    for t in range(final.shape[0]):
        for w in range(final.shape[1]):
            final[t, w] = padded[t * stride + w]
    return final


def _check_windows(model, cases):
    n = rc.net(model)
    f = rc.feed(n, seed=3)
    x = rc.value(n, "data:data", f)
    lens = rc.lengths(n, "data:data", f)
    for name, win, stride, padding in cases:
        out = rc.value(n, name, f)  # [B, time', window, in]
        out_lens = rc.lengths(n, name, f)
        for b, t in enumerate(lens):
            want = naive_window(numpy.where(numpy.arange(x.shape[1])[:, None] < t, x[b], 0)[:t], win, stride,
                                padding)
            assert out_lens[b] == want.shape[0], (name, out_lens[b], want.shape)
            rc.close(out[b, :want.shape[0]], want, 1e-6, "%s sequence %d" % (name, b))


def test_window():
    _check_windows("array-window", [("window3", 3, 1, "same"), ("window2", 2, 1, "same")])


def test_window_stride():
    _check_windows("array-window-stride", [("same_5_3", 5, 3, "same"), ("valid_5_3", 5, 3, "valid"),
                                           ("valid_2_2", 2, 2, "valid")])


def test_window_via_get_network():
    n = rc.net("array-window-train")
    rc.check_vars(n, {"weight/param:0": [3, 4], "bias/param:0": [4]})
    epoch, _ = rc.engine_train("array-window-train", epochs=2)
    assert epoch == 2


def test_inverse_window():
    # returnn_common's cases (window, stride, padding): each frame back from the windows
    # that hold it; with "valid" padding the last frames no window holds are left out
    n = rc.net("array-inverse-window")
    f = rc.feed(n, seed=5)
    x, lens = rc.value(n, "data:data", f), rc.lengths(n, "data:data", f)
    for win, stride, padding in ((2, 2, "valid"), (3, 2, "valid"), (3, 1, "valid"), (5, 2, "same"),
                                 (2, 2, "same"), (2, 1, "same"), (5, 3, "same")):
        name = "inv_%d_%d_%s" % (win, stride, padding)
        out = rc.value(n, name, f)
        assert list(rc.lengths(n, name, f)) == list(lens), name
        for b, t in enumerate(lens):
            if padding == "valid":
                t = ceildiv(t - win + 1, stride) * stride  # the frames some window holds
            rc.close(out[b, :t], x[b, :t], 1e-5, "%s, sequence %d" % (name, b))


if __name__ == "__main__":
    rc.main(globals())
