"""Counterparts of returnn_common's tests/test_nn_masked_computation.py. retc writes a masked
computation as a masked state update in the loop (nn::where): the LSTM's state moves on in
the frames where the mask holds and stays otherwise."""

import numpy

import rc
from test_nn_loop import _lstm_params, lstm_ref, lstm_vars


def test_masked_computation_lstm():
    n = rc.net("masked-computation-lstm")
    rc.check_vars(n, lstm_vars("lstm/", 13, 13))
    f = rc.feed(n, seed=5)
    x, out, mask = rc.value(n, "data:data", f), rc.value(n, "output", f), rc.value(n, "mask", f)
    lens = rc.lengths(n, "data:data", f)
    params = _lstm_params(n.params(), "lstm/")
    assert 0 < mask[0, :lens[0]].sum() < lens[0], mask  # some frames masked, some not
    for b, t in enumerate(lens):
        h = c = numpy.zeros(13)
        for s in range(t):
            keep = x[b, s].mean() >= 0.0
            assert mask[b, s] == keep
            if keep:
                _, (h, c) = lstm_ref(x[b, s:s + 1], *params, h, c)
            rc.close(out[b, s], h, 1e-4, "frame %d of sequence %d" % (s, b))


if __name__ == "__main__":
    rc.main(globals())
