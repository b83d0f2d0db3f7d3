"""Reads values back from RETURNN for the integration tests.

A retc config is loaded exactly as RETURNN's training loads it: the network
is built from the emitted dict (TFNetwork.construct_from_dict), params are
initialized, and steps run through RETURNN's own Updater (so weight decay,
per-param optimizer options and clipping act as they do in training).
"""

import json
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy  # noqa: E402

sys.path.insert(0, os.path.join(os.environ["RETC_SOURCE_DIR"], "runtime"))
from retc_runtime import _fast_graph_mode_equality, _is_random_state, _random_feed, tf_session_config  # noqa: E402  (as `retc` runs TF)

import tensorflow as tf  # noqa: E402

tf.get_logger().setLevel("ERROR")

from returnn.log import log  # noqa: E402
from returnn.config import Config, set_global_config  # noqa: E402
from returnn.util.basic import BehaviorVersion  # noqa: E402
import returnn.tf.compat as tf_compat  # noqa: E402
from returnn.tf.network import TFNetwork  # noqa: E402
from returnn.tf.updater import Updater  # noqa: E402

log.initialize(verbosity=[0])
tf_compat.v1.disable_eager_execution()
_fast_graph_mode_equality()
BehaviorVersion.set(38)

TMP = tempfile.mkdtemp(prefix="retc-probe-")


def compile_model(model, binary=None, extra=()):
    """`retc compile MODEL`; returns the config path."""
    binary = binary or os.environ["RETC_TEST_MODELS"]
    path = os.path.join(TMP, model + ".config")
    subprocess.run([binary, "compile", model, "-o", path, "--model-dir", os.path.join(TMP, model), *extra],
                   check=True)
    return path


def constructed(model, binary=None):
    """{variable name: shape} of the model's TF network as RETURNN constructs
    it in this process (what `retc check` lists, without its process: 4 s
    of imports; check_12ax.sh tests the command), its random layers'
    generator states left out; fails unless the training loss on random
    data is finite."""
    net = Net(compile_model(model, binary))
    with net.graph.as_default():
        got = {v.name: [int(d) for d in v.shape.as_list()] for v in net.net.get_params_list()
               if not _is_random_state(v)}
        loss = net.run(net.net.get_total_loss, net.feed(1))
    net.close()
    reset_batch_dim()
    assert numpy.isfinite(loss), (model, loss)
    return got


def sweep_models():
    """The sweep's models (tests/sweep_models.cc, as `retc_test_models list` names
    them); with $RETC_SWEEP_OPS (op names, comma-separated: a developer's
    narrowing, never set in CI) only those ops' models."""
    ops = [op for op in os.environ.get("RETC_SWEEP_OPS", "").split(",") if op]
    models = [line.split()[0] for line in subprocess.run(
        [os.environ["RETC_TEST_MODELS"], "list"], check=True, capture_output=True, text=True).stdout.splitlines()
        if line.startswith("sweep:")]
    if ops:
        models = [m for m in models if m.split(":")[1] in ops]
        assert models, "no sweep model of the ops %s" % ops
    else:
        assert len(models) >= 100, len(models)
    return models


def reset_batch_dim():
    """Before a TF network in a process that ran a torch step: the eager step
    gave RETURNN's global batch dim torch sizes, which TF must not see."""
    from returnn.tensor import batch_dim

    batch_dim.reset_eager()
    batch_dim.dyn_size_ext = None


class Net:
    """A constructed network in its own TF graph and session."""

    def __init__(self, config_path, train_flag=True, with_updater=False, learning_rate=None, rnd_seed=None,
                 search=False):
        self.config = Config()
        self.config.load_file(config_path)
        if learning_rate is not None:
            self.config.set("learning_rate", learning_rate)
        set_global_config(self.config)
        self.graph = tf.Graph()
        with self.graph.as_default():
            tf_compat.v1.set_random_seed(self.config.int("random_seed", 42))
            self.net = TFNetwork(config=self.config, train_flag=train_flag, eval_flag=not search,
                                 search_flag=search, rnd_seed=rnd_seed)
            self.net.construct_from_dict(self.config.typed_value("network"))
            self.updater = None
            if with_updater:
                self.updater = Updater(config=self.config, network=self.net,
                                       initial_learning_rate=self.config.float("learning_rate", 1.0))
                self.updater.set_trainable_vars(self.net.get_trainable_params())
                self.optim_op = self.updater.get_optim_op()
            self.session = tf_compat.v1.Session(graph=self.graph, config=tf_session_config())
            self.net.initialize_params(self.session)
            if self.updater:
                self.updater.init_optimizer_vars(self.session)
                self.updater.set_learning_rate(self.config.float("learning_rate", 1.0), session=self.session)

    def feed(self, seed=1, **batch):
        """Random extern data as `retc check` makes it (`batch`: its sizes, batch and max_time)."""
        with self.graph.as_default():
            return _random_feed(self.net, numpy.random.RandomState(seed), **batch)

    def params(self):
        """{variable name: value} of every param."""
        with self.graph.as_default():
            vs = self.net.get_params_list()
            return dict(zip([v.name for v in vs], self.session.run(vs)))

    def variable(self, name):
        return self.params()[name]

    def layer(self, name, feed=None):
        """A layer's output value: batch, then spatial axes, then the feature axis."""
        with self.graph.as_default():
            out = self.net.get_layer(name).output
            if out.have_batch_axis():
                out = out.copy_as_batch_spatial_major()
            return self.session.run(out.placeholder, feed_dict=feed or {})

    def run(self, fetches, feed):
        """`fetches`: tensors, or a function making them (called in this net's graph)."""
        with self.graph.as_default():
            if callable(fetches):
                fetches = fetches()
            if isinstance(fetches, (int, float)):  # e.g. RETURNN's "no constraints": 0
                return fetches
            return self.session.run(fetches, feed_dict=feed)

    def step(self, feed):
        """One training step through RETURNN's Updater."""
        with self.graph.as_default():
            self.session.run(self.optim_op, feed_dict=feed)

    def close(self):
        self.session.close()


def close(a, b, tol, what):
    if not numpy.allclose(a, b, rtol=tol, atol=tol):
        raise AssertionError("%s: %r != %r (tol %g)" % (what, a, b, tol))
