"""Counterparts of returnn_common's tests/test_nn_cond.py. returnn_common's predicate
"the batch size is even" is here "the longest sequence is longer than 5 frames"
(models.cc): data-dependent; the feeds below take either branch."""

import numpy

import rc


def _branches(model, want_vars):
    """Runs the model on a batch whose longest sequence has 7 frames (then) and 4 (else)."""
    n = rc.net(model)
    rc.check_vars(n, want_vars)
    out = []
    for lens in ([7, 5, 6], [4, 3, 4]):
        f = rc.feed(n, seed=1, lens=lens)
        out.append((f, rc.value(n, "data:data", f), rc.value(n, "output", f), lens))
    return n, out


def _linear(p, prefix, x):
    return x @ p[prefix + "weight/param:0"] + p[prefix + "bias/param:0"]


def test_cond():
    n, runs = _branches("cond-cond", rc.lin("linear_true/", 13, 13) | rc.lin("linear_false/", 13, 13))
    p = n.params()
    for (f, x, out, lens), prefix in zip(runs, ("linear_true/", "linear_false/")):
        rc.close(out, _linear(p, prefix, x), 1e-5, prefix)


def test_cond_shared_params():
    n, runs = _branches("cond-shared-params", rc.lin("linear/", 13, 13))
    p = n.params()
    assert len(p) == 2 and sorted(p)[0] == "linear/bias/param:0"
    for (f, x, out, lens), scale in zip(runs, (1.0, 2.0)):
        rc.close(out, _linear(p, "linear/", scale * x), 1e-5, "x * %g" % scale)


def test_cond_twice_shared_params():
    n, runs = _branches("cond-twice-shared-params",
                        rc.lin("pre_linear/", 13, 13) | rc.lin("linear_true/", 13, 13) | rc.lin("linear_false/", 13, 13))
    p = n.params()
    for (f, x, out, lens), (first, second) in zip(runs, (("linear_true/", "linear_false/"),
                                                        ("linear_false/", "linear_true/"))):
        rc.close(out, _linear(p, second, _linear(p, first, _linear(p, "pre_linear/", x))), 1e-4, first + second)


def test_cond_random():
    n, runs = _branches("cond-random", {})
    (_, x1, out1, lens1), (_, x2, out2, lens2) = runs
    assert not numpy.allclose(out1[:, :5], x1[:, :5])  # noise added
    rc.close(out2, x2, 0, "x")


def test_cond_new_axis():
    n, runs = _branches("cond-new-axis", rc.lin("", 12, 12))
    p = n.params()
    (_, x1, out1, lens1), (_, x2, out2, lens2) = runs
    for b, t in enumerate(lens1):
        rc.close(out1[b], _linear(p, "", _linear(p, "", x1[b, :t])).max(0), 1e-4, "then: max over the new dim")
    for b, t in enumerate(lens2):
        rc.close(out2[b], x2[b, :t].max(0), 1e-6, "else: max over time")


def test_cond_dim():
    # then: each frame twice, along a dim of twice the lengths; else: uniform numbers over it
    n, runs = _branches("cond-dim", {})
    (f1, x1, out1, lens1), (f2, x2, out2, lens2) = runs
    assert list(rc.lengths(n, "output", f1)) == [2 * t for t in lens1]
    assert list(rc.lengths(n, "output", f2)) == [2 * t for t in lens2]
    for b, t in enumerate(lens1):
        rc.close(out1[b, :2 * t], numpy.repeat(x1[b, :t], 2, axis=0), 0, "then, sequence %d" % b)
    for b, t in enumerate(lens2):
        assert ((out2[b, :2 * t] >= 0) & (out2[b, :2 * t] < 1)).all(), "else: uniform in [0, 1)"


def test_cond_multiple_outputs():
    n, runs = _branches("cond-multiple-outputs", {})
    (_, x1, out1, _), (_, x2, out2, _) = runs
    y1, y2 = lambda x: 0.5 * x, lambda x: 0.7 * x - 0.2  # noqa: E731
    rc.close(out1, y1(x1) - y2(x1), 1e-5, "then")
    rc.close(out2, y2(x2) - y1(x2), 1e-5, "else")


def test_cond_chunking_conformer():
    # the encoder under a condition on the train flag, then a time-synchronous beam search
    n = rc.net("cond-chunking-conformer", search=True)
    assert len(rc.variables(n)) == 9
    f = rc.feed(n)
    hyps = rc.value(n, "hyps", f)
    assert n.config.int("beam_size", 0) == 3
    assert hyps.shape[:2] == (3, rc.value(n, "data:data", f).shape[1]), hyps.shape  # one label per frame
    assert ((hyps >= 0) & (hyps < 6)).all()
    n = rc.net("cond-chunking-conformer", train_flag=True)
    assert numpy.isfinite(rc.value(n, "enc", rc.feed(n))).all()


if __name__ == "__main__":
    rc.main(globals())
