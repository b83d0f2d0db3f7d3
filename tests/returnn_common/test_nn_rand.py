"""Counterparts of returnn_common's tests/test_nn_rand.py."""

import numpy

import rc


def _noise(model, k=1):
    """The output minus the input: k draws of N(0, 1) summed or differenced, new at each run."""
    n = rc.net(model, train_flag=True)
    f = rc.feed(n)
    x = rc.value(n, "data:data", f)
    d1, d2 = rc.value(n, "output", f) - x, rc.value(n, "output", f) - x
    assert not numpy.allclose(d1, d2), "the same numbers twice"
    assert 0.5 * k < d1.var() < 2.0 * k, d1.var()
    return n, d1


def test_random_normal():
    _noise("rand-random-normal")


def test_random_multi_call():
    # two draws: x + r1 - r2 (variance 2), not x
    _noise("rand-multi-call", k=2)


def test_random_in_loop():
    # a draw per frame: the frames differ
    n = rc.net("rand-in-loop")
    f = rc.feed(n)
    out, lens = rc.value(n, "output", f), rc.lengths(n, "data:data", f)
    assert not (out[:, :1] == out[:, :int(min(lens))]).all()
    assert not numpy.allclose(out[0, 0], out[0, 1])


def test_random_normal_shape_get_network():
    # data [B, in] without a time axis: RETURNN's engine sets up training
    n = rc.net("rand-no-time", train_flag=True)
    f = rc.feed(n)
    assert rc.value(n, "output", f).shape == (3, 3)
    rc.engine_train("rand-no-time", with_data=False)


def test_random_normal_shape_get_network_with_time():
    # the engine set up for training on a DummyDataset; one sequence forwarded
    _, result = rc.engine_train("rand-with-time", forward=True, train=False)
    assert result.shape[-1] == 3 and numpy.isfinite(result).all(), result.shape


def test_random_normal_train_epoch():
    epoch, _ = rc.engine_train("rand-train-epoch")
    assert epoch == 1


if __name__ == "__main__":
    rc.main(globals())
