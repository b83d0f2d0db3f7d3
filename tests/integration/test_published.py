"""The published RETURNN setups (tests/data/published, from
rwth-i6/returnn-experiments) against retc's bundled models written after them,
parameter for parameter and value for value:

1. RETURNN builds the published config's network (TF, in a process of its
   own: published_reference.py), at its published size, in evaluation; its
   initial params (biases, norms and statistics moved by seeded noise) are
   saved as a RETURNN checkpoint, and its output's log-probabilities on one
   batch of three sequences of different lengths are kept.
2. `retc convert-checkpoint MODEL --from returnn-tf --map configs/maps/...`
   imports that checkpoint for each target: every retc param is matched
   once with its shape, and no published variable is left over (so the
   networks have the same params; the torch model loads the import strictly).
3. `retc forward MODEL` on each target with the import, on the same batch
   (an HDF file), gives the published network's log-probabilities within
   TOL on every sequence's frames.

The published network is built with the changes published_reference.py's
DEVIATIONS lists, each with its reason: RETURNN's current batch-norm
semantics in evaluation, and its convolutions and max pools reading no frame
past a sequence's end (retc's, on both targets). The batch's longest sequence
reads no such frame: it is compared with the unchanged network but for the
batch norm. The decoder of librispeech-att-2019 runs on the batch's labels
(teacher forcing), as retc's forward does.

Usage: test_published.py MODEL
"""
# The cases ctest runs (tests/CMakeLists.txt reads these lines):
# ctest-cases: published.librispeech-att-2019 librispeech-att-2019
# ctest-cases: published.swb-conformer-hybrid-2021 swb-conformer-hybrid-2021

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "..", "..")
DATA = os.path.join(HERE, "..", "data", "published")
TOL = 1e-4


class Setup:
    def __init__(self, config, map_file, softmax, params, features, vocab, lengths):
        self.config = os.path.join(DATA, config)
        self.map = os.path.join(SOURCE, "configs", "maps", map_file)
        self.softmax = softmax  # the published network's layer of retc's output
        self.params = params  # retc's params = the published network's variables
        self.features, self.vocab = features, vocab
        self.lengths = lengths  # (frames, labels) of each sequence


SETUPS = {
    # Frame-wise: as many labels as frames (the alignment).
    "swb-conformer-hybrid-2021": Setup(
        "2021-swb-conformer-hybrid.baseline_12l.config", "swb_conformer_hybrid_2021.map", "output",
        393, 40, 9001, [(61, 61), (46, 46), (38, 38)]),
    "librispeech-att-2019": Setup(
        "2019-librispeech-system.base2.conv2l.specaug.curric3.config", "librispeech_att_2019.map",
        "output/output_prob", 56, 40, 10025, [(83, 11), (64, 9), (49, 7)]),
}


def write_batch(setup, path):
    """The batch as an HDF file (RETURNN's HDFDataset): random features, labels 1..V-1."""
    from returnn.datasets.hdf import SimpleHDFWriter

    rng = numpy.random.RandomState(3)
    writer = SimpleHDFWriter(path, dim=setup.features, ndim=2,
                             extra_type={"classes": (setup.vocab, 1, "int32")})
    for i, (frames, labels) in enumerate(setup.lengths):
        x = rng.normal(size=(1, frames, setup.features)).astype("float32")
        y = rng.randint(1, setup.vocab, size=(1, labels)).astype("int32")
        writer.insert_batch(x, numpy.array([frames]), ["seq-%d" % i], extra={"classes": y})
    writer.close()


def run(what, argv):
    """A command's stdout; fails with its output unless it succeeds. Prints its time."""
    start = time.time()
    r = subprocess.run(argv, capture_output=True, text=True)
    assert r.returncode == 0, "%s failed (%d):\n%s%s" % (what, r.returncode, r.stdout, r.stderr)
    print("%s: %.1f s" % (what, time.time() - start))
    return r.stdout


def retc(*args):
    return run("retc " + " ".join(args[:4]), [os.environ["RETC"], *args])


def log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - numpy.log(numpy.exp(x).sum(-1, keepdims=True))


def main(model):
    from returnn.datasets.hdf import HDFDataset

    setup = SETUPS[model]
    # retc's output has the labels' frames (frame-wise: the alignment's, as many as the
    # features'; a decoder's: one per label).
    frames = {"seq-%d" % i: labels for i, (_, labels) in enumerate(setup.lengths)}
    tmp = tempfile.mkdtemp(prefix="retc-published-")
    try:
        batch = os.path.join(tmp, "batch.hdf")
        write_batch(setup, batch)
        run("RETURNN's build of the published network", [
            sys.executable, os.path.join(HERE, "published_reference.py"), setup.config, batch, tmp, setup.softmax])
        reference = numpy.load(os.path.join(tmp, "reference.npz"))
        published = os.path.join(tmp, "published")
        worst = {}
        for target in ("tf", "torch"):
            ckpt = os.path.join(tmp, target, "network" + (".pt" if target == "torch" else ""))
            os.makedirs(os.path.dirname(ckpt))
            out = retc("convert-checkpoint", model, "--from", "returnn-tf", "--map", setup.map, "--to", target,
                       published, ckpt)
            assert re.search(r"^retc: imported %d params of '%s'" % (setup.params, model), out, re.M), out
            assert "no rule took" not in out, "published variables left over: %s" % out
            hdf = os.path.join(tmp, "forward.%s.hdf" % target)
            retc("forward", model, "--backend", target, "--checkpoint", ckpt, "--data", batch, "-o", hdf)
            got = HDFDataset(files=[hdf])
            got.init_seq_order(epoch=1)
            i = 0
            while got.is_less_than_num_seqs(i):
                got.load_seqs(i, i + 1)
                tag, logits = got.get_tag(i), got.get_data(i, "data")
                assert logits.shape == (frames[tag], setup.vocab), (tag, logits.shape)
                want = reference[tag][:frames[tag]]
                # Log-probabilities that vary over the labels (a constant output proves nothing).
                assert want.std(-1).min() > 0.05, want.std(-1).min()
                diff = float(numpy.abs(log_softmax(logits) - want).max())
                assert diff <= TOL, "%s on %s: %s differs from the published network by %g" % (model, target, tag, diff)
                worst[(target, tag)] = diff
                i += 1
            assert len(worst) == len(frames) * (1 + (target == "torch")), worst
        for target in ("tf", "torch"):
            print("%s (%s): the published network's log-probabilities, max |diff| %s" % (
                model, target, ", ".join("%s (%d frames) %.2g" % (tag, n, worst[(target, tag)])
                                         for tag, n in frames.items())))
        print("PASS %s: %d params imported from RETURNN's build of the published config by %s; retc forward "
              "= the published network within %g on both targets" % (model, setup.params,
                                                                      os.path.basename(setup.map), TOL))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    main(sys.argv[1])
