"""The published RETURNN setups (tests/data/published, from
rwth-i6/returnn-experiments) against retc's bundled models written after them:
each published config's network is built in RETURNN (TF), as is retc's
compiled model (TF target, and the model of its torch target), and their
trainable variables are compared: the sorted list of shapes and the total
count of parameters.

Usage: test_published.py MODEL

The three networks are built in one process, RETURNN's behavior version
reset before each (the published files have none, retc's configs set one).
"""
# The cases ctest runs (tests/CMakeLists.txt reads these lines):
# ctest-cases: published.librispeech-att-2019 librispeech-att-2019
# ctest-cases: published.swb-conformer-hybrid-2021 swb-conformer-hybrid-2021

import collections
import math
import os
import subprocess
import sys
import tempfile

# torch before TensorFlow (both register LLVM's options; cases.py): the torch
# target's model is built after the TF networks.
import torch  # noqa: F401

from published_network import load_published

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "published")

PUBLISHED = {
    "librispeech-att-2019": "2019-librispeech-system.base2.conv2l.specaug.curric3.config",
    "swb-conformer-hybrid-2021": "2021-swb-conformer-hybrid.baseline_12l.config",
}

# Where RETURNN's own TF layers store a param in another layout than the
# dims retc gives it (same values, same count), as (published shape, retc's
# shape, why). Every other shape must be equal.
LAYOUTS = {
    "swb-conformer-hybrid-2021": [
        ((1, 1, 512), (512,),
         "batch_norm's gamma and beta: the published file's RETURNN default, param_version 0, "
         "keeps them broadcastable to [B, T, F]; param_version 2 (RETURNN's current layout, "
         "retc's) keeps [F]"),
        ((3, 1, 512, 512), (3, 512, 512),
         "transposed_conv's own 1-D filter: TF has only conv2d_transpose, so RETURNN creates "
         "it with a spatial dim of 1; retc's filter is [kernel, out, in] and the layer adds "
         "that dim"),
    ],
}


def tf_shapes(config_path):
    """The trainable variables' shapes of the config's network (TF)."""
    import tensorflow as tf
    from returnn.tf.network import TFNetwork

    config, network = load_published(config_path)
    with tf.Graph().as_default():
        net = TFNetwork(config=config, train_flag=True, eval_flag=True)
        net.construct_from_dict(network)
        return [v.shape.as_list() for v in net.get_trainable_params()]


def torch_shapes(config_path):
    """The trainable params' shapes of the torch config's model."""
    from returnn.log import log
    from returnn.config import Config, set_global_config
    from returnn.util.basic import BehaviorVersion
    import returnn.frontend as rf

    log.initialize(verbosity=[0])
    config = Config()
    config.load_file(config_path)
    set_global_config(config)
    BehaviorVersion.set(config.int("behavior_version", 0) or None)
    rf.select_backend_torch()
    model = config.typed_value("get_model")(epoch=1, step=0)
    return [[d.dimension for d in p.dims] for _, p in model.named_parameters()
            if p.trainable is not False]  # None: rf's default, trainable


def shapes_of(shapes, config_path):
    """shapes(config_path), sorted, with RETURNN's behavior version unset before."""
    from returnn.util.basic import BehaviorVersion

    BehaviorVersion._reset()
    return sorted(tuple(s) for s in shapes(config_path))


def total(shapes):
    return sum(math.prod(s) for s in shapes)


def main(model):
    tmp = tempfile.mkdtemp(prefix="retc-published-")
    configs = {}
    for backend in ("tf", "torch"):
        configs[backend] = os.path.join(tmp, "%s.%s.config" % (model, backend))
        subprocess.run([os.environ["RETC"], "compile", model, "--backend", backend, "-o",
                        configs[backend]], check=True)
    published = shapes_of(tf_shapes, os.path.join(DATA, PUBLISHED[model]))
    retc_tf = shapes_of(tf_shapes, configs["tf"])
    retc_torch = shapes_of(torch_shapes, configs["torch"])

    want, have = collections.Counter(published), collections.Counter(retc_tf)
    only_published, only_retc = want - have, have - want
    for pub, ours, why in LAYOUTS.get(model, []):
        n = only_published.pop(pub, 0)
        if n == 0 or only_retc.get(ours, 0) < n:
            raise AssertionError("%s: the layout difference %s -> %s (%s) is gone or changed; "
                                 "update LAYOUTS" % (model, pub, ours, why))
        only_retc[ours] -= n
        only_retc += collections.Counter()  # drops the zero counts
        print("accepted: %d x published %s = retc %s: %s" % (n, pub, ours, why))
    if only_published or only_retc:
        raise AssertionError("%s: trainable shapes differ: only in the published network %s, "
                             "only in retc's %s" % (model, dict(only_published), dict(only_retc)))
    if len(published) != len(retc_tf) or total(published) != total(retc_tf):
        raise AssertionError("%s: %d variables / %d params published, %d / %d retc" % (
            model, len(published), total(published), len(retc_tf), total(retc_tf)))
    if retc_torch != retc_tf:
        a, b = collections.Counter(retc_torch), collections.Counter(retc_tf)
        raise AssertionError("%s: the torch target's params differ from the tf target's: only "
                             "torch %s, only tf %s" % (model, dict(a - b), dict(b - a)))
    print("PASS %s: %d trainable variables, %d parameters, as published (torch target: the same "
          "shapes)" % (model, len(retc_tf), total(retc_tf)))


if __name__ == "__main__":
    main(sys.argv[1])
