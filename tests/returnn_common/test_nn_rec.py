"""Counterparts of returnn_common's tests/test_nn_rec.py."""

import numpy

import rc
from test_nn_loop import _lstm_params, check_lstm, lstm_vars


def test_simple_net_lstm():
    # input weights [in, 4 out], recurrent [out, 4 out] (returnn_common checks these shapes)
    check_lstm("rec-simple-net-lstm", "lstm/")


def test_simple_net_zoneout_lstm():
    n = rc.net("rec-simple-net-zoneout-lstm")
    rc.check_vars(n, lstm_vars("lstm/cell/", 13, 13))
    f = rc.feed(n)
    x, out, lens = rc.data_out(n, f)
    # evaluation: each state is the expectation, z * previous + (1 - z) * new (cell 0.15, output 0.05)
    w, w_re, bias = _lstm_params(n.params(), "lstm/cell/")
    sig = lambda v: 1 / (1 + numpy.exp(-v))  # noqa: E731
    for b, t in enumerate(lens):
        h = c = numpy.zeros(13)
        for s in range(t):
            j, i, fg, o = numpy.split(x[b, s] @ w + h @ w_re + bias, 4)
            c_new = sig(fg) * c + sig(i) * numpy.tanh(j)
            h_new = sig(o) * numpy.tanh(c_new)
            c = 0.15 * c + 0.85 * c_new
            h = 0.05 * h + 0.95 * h_new
            rc.close(out[b, s], h, 1e-4, "frame %d of sequence %d" % (s, b))


if __name__ == "__main__":
    rc.main(globals())
