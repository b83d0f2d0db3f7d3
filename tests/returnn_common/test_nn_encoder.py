"""Counterparts of returnn_common's tests/test_nn_encoder.py."""

import numpy

import rc


def test_nn_blstm_cnn_specaug():
    # BlstmCnnSpecAugEncoder(input 10, out 14, 2 layers): SpecAugment, two 3x3 convs of 32
    # channels each followed by max pooling of the features by 2 (10 -> 5 -> 3), then two
    # BLSTM layers of 14 per direction
    n = rc.net("encoder-blstm-cnn-specaug")
    want = {"conv0/weight/param:0": [3, 3, 1, 32], "conv0/bias/param:0": [32],
            "conv1/weight/param:0": [3, 3, 32, 32], "conv1/bias/param:0": [32]}
    for i, in_dim in ((0, 3 * 32), (1, 2 * 14)):
        for d in ("fw", "bw"):
            p = "layers/%d/%s/" % (i, d)
            want |= {p + "ff_weight/param:0": [in_dim, 4 * 14], p + "rec_weight/param:0": [14, 4 * 14],
                     p + "bias/param:0": [4 * 14]}
    rc.check_vars(n, want)
    out = rc.value(n, "output", rc.feed(n))
    assert out.shape[-1] == 28 and numpy.isfinite(out).all()


if __name__ == "__main__":
    rc.main(globals())
