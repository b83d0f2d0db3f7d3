"""What the returnn_common counterparts share: each test compiles a model of
tests/returnn_common/models.cc ("rc-<file>-<test>") and checks it in RETURNN
(TF): its variables and their shapes, values where the returnn_common test
checks values, and training steps or a RETURNN engine run where it trains.

A test file runs as `python test_nn_FILE.py`: every test_* function, in order;
it prints one line per test and fails if any fails.
"""

import os
import sys
import traceback

import numpy

from returnn_probe import TMP, Net, close, compile_model  # noqa: F401  (re-exported)


def config_path(name, search=False, beam=3):
    """`retc compile` of the model (the search task's config with `search`)."""
    if not search:
        return compile_model("rc-" + name)
    return compile_model("rc-" + name, extra=("--task", "search", "--beam", str(beam)))


def net(name, train_flag=False, search=False, **kw):
    """The compiled model's network, constructed in RETURNN (with the search flag: beam 3)."""
    return Net(config_path(name, search=search), train_flag=train_flag, search=search, **kw)


def variables(n):
    """{variable name: shape} of every param (RETURNN's random-state variables left out)."""
    with n.graph.as_default():
        return {v.name: [int(d) for d in v.shape.as_list()] for v in n.net.get_params_list()
                if "random_generator/StateVar" not in v.name}


def lin(prefix, i, o):
    """A Linear's variables (in i, out o) under `prefix`."""
    return {prefix + "weight/param:0": [i, o], prefix + "bias/param:0": [o]}


def check_vars(n, expected):
    got = variables(n)
    assert got == expected, "variables: got %r, want %r" % (got, expected)
    return got


def feed(n, seed=1, lens=None):
    """Random extern data (as `retc check` makes it), or with the sequence lengths `lens`."""
    f = n.feed(seed)
    if lens is None:
        return f
    rng = numpy.random.RandomState(seed)
    with n.graph.as_default():
        for key, data in n.net.extern_data.data.items():
            shape = [len(lens) if t.is_batch_dim() else (t.dimension or max(lens)) for t in data.dim_tags]
            f[data.placeholder] = rng.normal(size=shape).astype(data.dtype)
            for t in data.dim_tags:
                if t.dimension is None and not t.is_batch_dim():
                    f[t.dyn_size_ext.placeholder] = numpy.array(lens, dtype="int32")
    return f


def value(n, name, f):
    """A layer's value (batch major) in the feed `f`."""
    return n.layer(name, f)


def lengths(n, name, f, k=0):
    """The lengths of the layer's k-th dynamic axis."""
    with n.graph.as_default():
        out = n.net.get_layer(name).output
        tags = [t for t in out.dim_tags if t.dimension is None and not t.is_batch_dim()]
        return n.run(tags[k].get_dyn_size_ext_for_batch_ctx(out.batch, out.control_flow_ctx).placeholder, f)


def data_out(n, f, name="output"):
    """The input data, the layer's value and the input's lengths."""
    return value(n, "data:data", f), value(n, name, f), lengths(n, "data:data", f)


def total_loss(n, f):
    return n.run(lambda: n.net.get_total_loss(), f)


def layer_dict(n, name):
    """The layer's dict as retc emitted it."""
    return n.config.typed_value("network")[name]


def train_steps(name, steps=3, seed=1):
    """Training steps through RETURNN's updater: the loss finite, the params changed."""
    n = Net(config_path(name), train_flag=True, with_updater=True)
    f = n.feed(seed)
    before = n.params()
    with n.graph.as_default():
        loss = n.net.get_total_loss()
    for _ in range(steps):
        value_ = n.run(loss, f)
        assert numpy.isfinite(value_), value_
        n.step(f)
    after = n.params()
    changed = [k for k in before if not numpy.array_equal(before[k], after[k])]
    trainable = [k for k in before if "random_generator/StateVar" not in k]
    assert not trainable or changed, "no param changed in training"
    n.close()
    return value_


def engine_train(name, epochs=1, input_dim=3, forward=False, with_data=True, train=True):
    """RETURNN's TF engine trains the compiled config for `epochs` on a DummyDataset (as the
    returnn_common test builds its config and dataset), and forwards one sequence; without
    data, the engine only sets up training (network, updater); without `train`, it sets up
    training on the data and does not train."""
    from returnn.config import Config, set_global_config
    from returnn.datasets import init_dataset
    from returnn.tf.engine import Engine

    config = Config()
    config.load_file(config_path(name))
    config.set("task", "train")
    config.set("num_epochs", epochs)
    config.set("log_verbosity", 0)
    config.set("model", os.path.join(TMP, name, "epoch"))
    set_global_config(config)
    train_data = init_dataset({"class": "DummyDataset", "input_dim": input_dim, "output_dim": 5, "num_seqs": 3})
    engine = Engine(config)
    if not with_data:
        engine.init_train_from_config(config)
        assert engine.network.get_total_loss() is not None and engine.updater is not None
        engine.finalize()
        return None, None
    engine.init_train_from_config(config, train_data=train_data)
    if train:
        engine.train()
    result = None
    if forward:
        train_data.init_seq_order(epoch=1)
        train_data.load_seqs(0, 1)
        result = engine.forward_single(dataset=train_data, seq_idx=0)
    epoch = engine.epoch
    engine.finalize()
    return epoch, result


def main(namespace):
    tests = [(k, v) for k, v in namespace.items() if k.startswith("test_") and callable(v)]
    failed = []
    for name, fn in tests:
        try:
            fn()
            print("ok   %s" % name, flush=True)
        except Exception:
            traceback.print_exc()
            print("FAIL %s" % name, flush=True)
            failed.append(name)
    print("%d of %d returnn_common counterparts passed" % (len(tests) - len(failed), len(tests)))
    sys.exit(1 if failed else 0)
