"""retc's side of the embedded interpreter: RETURNN check and train.

Compiled into the retc binary (cmake/embed_text.cmake) and executed as the
module `retc_runtime`. The C++ side calls `check` and `train`; Python
exceptions propagate and become absl::Status there.
"""

import os
import sys

# tensorflow-cpu never runs CUDA; but RETURNN enables CUDA for its native ops
# whenever it finds nvcc on PATH, and the native LSTM then fails to compile.
os.environ["DISABLE_CUDA"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


_interrupted = False


def _on_sigint(signum, frame):
    """Ctrl-C: remember it (RETURNN turns the KeyboardInterrupt into
    sys.exit(1) after saving nothing of the unfinished epoch), then raise."""
    global _interrupted
    _interrupted = True
    raise KeyboardInterrupt


def run_logged(func_name, error_log, *args):
    """Calls `func_name(*args)`; on an exception, appends the full traceback
    to `error_log` and re-raises (as KeyboardInterrupt after Ctrl-C)."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)
    try:
        return globals()[func_name](*args)
    except BaseException as exc:
        import traceback

        with open(error_log, "a") as f:
            f.write(traceback.format_exc())
        if _interrupted and not isinstance(exc, KeyboardInterrupt):
            raise KeyboardInterrupt from exc
        raise
    finally:
        _flush()


def _flush():
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass


def _random_values(datas, rng, batch=3, max_time=7):
    """Random values for extern data (a list of (key, Tensor template), the
    main input first) and the lengths of their dynamic dims: the first dynamic
    dim (the input's time) is long, later ones (target sequences of CTC or a
    decoder) short, so that subsampled inputs can still align with them.
    Returns ({key: array}, {dim: lengths})."""
    values, sizes = {}, {}
    for key, data in datas:
        shape = []
        for tag in data.dim_tags:
            if tag.is_batch_dim():
                shape.append(batch)
            elif tag.dimension is not None:
                shape.append(tag.dimension)
            else:
                if tag not in sizes:
                    top = max_time if not sizes else 2
                    lens = rng.randint(min(top, max_time - 2), top + 1, size=(batch,)).astype("int32")
                    lens[0] = top
                    sizes[tag] = lens
                shape.append(int(sizes[tag].max()))
        if data.sparse_dim is not None:
            values[key] = rng.randint(0, data.sparse_dim.dimension, size=shape).astype(data.dtype)
        else:
            values[key] = rng.normal(size=shape).astype(data.dtype)
    return values, sizes


def _random_feed(net, rng):
    """A TF feed dict: random values for every extern data placeholder and its sequence lengths."""
    keys = sorted(net.extern_data.data, key=lambda k: (k != net.extern_data.default_input, k))
    datas = [(k, net.extern_data.data[k]) for k in keys]
    values, sizes = _random_values(datas, rng)
    feed = {data.placeholder: values[key] for key, data in datas}
    for tag, lens in sizes.items():
        if tag.dyn_size_ext is not None and tag.dyn_size_ext.placeholder is not None:
            feed[tag.dyn_size_ext.placeholder] = lens
    return feed


def check(config_path):
    """Constructs the network of a config in RETURNN and runs one step on
    random data. Returns (variables, outputs): lists of (name, shape)."""
    import numpy
    from returnn.log import log
    from returnn.config import Config, set_global_config
    from returnn.util.basic import BehaviorVersion
    import returnn.tf.compat as tf_compat
    from returnn.tf.network import TFNetwork
    import tensorflow as tf

    log.initialize(verbosity=[2])
    config = Config()
    config.load_file(config_path)
    set_global_config(config)
    BehaviorVersion.set(config.int("behavior_version", 0) or None)
    tf_compat.v1.disable_eager_execution()
    with tf.Graph().as_default():
        tf_compat.v1.set_random_seed(config.int("random_seed", 42))
        net = TFNetwork(config=config, train_flag=True, eval_flag=True)
        net.construct_from_dict(config.typed_value("network"))
        variables = [(v.name, [int(d) for d in v.shape.as_list()]) for v in net.get_params_list()]
        fetches = {}
        for name, layer in sorted(net.layers.items()):
            if layer.is_output_layer() or name == "output":
                fetches[name] = layer.output.placeholder
        # A model without losses (forward only) has a total loss of plain 0.
        losses = net.get_total_loss()
        if not isinstance(losses, tf.Tensor):
            losses = tf.constant(float(losses))
        with tf_compat.v1.Session() as session:
            net.initialize_params(session)
            feed = _random_feed(net, numpy.random.RandomState(1))
            values, loss_value = session.run((fetches, losses), feed_dict=feed)
        outputs = [(name, list(value.shape)) for name, value in sorted(values.items())]
        if not numpy.isfinite(loss_value):
            raise ValueError("total loss on random data is not finite: %r" % loss_value)
    _flush()
    return variables, outputs


def train(config_path):
    """Runs RETURNN's training task on a config in this process.
    Returns (last_epoch, [(key, value)] of that epoch's scores)."""
    import returnn.__main__ as rnn

    try:
        rnn.init(config_filename=config_path, extra_greeting="retc train, in process.")
        rnn.execute_main_task()
        lrc = rnn.engine.learning_rate_control
        if not lrc.epoch_data:
            raise RuntimeError("RETURNN recorded no epoch")
        last = max(lrc.epoch_data)
        scores = sorted((k, float(v)) for k, v in (lrc.epoch_data[last].error or {}).items())
        rnn.finalize()
        return last, scores
    finally:
        _flush()


def check_torch(config_path):
    """The torch target's check: builds the model with the config's
    get_model (its params and initial values), runs train_step on random
    data, the backward pass included. Returns (variables, losses): lists of
    (name, shape); the variables are the state_dict's."""
    import numpy
    import torch
    from returnn.log import log
    from returnn.config import Config, set_global_config
    from returnn.util.basic import BehaviorVersion
    import returnn.frontend as rf
    from returnn.tensor import TensorDict
    from returnn.torch.data import extern_data as extern_data_util

    log.initialize(verbosity=[2])
    config = Config()
    config.load_file(config_path)
    set_global_config(config)
    BehaviorVersion.set(config.int("behavior_version", 0) or None)
    rf.select_backend_torch()
    rf.set_random_seed(config.int("random_seed", 42))
    model = config.typed_value("get_model")(epoch=1, step=0)
    template = TensorDict()
    template.update(config.typed_value("extern_data"), auto_convert=True)
    keys = sorted(template.data, key=lambda k: (k != "data", k))
    datas = [(k, template.data[k]) for k in keys]
    values, sizes = _random_values(datas, numpy.random.RandomState(1))
    raw = {key: torch.tensor(value) for key, value in values.items()}
    for key, data in datas:
        for tag in data.dims:
            if tag in sizes:
                raw[key + ":seq_len"] = torch.tensor(sizes[tag])
    extern_data = extern_data_util.raw_dict_to_extern_data(
        raw, extern_data_template=template, device="cpu", with_eval_targets=True)
    rf.init_train_step_run_ctx(train_flag=True, step=0, epoch=1)
    config.typed_value("train_step")(model=model, extern_data=extern_data)
    ctx = rf.get_run_ctx()
    losses = [(name, list(loss.loss.raw_tensor.shape)) for name, loss in sorted(ctx.losses.items())]
    total = ctx.total_loss() if ctx.losses else None  # a forward-only model has none
    if isinstance(total, rf.Tensor):
        value = total.raw_tensor
        if not torch.isfinite(value):
            raise ValueError("total loss on random data is not finite: %r" % float(value))
        value.backward()
    variables = [(name, [int(d) for d in p.raw_tensor.shape]) for name, p in model.named_parameters()]
    _flush()
    return variables, losses
