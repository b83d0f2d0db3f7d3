"""Counterparts of returnn_common's tests/test_nn_loop.py."""

import subprocess
import os

import numpy

import rc


def sigmoid(v):
    return 1 / (1 + numpy.exp(-v))


def lstm_ref(x, w, w_re, b, h=None, c=None):
    """RETURNN's NativeLstm2 over x [T, in] (gates j, i, f, o); returns [T, out], (h, c)."""
    n_out = w_re.shape[0]
    h = numpy.zeros(n_out) if h is None else h
    c = numpy.zeros(n_out) if c is None else c
    ys = []
    for t in range(x.shape[0]):
        z = x[t] @ w + h @ w_re + b
        j, i, f, o = numpy.split(z, 4)
        c = sigmoid(f) * c + sigmoid(i) * numpy.tanh(j)
        h = sigmoid(o) * numpy.tanh(c)
        ys.append(h)
    return numpy.array(ys), (h, c)


def _lstm_params(p, prefix):
    return [p[prefix + k + "/param:0"] for k in ("ff_weight", "rec_weight", "bias")]


def lstm_vars(prefix, i, o):
    return {prefix + "ff_weight/param:0": [i, 4 * o], prefix + "rec_weight/param:0": [o, 4 * o],
            prefix + "bias/param:0": [4 * o]}


def test_rec_ff():
    n = rc.net("loop-rec-ff")
    rc.check_vars(n, {"rec_linear/weight/param:0": [26, 13], "rec_linear/bias/param:0": [13]})
    assert sorted(rc.variables(n))[0] == "rec_linear/bias/param:0"
    f = rc.feed(n)
    x, out, lens = rc.data_out(n, f)
    p = n.params()
    for b, t in enumerate(lens):
        h = numpy.zeros(13)
        for s in range(t):
            h = numpy.concatenate([x[b, s], h]) @ p["rec_linear/weight/param:0"] + p["rec_linear/bias/param:0"]
            rc.close(out[b, s], h, 1e-4, "frame %d" % s)


def test_lstm_default_name():
    # returnn_common names an LSTM "lstm" by default; retc's Lstm names itself "lstm" (its type)
    # where it has no name of the user's, as in a build error about the LSTM at list index 0
    r = subprocess.run([os.environ["RETC_TEST_MODELS"], "check", "rc-loop-lstm-default-name-wrong-input"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "lstm 'list.0'" in r.stderr, r.stderr
    n = rc.net("loop-lstm-default-name")
    rc.check_vars(n, lstm_vars("list/0/", 2, 3))


def check_lstm(model, prefix):
    """The model's output equals NativeLstm2's (numpy) over each sequence."""
    n = rc.net(model)
    rc.check_vars(n, lstm_vars(prefix, 13, 13))
    f = rc.feed(n)
    x, out, lens = rc.data_out(n, f)
    params = _lstm_params(n.params(), prefix)
    for b, t in enumerate(lens):
        rc.close(out[b, :t], lstm_ref(x[b, :t], *params)[0], 1e-4, "sequence %d" % b)


def test_rec_inner_lstm():
    # the LSTM step by step in a loop: the same 3 params and numbers as the fused LSTM
    check_lstm("loop-rec-inner-lstm", "lstm/")


def test_rec_simple_iter():
    # i = 1, 2, ... until i >= 5 (at most 10 frames): y_i = i * mean_t(x)
    n = rc.net("loop-rec-simple-iter")
    f = rc.feed(n)
    x, out, lens = rc.data_out(n, f)
    assert list(rc.lengths(n, "output", f)) == [5, 5, 5]
    for b, t in enumerate(lens):
        rc.close(out[b, :5], numpy.arange(1, 6)[:, None] * x[b, :t].mean(0), 1e-5, "sequence %d" % b)


def test_rec_hidden():
    # the outputs, and the final h and c over every frame, concatenated
    n = rc.net("loop-rec-hidden")
    rc.check_vars(n, lstm_vars("lstm/", 13, 13))
    f = rc.feed(n)
    x, out, lens = rc.data_out(n, f)
    params = _lstm_params(n.params(), "lstm/")
    for b, t in enumerate(lens):
        ys, (h, c) = lstm_ref(x[b, :t], *params)
        want = numpy.concatenate([ys, numpy.tile(h, (t, 1)), numpy.tile(c, (t, 1))], -1)
        rc.close(out[b, :t], want, 1e-4, "sequence %d" % b)


def test_rec_hidden_initial():
    # one LSTM three times, each run from the state the previous one ended in
    n = rc.net("loop-rec-hidden-initial")
    rc.check_vars(n, {"linear/weight/param:0": [13, 13], "linear/bias/param:0": [13]} | lstm_vars("lstm/", 13, 13))
    f = rc.feed(n)
    x, out, lens = rc.data_out(n, f)
    p = n.params()
    params = _lstm_params(p, "lstm/")
    for b, t in enumerate(lens):
        y, h, c = x[b, :t] @ p["linear/weight/param:0"] + p["linear/bias/param:0"], None, None
        for _ in range(3):
            y, (h, c) = lstm_ref(y, *params, h, c)
        rc.close(out[b, :t], y, 1e-4, "sequence %d" % b)


def test_loop_axis_indices():
    n = rc.net("loop-axis-indices")
    f = rc.feed(n)
    sums, indices, lens = rc.value(n, "sums", f), rc.value(n, "indices", f), rc.lengths(n, "data:data", f)
    assert sums.dtype == numpy.int32
    for b, t in enumerate(lens):
        assert list(indices[:t]) == list(range(t))  # the positions: [time]
        assert (sums[b, :t] == numpy.cumsum(numpy.arange(t))[:, None]).all()


def test_ctc_search():
    # a time-synchronous beam search (beam 3) over the encoder's frames
    n = rc.net("loop-ctc-search", search=True)
    rc.check_vars(n, {"encoder/weight/param:0": [5, 10], "encoder/bias/param:0": [10],
                      "projection/weight/param:0": [10, 3], "projection/bias/param:0": [3]})
    f = rc.feed(n)
    hyps, x = rc.value(n, "hyps", f), rc.value(n, "data:data", f)
    assert hyps.shape[:2] == (3, x.shape[1]) and ((hyps >= 0) & (hyps < 3)).all(), hyps
    # the search picks each frame's best label here (no state): the greedy argmax
    p = n.params()
    logits = (x @ p["encoder/weight/param:0"] + p["encoder/bias/param:0"]) @ p["projection/weight/param:0"] + \
        p["projection/bias/param:0"]
    lens = rc.lengths(n, "data:data", f)
    for b, t in enumerate(lens):
        assert list(hyps[b, :t]) == list(logits[b, :t].argmax(-1)), (hyps[b], logits[b].argmax(-1))


if __name__ == "__main__":
    rc.main(globals())
