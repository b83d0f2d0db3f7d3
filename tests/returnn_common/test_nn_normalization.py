"""Counterparts of returnn_common's tests/test_nn_normalization.py."""

import numpy

import rc


def test_batch_norm():
    n = rc.net("normalization-batch-norm")
    rc.check_vars(n, {"bn/%s/param:0" % k: [13] for k in ("scale", "bias", "running_mean", "running_var")})
    f = rc.feed(n)
    # evaluation: the running statistics (mean 0, variance 1), scale 1, bias 0
    rc.close(rc.value(n, "output", f), rc.value(n, "data:data", f) / numpy.sqrt(1 + 1e-5), 1e-5, "eval")
    n = rc.net("normalization-batch-norm", train_flag=True)
    f = rc.feed(n)
    x, out, lens = rc.data_out(n, f)
    frames = numpy.concatenate([x[b, :t] for b, t in enumerate(lens)])
    want = (frames - frames.mean(0)) / numpy.sqrt(frames.var(0) + 1e-5)
    got = numpy.concatenate([out[b, :t] for b, t in enumerate(lens)])
    rc.close(got, want, 1e-4, "train: the batch statistics over the frames")


if __name__ == "__main__":
    rc.main(globals())
