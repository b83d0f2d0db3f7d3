"""retc benchmarks (issue: compile speed and emitted-graph quality).

Run by tools/bench.sh, which builds retc first. Everything is measured in
this one run, side by side, and printed as a table that is also written to
benchmarks/RESULTS.md with the machine and versions:

1. retc compile time (build + passes + emit) of the Conformer CTC encoder
   (512 dims) at 1, 6, 12, 24 and 48 blocks and of a ~50,000-node stress
   model: the median of repeated compiles in one process, per block and per
   node, and the peak RSS of that process (os.wait4).
2. The same-size Conformer built with RETURNN's own frontend
   (returnn.frontend ConformerEncoder with ConformerConvSubsample, on the
   TF net-dict backend), timed until the net dict exists: the ratio. Made
   alike where both have options: dropout masks shared over batch and time,
   no attention dropout; rf's relative-positional attention (Transformer-XL
   style, with its own position projection) differs from retc's (Shaw et
   al.), hence the different param counts.
3. RETURNN network construction time, TensorFlow op count and the median
   training step time (CPU, fixed random batch, warm-up then timed steps)
   for retc's config against rf's net dict of the same model, the networks
   in one process taking turns step by step (at 2 x 200 and 8 x 500).
4. The weight-normed Conformer's step time against the plain one's.
5. The torch target: the 12-block Conformer's median training step on
   RETURNN's PyTorch engine, retc's lowering against rf's own
   ConformerEncoder on the torch backend (same batch; the models of a
   batch size in one process, taking turns step by step); the same retc model
   on TF against torch; the weight-norm overhead on torch and TF at the
   small batch and at 8 x 500 frames; model creation time; a profile of
   where a torch step's time goes; the same model written by hand in plain
   PyTorch (eager, and torch.compile'd at 8 x 500), taking turns with them,
   its loss checked equal to retc's: what bounds the torch step.
6. A roofline: this machine's float32 matmul rate (torch and TF), the
   step's FLOPs from `retc stats`, and each step's achieved FLOP/s as a
   fraction of that rate, both targets, both batch sizes, with a profile of
   each target's step at 8 x 500.
7. Decoding: `retc search --beam 12` of a trained transformer-copy and
   conformer-ctc (trained on torch, converted to TF) on both targets:
   sequences per second of the decoding loop.
"""

import argparse
import atexit
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RUNTIME_DIR = os.path.join(ROOT, "runtime")  # retc_runtime.py
# Every retc command measured here starts in its own process (search's figures include the start).
os.environ.pop("RETC_SERVER", None)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# --- 1. retc compile -----------------------------------------------------------------------------

def run_compile(binary, args):
    """Runs retc_bench_compile in a child; returns (its JSON, peak RSS in MiB)."""
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen([binary] + args, stdout=out)
        _, status, rusage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError("%s %s failed" % (binary, " ".join(args)))
        out.seek(0)
        result = json.loads(out.read().decode())
    return result, rusage.ru_maxrss / 1024.0  # Linux: KiB


# --- 2./3. RETURNN side (run in worker subprocesses: one TF graph each) ----------------------------

FEATURES, LABELS, MODEL, FF, HEADS, KERNEL = 80, 1000, 512, 2048, 8, 31


def rf_config(num_layers):
    """A RETURNN Config whose get_model/train_step build the rf Conformer CTC."""
    from returnn.config import Config
    from returnn.tensor import Dim, batch_dim
    import returnn.frontend as rf
    from returnn.frontend.encoder.conformer import ConformerEncoder, ConformerConvSubsample

    time_dim = Dim(None, name="time")
    label_time = Dim(None, name="label_time")
    feat = Dim(FEATURES, name="features")
    labels = Dim(LABELS, name="labels")

    class Model(rf.Module):
        def __init__(self):
            super().__init__()
            front = ConformerConvSubsample(
                feat, out_dims=[Dim(32, name="channels1"), Dim(64, name="channels2")],
                filter_sizes=[(3, 3), (3, 3)], pool_sizes=[(1, 2)], strides=[(1, 1), (4, 1)])
            # att_dropout 0: retc's Conformer has no attention-weight dropout.
            # rf's dropout masks are shared over batch and time by default;
            # the retc config compared with it does the same.
            self.encoder = ConformerEncoder(
                feat, Dim(MODEL, name="model"), ff_dim=Dim(FF, name="ff"), num_layers=num_layers,
                input_layer=front, num_heads=HEADS, conv_kernel_size=KERNEL, att_dropout=0.0)
            self.out = rf.Linear(self.encoder.out_dim, Dim(LABELS + 1, name="labels_blank"))

    def get_model(*, epoch, step, **_):
        return Model()

    def train_step(*, model, extern_data, **_):
        data = extern_data["data"]
        targets = extern_data["classes"]
        enc, enc_time = model.encoder(data, in_spatial_dim=time_dim)
        logits = model.out(enc)
        loss = rf.ctc_loss(logits=logits, targets=targets, input_spatial_dim=enc_time,
                           targets_spatial_dim=label_time, blank_index=LABELS)
        loss.mark_as_loss("ctc")

    config = Config()
    config.update({
        "task": "train",
        "behavior_version": 21,
        "extern_data": {"data": {"dim_tags": [batch_dim, time_dim, feat]},
                        "classes": {"dim_tags": [batch_dim, label_time], "sparse_dim": labels}},
        "get_model": get_model,
        "train_step": train_step,
        "optimizer": {"class": "adam"},
        "learning_rate": 0.0005,
    })
    return config


def rf_net_dict(num_layers, repeat):
    """Times rf's get_net_dict; returns (median ms, net dict, config)."""
    from returnn.config import set_global_config
    from returnn.tf.frontend_layers.config_entry_points import get_net_dict
    import tensorflow as tf

    config = rf_config(num_layers)
    set_global_config(config)
    times = []
    net_dict = None
    for _ in range(repeat):
        with tf.Graph().as_default():
            t0 = time.perf_counter()
            net_dict, _model = get_net_dict(epoch=1, step=0)
            times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), net_dict, config


def random_feed(net, rng, batch, max_time, max_labels):
    feed = {}
    for key, data in net.extern_data.data.items():
        shape = []
        for tag in data.dim_tags:
            if tag.is_batch_dim():
                shape.append(batch)
            elif tag.dimension is not None:
                shape.append(tag.dimension)
            else:
                top = max_time if key == "data" else max_labels
                lens = rng.randint(top * 3 // 4, top + 1, size=(batch,)).astype("int32")
                lens[0] = top
                feed[tag.dyn_size_ext.placeholder] = lens
                shape.append(top)
        if data.sparse_dim is not None:
            feed[data.placeholder] = rng.randint(0, data.sparse_dim.dimension, size=shape).astype(data.dtype)
        else:
            feed[data.placeholder] = rng.normal(size=shape).astype(data.dtype)
    return feed


def tf_trainer(kind, config_path, num_layers):
    """The network (retc config or rf net dict) constructed in a graph of its own,
    with RETURNN's Updater (Adam) and its session: (result dict so far, step(feed),
    loss(feed), feed(batch, max_time, max_labels), profile(feed)). Each network is
    built under its own behavior version (rf's config has 21, retc's 38); nothing
    reads it while a session runs, so networks of both can take turns in one
    process."""
    import numpy
    import tensorflow as tf
    import returnn.tf.compat as tf_compat
    from returnn.log import log as rlog
    from returnn.config import Config, set_global_config
    from returnn.util.basic import BehaviorVersion
    from returnn.tf.network import TFNetwork
    from returnn.tf.updater import Updater

    rlog.initialize(verbosity=[0])
    tf_compat.v1.disable_eager_execution()
    # rf's net dict nests a subnetwork per `cond` (each dropout on the train
    # flag); RETURNN's template construction of 12 blocks recurses deeper
    # than Python's default limit of 1000.
    sys.setrecursionlimit(50000)
    result = {"kind": kind}
    BehaviorVersion._behavior_version = None
    if kind == "rf":
        ms, net_dict, config = rf_net_dict(num_layers, 1)
    else:
        config = Config()
        config.load_file(config_path)
        set_global_config(config)
        BehaviorVersion.set(config.int("behavior_version", 0) or None)
        net_dict = config.typed_value("network")
    with tf.Graph().as_default() as graph:
        tf_compat.v1.set_random_seed(42)
        t0 = time.perf_counter()
        net = TFNetwork(config=config, train_flag=True, eval_flag=True)
        net.construct_from_dict(net_dict)
        result["construct_ms"] = (time.perf_counter() - t0) * 1000
        result["forward_ops"] = len(graph.get_operations())
        t1 = time.perf_counter()
        updater = Updater(config=config, network=net, initial_learning_rate=0.0005)
        updater.set_trainable_vars(net.get_trainable_params())
        optim_op = updater.get_optim_op()
        result["updater_ms"] = (time.perf_counter() - t1) * 1000
        result["total_ops"] = len(graph.get_operations())
        result["params"] = int(sum(numpy.prod(v.shape.as_list()) for v in net.get_params_list()))
        fetches = [optim_op] + list(net.get_post_control_dependencies())
        loss = net.get_total_loss()
        session = tf_compat.v1.Session(graph=graph)
        net.initialize_params(session)
        updater.init_optimizer_vars(session)
        updater.set_learning_rate(0.0005, session=session)

    def feed(batch, max_time, max_labels):
        return random_feed(net, numpy.random.RandomState(1), batch, max_time, max_labels)

    return (result, lambda f: session.run(fetches, feed_dict=f), lambda f: float(session.run(loss, feed_dict=f)),
            feed, lambda f: tf_step_profile(session, fetches, f))


def take_turns(steps, warmup, timed):
    """Runs the step functions `steps` (each called with the step's index) in turn,
    `warmup` untimed rounds, then `timed` timed ones: the machine's drift (this
    one's step times moved by up to 10% from process to process) falls on all
    alike. Returns each one's step times in ms and what its last step returned."""
    times, last = [[] for _ in steps], [None] * len(steps)
    for i in range(warmup + timed):
        for k, step in enumerate(steps):
            t = time.perf_counter()
            last[k] = step(i)
            if i >= warmup:
                times[k].append((time.perf_counter() - t) * 1000)
    return times, last


def worker_steps(kind, config_path, num_layers, steps, warmup, batch, max_time, max_labels, profile=False):
    """tf_trainer's network trained on one fixed random batch for `warmup`, then
    `steps` timed steps; prints JSON (with the op types taking the most time in a
    traced step if asked)."""
    result, step, loss, make_feed, step_profile = tf_trainer(kind, config_path, num_layers)
    feed = make_feed(batch, max_time, max_labels)
    (times,), _ = take_turns([lambda i: step(feed)], warmup, steps)
    result["loss_after"] = loss(feed)
    if profile:
        result["profile"] = step_profile(feed)
    result["step_ms_median"] = statistics.median(times)
    result["step_ms_min"] = min(times)
    print(json.dumps(result))


def worker_tf_turns(specs, num_layers, sizes):
    """The networks of `specs` ("rf" or a retc config, joined by "+") in one
    process; at each size of `sizes` ("BATCHxFRAMESxSTEPSxWARMUP", joined by "+")
    each trains on its fixed random batch, the networks taking turns step by step
    (take_turns). The first network's step at the last size is profiled. Prints a
    JSON list per size, one result per network."""
    trainers = [tf_trainer("rf" if spec == "rf" else "retc", spec, num_layers) for spec in specs.split("+")]
    out = []
    for size in sizes.split("+"):
        batch, frames, steps, warmup = (int(v) for v in size.split("x"))
        feeds = [make_feed(batch, frames, max(4, frames // 10)) for _, _, _, make_feed, _ in trainers]
        times, _ = take_turns([lambda i, step=step, feed=feed: step(feed)
                               for (_, step, _, _, _), feed in zip(trainers, feeds)], warmup, steps)
        rows = []
        for (result, _, loss, _, _), feed, ts in zip(trainers, feeds, times):
            rows.append(dict(result, loss_after=loss(feed), step_ms_median=statistics.median(ts),
                             step_ms_min=min(ts), batch=batch, frames=frames))
        out.append(rows)
    out[-1][0]["profile"] = trainers[0][4](feeds[0])
    print(json.dumps(out))


def tf_step_profile(session, fetches, feed):
    """[(op type, fraction)]: the top op types of one traced TF step by the
    time their ops ran (summed over ops; parallel ops overlap)."""
    import tensorflow as tf

    options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
    meta = tf.compat.v1.RunMetadata()
    session.run(fetches, feed_dict=feed, options=options, run_metadata=meta)
    by_type = {}
    for dev in meta.step_stats.dev_stats:
        for node in dev.node_stats:
            # timeline_label: "name = OpType(inputs)"
            label = node.timeline_label
            op = label.split(" = ", 1)[1].split("(", 1)[0] if " = " in label else node.node_name.split(":")[0]
            by_type[op] = by_type.get(op, 0) + node.all_end_rel_micros
    total = sum(by_type.values()) or 1
    return [(k, v / total) for k, v in sorted(by_type.items(), key=lambda kv: -kv[1])[:8]]


def worker_matmul(framework, size=4096, seconds=3.0):
    """This machine's float32 matmul rate (GFLOP/s) in `framework` (torch or
    tf), with its default threads: square size x size products, repeated for
    `seconds` after one warm-up; prints JSON."""
    if framework == "torch":
        import torch

        a, b = torch.randn(size, size), torch.randn(size, size)

        def run():
            torch.mm(a, b)
        threads = torch.get_num_threads()
    else:
        import tensorflow as tf

        a, b = tf.random.normal((size, size)), tf.random.normal((size, size))
        mm = tf.function(tf.matmul)

        def run():
            mm(a, b).numpy()
        threads = os.cpu_count()
    run()
    count, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        run()
        count += 1
    elapsed = time.perf_counter() - t0
    print(json.dumps({"framework": framework, "size": size, "threads": threads,
                      "gflops": 2.0 * size ** 3 * count / elapsed / 1e9}))


def stats_flops(retc, batch, frames, sets):
    """`retc stats conformer-12x512` at batch x frames: (forward FLOPs,
    forward+backward FLOPs, params) of a training step."""
    cmd = [retc, "stats", "conformer-12x512", "--json", "--batch", str(batch), "--frames", str(frames)]
    for s in sets:
        cmd += ["--set", s]
    total = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)["modules"][0]
    return total["forward_flops"], total["forward_flops"] + total["backward_flops"], total["params"]


def decode(retc, model, backend, checkpoint, beam):
    """`retc search MODEL` on the dev set: (sequences, seconds decoding, label
    error), as the command reports them (the decoding alone, not the set-up)."""
    out = subprocess.run([retc, "search", model, "--backend", backend, "--checkpoint", checkpoint,
                          "--beam", str(beam)], check=True, capture_output=True, text=True).stdout
    decoded = [line for line in out.splitlines() if line.startswith("retc: decoded ")][-1].split()
    return int(float(decoded[2])), float(decoded[5]), float(out.splitlines()[-1].split()[-1])


def run_worker(args, env=None):
    """A worker subprocess (--worker ARGS), with `env` added to the environment; its JSON."""
    out = subprocess.run([sys.executable, __file__, "--worker"] + [str(a) for a in args],
                         capture_output=True, text=True, env=dict(os.environ, **(env or {})))
    if out.returncode != 0:
        sys.stderr.write(out.stderr[-5000:])
        raise RuntimeError("benchmark worker %s failed (exit %d)" % (args[:2], out.returncode))
    return json.loads(out.stdout.strip().splitlines()[-1])


def count_layers(net_dict):
    """Layers in a net dict, counting those inside subnetworks (rf nests them)."""
    n = 0
    for layer in net_dict.values():
        if isinstance(layer, dict) and "class" in layer:
            n += 1
            if isinstance(layer.get("subnetwork"), dict):
                n += count_layers(layer["subnetwork"])
    return n


def worker_rf_dict(num_layers, repeat):
    import returnn.tf.compat as tf_compat
    from returnn.log import log as rlog
    rlog.initialize(verbosity=[0])
    tf_compat.v1.disable_eager_execution()
    ms, net_dict, _ = rf_net_dict(num_layers, repeat)
    print(json.dumps({"rf_net_dict_ms_median": ms, "layers": count_layers(net_dict)}))


# --- 5. torch target (run in worker subprocesses) ---------------------------------------------------

def torch_batch(template, batch, max_time, max_labels, seed=1, full=False):
    """A raw batch for RETURNN's torch engine: random values, sequences of
    3/4 to all of the longest one's length (as random_feed for TF); full: all
    of it (no padding)."""
    import numpy
    import torch

    rng = numpy.random.RandomState(seed)
    raw = {}
    for key, data in template.data.items():
        top = max_time if key == "data" else max_labels
        lens = rng.randint(top * 3 // 4, top + 1, size=(batch,)).astype("int32")
        lens[0] = top
        if full:
            lens[:] = top
        shape = [batch if d.is_batch_dim() else (d.dimension or top) for d in data.dims]
        if data.sparse_dim is not None:
            raw[key] = torch.tensor(rng.randint(0, data.sparse_dim.dimension, size=shape).astype("int32"))
        else:
            raw[key] = torch.tensor(rng.normal(size=shape).astype("float32"))
        if any(d.dimension is None and not d.is_batch_dim() for d in data.dims):
            raw[key + ":seq_len"] = torch.tensor(lens)
    return raw


def torch_config(config_path=None, config=None):
    """A RETURNN config set up for its torch engine as RETURNN sets it up (the
    global config, its behavior version, rf's torch backend, seed 42): the
    config at `config_path`, or `config`."""
    from returnn.log import log as rlog
    from returnn.config import Config, set_global_config
    from returnn.util.basic import BehaviorVersion
    import returnn.frontend as rf

    rlog.initialize(verbosity=[0])
    if config is None:
        config = Config()
        config.load_file(config_path)
    set_global_config(config)
    BehaviorVersion._behavior_version = None  # another model's, in a process where models take turns
    BehaviorVersion.set(config.int("behavior_version", 0) or None)
    rf.select_backend_torch()
    rf.set_random_seed(42)
    return config


def torch_trainer(kind, config_path, num_layers, batch, max_time, max_labels, device="cpu"):
    """The model (retc's torch config, or rf's ConformerEncoder on the torch
    backend) made with get_model, with RETURNN's torch Updater (Adam) and one
    fixed random batch on `device` ("cpu", "cuda"): (result dict so far,
    step(i) -> loss). A step runs under its model's config and behavior version
    (rf reads both while it runs), so that models of rf and retc can take turns
    in one process."""
    import torch
    import returnn.frontend as rf
    from returnn.config import set_global_config
    from returnn.util.basic import BehaviorVersion
    from returnn.tensor import TensorDict
    from returnn.torch.data import extern_data as extern_data_util
    from returnn.torch.frontend.bridge import rf_module_to_pt_module
    from returnn.torch.updater import Updater

    # As retc's torch runner runs a config: freed memory kept for the next step
    # (retc_runtime._keep_freed_memory, once per process), for every model of the process alike.
    if RUNTIME_DIR not in sys.path:
        sys.path.insert(0, RUNTIME_DIR)
    import retc_runtime

    retc_runtime._keep_freed_memory()
    config = torch_config(config=rf_config(num_layers)) if kind.startswith("rf") else torch_config(config_path)
    if kind == "rf_fused":  # rf with the optimizer retc emits on torch
        config.set("optimizer", {"class": "adam", "fused": True})
    result = {"kind": kind}
    t0 = time.perf_counter()
    model = config.typed_value("get_model")(epoch=1, step=0)
    result["create_ms"] = (time.perf_counter() - t0) * 1000
    pt_model = rf_module_to_pt_module(model)
    pt_model.to(device)
    result["params"] = int(sum(p.numel() for p in pt_model.parameters()))
    result["device"] = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    result["mkl_cpu"] = mkl_cpu_loaded()
    updater = Updater(config=config, network=pt_model, device=device, initial_learning_rate=0.0005)
    updater.create_optimizer()
    updater.set_learning_rate(0.0005)
    template = TensorDict()
    template.update(config.typed_value("extern_data"), auto_convert=True)
    raw = torch_batch(template, batch, max_time, max_labels)
    train_step = config.typed_value("train_step")
    version = BehaviorVersion.get_if_set()

    def step(i):
        set_global_config(config)
        BehaviorVersion._behavior_version = version
        updater.set_current_train_step(global_train_step=i, epoch=1)
        updater.zero_grad()
        extern_data = extern_data_util.raw_dict_to_extern_data(
            raw, extern_data_template=template, device=device, with_eval_targets=True)
        rf.init_train_step_run_ctx(train_flag=True, step=i, epoch=1)
        train_step(model=model, extern_data=extern_data)
        loss = rf.get_run_ctx().total_loss().raw_tensor
        loss.backward()
        updater.step()
        return float(loss)

    return result, step


def plain_conformer(named, num_layers):
    """The benchmark's retc Conformer (configs' conformer-ctc at 12 x 512, dropout
    masks shared over batch and time) written by hand in plain PyTorch, without
    rf: a torch.nn.Module whose params are copies of `named` (retc's torch
    model's, by retc's names), computing what retc's config computes op for op
    (TF's "same" padding, masks past a sequence's end, Shaw et al.'s relative
    positions, batch norm over the frames within the sequences); forward(data,
    data_len, classes, classes_len, train) -> summed CTC loss (as RETURNN's
    torch engine sums retc's). The reference for what PyTorch itself costs for
    the same step, eager and torch.compile'd."""
    import torch
    F = torch.nn.functional
    model_dim, heads, clip = 512, 8, 16

    class PlainConformer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.p = torch.nn.ParameterDict()
            for name, value in named.items():
                if name.endswith(("running_mean", "running_var")):
                    self.register_buffer(name.replace(".", "/"), value.detach().clone())
                else:
                    self.p[name.replace(".", "/")] = torch.nn.Parameter(value.detach().clone())

        def param(self, name):
            key = name.replace(".", "/")
            return self.p[key] if key in self.p else getattr(self, key)

        def forward(self, data, data_len, classes, classes_len, train):
            P = self.param

            def drop(x):  # rf.dropout(x, 0.1, axis=[feature]): one mask over the last axis
                return x * ((torch.rand(x.shape[-1]) >= 0.1).to(x.dtype) / 0.9) if train else x

            def norm(x, name):
                return F.layer_norm(x, (model_dim,), P(name + ".scale"), P(name + ".bias"), 1e-6)

            def linear(x, name):
                return x @ P(name + ".weight") + P(name + ".bias")

            def feed_forward(x, prefix):
                h = drop(F.silu(linear(norm(x, prefix + "_norm"), prefix + ".linear_ff")))
                return x + 0.5 * drop(linear(h, prefix + ".linear_out"))

            batch, time = data.shape[:2]
            within = torch.arange(time)[None, :] < data_len[:, None]  # [B, T]
            x = data.masked_fill(~within[:, :, None], 0.0)[:, None]  # [B, 1, T, F]
            x = F.silu(F.conv2d(F.pad(x, (1, 1, 1, 1)), P("encoder.frontend.conv1.weight").permute(3, 2, 0, 1),
                                P("encoder.frontend.conv1.bias")))
            x = x.unflatten(3, (x.shape[3] // 2, 2)).max(dim=4).values  # max pool over features
            x = x.masked_fill(~within[:, None, :, None], 0.0)
            total = max(2 - (time - 1) % 4, 0)  # TF's "same" over time with stride 4
            x = F.conv2d(F.pad(x, (1, 1, total // 2, total - total // 2)),
                         P("encoder.frontend.conv2.weight").permute(3, 2, 0, 1), P("encoder.frontend.conv2.bias"),
                         stride=(4, 1))
            x = F.silu(x).permute(0, 2, 3, 1).flatten(2)  # [B, T4, features x channels]
            time = x.shape[1]
            lens = (data_len + 3) // 4
            within = torch.arange(time)[None, :] < lens[:, None]  # [B, T4]
            x = drop(linear(x, "encoder.frontend.linear"))
            offsets = (torch.arange(time)[None, :] - torch.arange(time)[:, None]).clamp(-clip, clip) + clip
            frames = within[:, None, :].to(x.dtype)
            for i in range(num_layers):
                b = "encoder.layers.%d." % i
                x = feed_forward(x, b + "ff1")
                qkv = (norm(x, b + "att_norm") @ P(b + "self_att.qkv")).view(batch, time, heads, 3, -1)
                q, k, v = (t.transpose(1, 2) for t in qkv.unbind(3))  # [B, H, T, D/H], per head [q | k | v]
                q = q * (q.shape[-1] ** -0.5)
                energy = q @ k.transpose(2, 3) + torch.einsum("bhqd,qkd->bhqk", q, P(b + "self_att.rel_pos")[offsets])
                energy = energy.masked_fill(~within[:, None, None, :], float("-inf"))
                y = (energy.softmax(-1) @ v).transpose(1, 2).flatten(2)
                x = x + drop(linear(y, b + "self_att.proj"))
                h = linear(norm(x, b + "conv_norm"), b + "conv.pointwise_conv1")
                h = h[..., :model_dim] * torch.sigmoid(h[..., model_dim:])
                h = h.masked_fill(~within[:, :, None], 0.0).transpose(1, 2)  # [B, D, T4]
                h = F.conv1d(F.pad(h, (15, 15)), P(b + "conv.depthwise_conv.weight").permute(2, 1, 0),
                             P(b + "conv.depthwise_conv.bias"), groups=model_dim)
                mean, var = P(b + "conv.norm.running_mean"), P(b + "conv.norm.running_var")
                if train:  # statistics over the frames within the sequences; running ones move towards them
                    count = frames.sum()
                    mean = (h * frames).sum((0, 2)) / count
                    var = ((h - mean[:, None]).square() * frames).sum((0, 2)) / count
                    with torch.no_grad():
                        P(b + "conv.norm.running_mean").add_((mean - P(b + "conv.norm.running_mean")) * 0.1)
                        P(b + "conv.norm.running_var").add_((var - P(b + "conv.norm.running_var")) * 0.1)
                h = ((h - mean[:, None]) * torch.rsqrt(var[:, None] + 1e-5) * P(b + "conv.norm.scale")[:, None]
                     + P(b + "conv.norm.bias")[:, None])
                x = x + drop(linear(F.silu(h).transpose(1, 2), b + "conv.pointwise_conv2"))
                x = feed_forward(x, b + "ff2")
                x = norm(x, b + "final_norm")
            logits = linear(x, "out")
            log_probs = logits.log_softmax(-1).transpose(0, 1)  # [T4, B, classes]
            return F.ctc_loss(log_probs, classes.long(), lens, classes_len, blank=logits.shape[-1] - 1,
                              reduction="sum")

    return PlainConformer()


def plain_trainer(kind, config_path, num_layers, batch, max_time, max_labels):
    """plain_conformer with retc's params (the retc config at `config_path`), torch's fused
    Adam (as retc emits on torch), the benchmark's batch; kind "plain" (eager) or
    "plain_compiled" (torch.compile, compiled in its first step: compile_ms). First both
    models' loss in evaluation (no dropout, running statistics) on the same params:
    loss_retc, loss_plain. (result, step(i) -> loss), as torch_trainer."""
    import torch
    import returnn.frontend as rf
    from returnn.tensor import TensorDict
    from returnn.torch.data import extern_data as extern_data_util
    from returnn.torch.frontend.bridge import rf_module_to_pt_module

    config = torch_config(config_path)
    model = config.typed_value("get_model")(epoch=1, step=0)
    pt_model = rf_module_to_pt_module(model)
    named = dict(pt_model.named_parameters())
    template = TensorDict()
    template.update(config.typed_value("extern_data"), auto_convert=True)
    raw = torch_batch(template, batch, max_time, max_labels)
    extern_data = extern_data_util.raw_dict_to_extern_data(raw, extern_data_template=template, device="cpu",
                                                           with_eval_targets=True)
    rf.init_train_step_run_ctx(train_flag=False, step=0, epoch=1)
    with torch.no_grad():
        config.typed_value("train_step")(model=model, extern_data=extern_data)
        loss_retc = float(rf.get_run_ctx().total_loss().raw_tensor)
    plain = plain_conformer(named, num_layers)
    del model, pt_model, named
    inputs = (raw["data"], raw["data:seq_len"].long(), raw["classes"], raw["classes:seq_len"].long())
    with torch.no_grad():
        loss_plain = float(plain(*inputs, False))
    result = {"kind": kind, "params": int(sum(p.numel() for p in [*plain.parameters(), *plain.buffers()])),
              "mkl_cpu": mkl_cpu_loaded(),
              "loss_retc": loss_retc, "loss_plain": loss_plain}
    optimizer = torch.optim.Adam(plain.parameters(), lr=0.0005, fused=True)
    forward = plain
    if kind == "plain_compiled":
        # inductor's caches in a directory of their own: the compile time is a first compile's
        cache = tempfile.mkdtemp(prefix="retc-bench-inductor-")
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
        atexit.register(shutil.rmtree, cache, ignore_errors=True)
        forward = torch.compile(plain)

    def step(i):
        optimizer.zero_grad()
        loss = forward(*inputs, True)
        loss.backward()
        optimizer.step()
        return float(loss)

    if kind == "plain_compiled":
        t0 = time.perf_counter()
        step(0)
        result["compile_ms"] = (time.perf_counter() - t0) * 1000
    return result, step


def mkl_cpu_loaded():
    """Whether this process runs torch with retc_mkl_cpu.so (runtime/torch/mkl_cpu.c, loaded
    by the venv hook: MKL's kernels by the CPU's features)."""
    with open("/proc/self/maps") as maps:
        return any(line.rstrip().endswith("/retc_mkl_cpu.so") for line in maps)


def worker_torch_steps(kind, config_path, num_layers, steps, warmup, batch, max_time, max_labels, profile,
                       device="cpu"):
    """torch_trainer's model trained for `warmup` and then `steps` timed steps;
    prints JSON (with the top ops of a profiled step if asked). `config_path`
    "A+B+..." (retc configs, "rf" and "rf_fused" for those models, "plain:CONFIG" and
    "plain_compiled:CONFIG" for plain_trainer's of that retc config): all in
    this process, taking turns step by step, so that the machine's drift (this
    one's step times moved by 10% from process to process) falls on all alike;
    prints a list. With `profile`, each model's next 2 steps profiled: its
    time in matmuls (aten::mm, addmm, bmm) per step, and the first model's top
    ops."""
    specs = config_path.split("+")
    group = []
    for spec in specs:
        plain, _, path = spec.partition(":")
        if plain in ("plain", "plain_compiled"):
            group.append(plain_trainer(plain, path, num_layers, batch, max_time, max_labels))
        else:
            group.append(torch_trainer(spec if spec.startswith("rf") else kind, spec, num_layers, batch, max_time,
                                       max_labels, device))
    times, losses = take_turns([step for _, step in group], warmup, steps)
    for (result, _), ts, loss in zip(group, times, losses):
        result["loss_after"] = loss
        result["step_ms_median"] = statistics.median(ts)
        result["step_ms_min"] = min(ts)
    if profile:
        from torch.profiler import ProfilerActivity, profile as torch_profile

        for n, (result, step) in enumerate(group):
            with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
                for i in range(2):
                    step(warmup + steps + i)
            ops = prof.key_averages()
            total = sum(e.self_cpu_time_total for e in ops)
            result["matmul_ms"] = sum(e.self_cpu_time_total for e in ops
                                      if e.key in ("aten::mm", "aten::addmm", "aten::bmm")) / 1000 / 2
            if n == 0:
                top = sorted(ops, key=lambda e: -e.self_cpu_time_total)[:8]
                result["profile"] = [(e.key, e.self_cpu_time_total / total) for e in top]
    print(json.dumps([result for result, _ in group] if len(group) > 1 else result))


def worker_torch_create(kind, config_path, num_layers):
    """The time of get_model (the params and their param-init stage) of one model
    (retc's torch config, or rf's) in this fresh process; prints JSON."""
    config = torch_config(config=rf_config(num_layers)) if kind == "rf" else torch_config(config_path)
    t0 = time.perf_counter()
    config.typed_value("get_model")(epoch=1, step=0)
    print(json.dumps({"kind": kind, "create_ms": (time.perf_counter() - t0) * 1000}))


# --- driver ----------------------------------------------------------------------------------------

def gpu_steps(args):
    """tools/gpu_check.sh's benchmark rows: the median training step of the
    --step-blocks Conformer on the GPU, retc's config against rf's
    ConformerEncoder, on torch (device cuda) and on TF (TensorFlow places the
    ops on the GPU when it is a CUDA build; the row says where they ran), at
    the small and the large batch. Prints markdown table rows."""
    binary = os.path.join(args.build, "retc_bench_compile")
    tmp = tempfile.mkdtemp(prefix="retc-bench-gpu-")
    configs = {}
    for backend in ("tf", "torch"):
        path = os.path.join(tmp, "retc-%s.config" % backend)
        run_compile(binary, ["--conformer", str(args.step_blocks), "--repeat", "1", "--write-config", path,
                             "--backend", backend, "--dropout-broadcast"])
        configs[backend] = path
    import tensorflow as tf

    tf_gpu = bool(tf.test.is_built_with_cuda() and tf.config.list_physical_devices("GPU"))
    for batch, frames, steps in ((args.batch, args.frames, args.steps), (8, 500, args.large_steps)):
        runs = {}
        for kind in ("retc", "rf"):
            log("gpu torch steps: %s %dx%d" % (kind, batch, frames))
            runs["torch", kind] = run_worker(["torch_steps", kind, configs["torch"] if kind == "retc" else "-",
                                              args.step_blocks, steps, args.warmup, batch, frames, 0, "cuda"])
            if tf_gpu:
                log("gpu tf steps: %s %dx%d" % (kind, batch, frames))
                runs["tf", kind] = run_worker(["steps", kind, configs["tf"] if kind == "retc" else "-",
                                               args.step_blocks, steps, args.warmup, batch, frames])
        for target in ("torch", "tf"):
            if (target, "retc") not in runs:
                print("| %d-block Conformer step, %s, %dx%d | not run: the venv's TensorFlow has no GPU "
                      "(tensorflow-cpu; tools/setup.sh --gpu) | | |" % (args.step_blocks, target, batch, frames))
                continue
            a, b = runs[target, "retc"], runs[target, "rf"]
            print("| %d-block Conformer step, %s, %dx%d | retc %.1f ms, rf %.1f ms (median of %d) | | "
                  "retc / rf %.3f |" % (args.step_blocks, target, batch, frames, a["step_ms_median"],
                                        b["step_ms_median"], steps, a["step_ms_median"] / b["step_ms_median"]))
    return 0


def versions():
    import importlib.metadata as md
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    gxx = subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return {
        "machine": "%s, %d cores, %s" % (cpu, os.cpu_count(), platform.platform()),
        "python": platform.python_version(),
        "tensorflow": md.version("tensorflow-cpu"),
        "returnn": md.version("returnn"),
        "compiler": gxx,
        "retc": commit + (" (with local changes)" if dirty else ""),
    }


def plain_pytorch_bound(out, torch_runs, args, large):
    """RESULTS.md's section on what bounds the torch step: retc, rf and the same model
    written by hand in plain PyTorch (plain_conformer, eager and torch.compile'd),
    their step and matmul times (profiled steps), and the lowest retc / rf that
    matmuls at their rate leave. Returns plain / rf at both batches and compiled / rf
    at 8 x 500. Fails where plain_conformer's loss is not retc's (it is then not the
    same model)."""
    for name, r in torch_runs.items():
        if name.startswith("plain") and abs(r["loss_plain"] - r["loss_retc"]) > 1e-5 * abs(r["loss_retc"]):
            raise RuntimeError("%s: plain PyTorch's loss %r is not retc's %r: not the same model" % (
                name, r["loss_plain"], r["loss_retc"]))
    out("### What bounds the torch step: the same model in plain PyTorch, and the matmuls")
    out()
    out("| model (torch, CPU) | batch | median step ms | / rf's | its matmuls ms | the rest ms |")
    out("|---|---|---|---|---|---|")
    for suffix, shape in (("", (args.batch, args.frames)), (" 8x500", large)):
        rf_ms = torch_runs["rf" + suffix]["step_ms_median"]
        for name in ("retc", "rf", "plain PyTorch", "plain PyTorch, torch.compile"):
            r = torch_runs.get(name + suffix)
            if r is None:
                continue
            out("| %s | %d x %d | %.1f | %.3f | %.1f | %.1f |" % (
                name, shape[0], shape[1], r["step_ms_median"], r["step_ms_median"] / rf_ms, r["matmul_ms"],
                r["step_ms_median"] - r["matmul_ms"]))
    out()
    small, big = torch_runs["plain PyTorch"], torch_runs["plain PyTorch 8x500"]
    compiled = torch_runs["plain PyTorch, torch.compile 8x500"]
    retc_big, rf_big = torch_runs["retc 8x500"], torch_runs["rf 8x500"]
    out("- plain PyTorch: the benchmark's retc model written by hand with torch.nn.functional, no rf "
        "(tools/bench.py `plain_conformer`), on retc's params, torch's fused Adam; its loss in evaluation equals "
        "retc's on the same batch (%r and %r at %d x %d, %r and %r at 8 x 500): the same model, written "
        "directly in PyTorch with nothing between it and torch's ops." % (
            small["loss_plain"], small["loss_retc"], args.batch, args.frames, big["loss_plain"], big["loss_retc"]))
    out("- torch.compile (inductor, CPU, compiled at its first step in %.0f s): its kernels fuse the elementwise "
        "ops, the matmuls stay MKL's." % (compiled["compile_ms"] / 1000))
    out("- its matmuls: the self time of aten::mm, addmm and bmm per step in 2 profiled steps after the timed "
        "ones; the rest: the median step less that (every other op, Python, the optimizer).")
    out("- if everything but its matmuls took no time, retc / rf at 8 x 500 would be %.3f (retc's matmul ms / "
        "rf's median step); <= 0.8 leaves retc %.0f ms per step for all but its matmuls, which take %.0f ms now "
        "in retc, %.0f in plain PyTorch, %.0f compiled." % (
            retc_big["matmul_ms"] / rf_big["step_ms_median"], 0.8 * rf_big["step_ms_median"] - retc_big["matmul_ms"],
            retc_big["step_ms_median"] - retc_big["matmul_ms"], big["step_ms_median"] - big["matmul_ms"],
            compiled["step_ms_median"] - compiled["matmul_ms"]))
    out()
    return (small["step_ms_median"] / torch_runs["rf"]["step_ms_median"], big["step_ms_median"] / rf_big["step_ms_median"],
            compiled["step_ms_median"] / rf_big["step_ms_median"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="retc build directory")
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "RESULTS.md"), help="results file")
    ap.add_argument("--steps", type=int, default=50, help="timed training steps per model (after warm-up)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed training steps first")
    ap.add_argument("--step-blocks", type=int, default=12, help="Conformer blocks for the step-time runs")
    ap.add_argument("--batch", type=int, default=2, help="sequences per training batch")
    ap.add_argument("--frames", type=int, default=200, help="frames of the longest sequence")
    ap.add_argument("--quick", action="store_true", help="fewer repeats and steps (a smoke run)")
    ap.add_argument("--large-steps", type=int, default=10, help="timed steps at the large batch (8 x 500)")
    ap.add_argument("--gpu", action="store_true",
                    help="only the training steps on the GPU (tools/gpu_check.sh): the --step-blocks Conformer, "
                         "retc against rf on both targets, at --batch x --frames and 8 x 500; prints table rows")
    ap.add_argument("--worker", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker is not None:
        if args.worker[0] == "steps":
            kind, path, layers, steps, warmup, batch, frames = args.worker[1:8]
            worker_steps(kind, path, int(layers), int(steps), int(warmup), int(batch), int(frames),
                         max(4, int(frames) // 10), args.worker[8:9] == ["1"])
        elif args.worker[0] == "torch_create":
            worker_torch_create(args.worker[1], args.worker[2], int(args.worker[3]))
        elif args.worker[0] == "tf_turns":
            worker_tf_turns(args.worker[1], int(args.worker[2]), args.worker[3])
        elif args.worker[0] == "matmul":
            worker_matmul(args.worker[1])
        elif args.worker[0] == "torch_steps":
            kind, path, layers, steps, warmup, batch, frames, profile = args.worker[1:9]
            worker_torch_steps(kind, path, int(layers), int(steps), int(warmup), int(batch), int(frames),
                               max(4, int(frames) // 10), profile == "1", *args.worker[9:])
        else:
            worker_rf_dict(int(args.worker[1]), int(args.worker[2]))
        return
    if args.quick:
        args.steps, args.warmup, args.large_steps = 5, 1, 2
    if args.gpu:
        return gpu_steps(args)

    binary = os.path.join(args.build, "retc_bench_compile")
    ver = versions()
    lines = []

    def out(line=""):
        print(line, flush=True)
        lines.append(line)

    out("# retc benchmarks")
    out()
    for k, v in ver.items():
        out("- %s: %s" % (k, v))
    out("- run: %s" % time.strftime("%Y-%m-%d %H:%M:%S %Z"))
    out()

    # 1. compile
    out("## 1. Compile time (build + passes + emit), one process per model")
    out()
    out("| model | nodes (built / emitted) | median ms | build / passes / emit ms | ms per block | us per node | peak RSS MiB |")
    out("|---|---|---|---|---|---|---|")
    base, base_rss = run_compile(binary, ["--conformer", "0", "--repeat", "3"])
    compile_rows = {}
    for blocks in (1, 6, 12, 24, 48):
        repeat = (21 if blocks <= 12 else 11) if not args.quick else 3
        log("compile conformer %d blocks x %d" % (blocks, repeat))
        r, rss = run_compile(binary, ["--conformer", str(blocks), "--repeat", str(repeat)])
        compile_rows[blocks] = r
        out("| conformer %d x 512 | %d / %d | %.2f | %.2f / %.2f / %.2f | %.3f | %.2f | %.1f |" % (
            blocks, r["nodes_built"], r["nodes_emitted"], r["total_ms_median"], r["build_ms_median"],
            r["passes_ms_median"], r["emit_ms_median"], r["total_ms_median"] / blocks,
            1000 * r["total_ms_median"] / r["nodes_emitted"], rss))
    log("compile stress model")
    r, rss = run_compile(binary, ["--stress", "8300", "--repeat", "5" if not args.quick else "1"])
    out("| stress (8300 residual tanh layers) | %d / %d | %.2f | %.2f / %.2f / %.2f | | %.2f | %.1f |" % (
        r["nodes_built"], r["nodes_emitted"], r["total_ms_median"], r["build_ms_median"], r["passes_ms_median"],
        r["emit_ms_median"], 1000 * r["total_ms_median"] / r["nodes_emitted"], rss))
    stress = (r, rss)
    out()
    per_block = {b: compile_rows[b]["total_ms_median"] / b for b in compile_rows}
    out("Linear scaling: time per block at 48 blocks / at 1 block = %.2f (the 1-block model also holds the "
        "frontend and output layer, %d nodes without any block; per-block increment from 24 to 48 blocks: "
        "%.3f ms)." % (per_block[48] / per_block[1], base["nodes_emitted"],
                       (compile_rows[48]["total_ms_median"] - compile_rows[24]["total_ms_median"]) / 24))
    out("Peak RSS of a process compiling no block (the binary and its libraries, embedded Python "
        "not started): %.1f MiB." % base_rss)
    out()

    # 2. rf net dict
    log("rf net dict (12 blocks)")
    rf = run_worker(["rf_dict", 12, 5 if not args.quick else 1])
    retc12 = compile_rows[12]["total_ms_median"]
    out("## 2. To a net dict: retc against RETURNN's frontend (12 blocks)")
    out()
    out("| | median ms | layers in the net dict (with subnetworks) |")
    out("|---|---|---|")
    out("| retc (build + passes + emit, config text) | %.2f | %d |" % (retc12, compile_rows[12]["nodes_emitted"]))
    out("| rf `get_net_dict` (returnn.frontend ConformerEncoder, TF net-dict backend) | %.1f | %d |" % (
        rf["rf_net_dict_ms_median"], rf["layers"]))
    out()
    out("retc is %.0fx faster to a net dict." % (rf["rf_net_dict_ms_median"] / retc12))
    out()

    # 3./4. construction and steps
    out("## 3. RETURNN construction and training steps (%d blocks, batch %d, %d frames, CPU)" % (
        args.step_blocks, args.batch, args.frames))
    out()
    tmp = tempfile.mkdtemp(prefix="retc-bench-")
    configs = {}
    for name, flags in [("plain", ["--dropout-broadcast"]), ("wn", ["--dropout-broadcast", "--weight-norm"]),
                        ("elementwise", [])]:
        path = os.path.join(tmp, "retc-%s.config" % name)
        run_compile(binary, ["--conformer", str(args.step_blocks), "--repeat", "1", "--write-config", path] + flags)
        configs[name] = path
    large = (8, 500)
    # All four networks in one process, taking turns step by step at the small
    # batch, then at 8 x 500.
    log("TF steps: retc, rf, retc weight norm, retc elementwise dropout, taking turns")
    names = ["retc", "rf", "retc weight norm", "retc, elementwise dropout"]
    small, big = run_worker(["tf_turns", "+".join([configs["plain"], "rf", configs["wn"], configs["elementwise"]]),
                             args.step_blocks, "%dx%dx%dx%d+%dx%dx%dx%d" % (
                                 args.batch, args.frames, args.steps, args.warmup, large[0], large[1],
                                 args.large_steps, 1)])
    runs = dict(zip(names, small))
    runs.update(("TF " + n + " 8x500", r) for n, r in zip(names, big))
    out("| config | params | construct ms | updater ms | TF ops (network / with updater) | median step ms | min step ms |")
    out("|---|---|---|---|---|---|---|")
    for name in names:
        r = runs[name]
        out("| %s | %d | %.0f | %.0f | %d / %d | %.1f | %.1f |" % (
            name, r["params"], r["construct_ms"], r["updater_ms"], r["forward_ops"], r["total_ops"],
            r["step_ms_median"], r["step_ms_min"]))
    out()
    a, b, w = runs["retc"], runs["rf"], runs["retc weight norm"]
    out("- construction retc / rf: %.2f; TF ops retc / rf: %.2f (network), %.2f (with updater)" % (
        a["construct_ms"] / b["construct_ms"], a["forward_ops"] / b["forward_ops"], a["total_ops"] / b["total_ops"]))
    out("- median step retc / rf: %.3f" % (a["step_ms_median"] / b["step_ms_median"]))
    out("- weight norm: median step weight-normed / plain (retc): %.3f" % (w["step_ms_median"] / a["step_ms_median"]))
    out("- %d timed steps after %d warm-up steps on one fixed random batch, the four networks in one process "
        "taking turns step by step (each built under its own config and behavior version), so that the "
        "machine's drift falls on all alike; each in a process of its own, step times moved by up to 10%% from "
        "process to process." % (args.steps, args.warmup))
    e = runs["retc, elementwise dropout"]
    out("- The models are made alike where both have options: dropout masks shared over batch and time "
        "(rf's default; retc's `ConformerOptions::dropout_broadcast`), no attention-weight dropout. rf's "
        "relative-positional self-attention (Transformer-XL style, with a position projection) differs from "
        "retc's (Shaw et al., RETURNN's fused `self_attention` with `key_shift`), hence the different param "
        "counts.")
    out("- retc with elementwise dropout masks (PyTorch's semantics, retc's default): median step %.1f ms, "
        "%.3f x the shared-mask config. rf with elementwise masks (`rf_dropout_broadcast = False`) grew to "
        "24 GiB of memory while building its graph on this 24 GiB machine and was killed, so it is not in "
        "the table." % (e["step_ms_median"], e["step_ms_median"] / a["step_ms_median"]))
    out()

    # 5. torch target
    out("## 5. The torch target (RETURNN's PyTorch engine, %d blocks, CPU)" % args.step_blocks)
    out()
    for name, flags in [("torch plain", ["--dropout-broadcast"]), ("torch wn", ["--dropout-broadcast", "--weight-norm"])]:
        path = os.path.join(tmp, "retc-%s.config" % name.replace(" ", "-"))
        run_compile(binary, ["--conformer", str(args.step_blocks), "--repeat", "1", "--write-config", path,
                             "--backend", "torch"] + flags)
        configs[name] = path
    large = (8, 500)
    # The models of a batch size in one process, taking turns step by step.
    specs = {"retc": configs["torch plain"], "rf": "rf", "rf, fused Adam": "rf_fused",
             "retc weight norm": configs["torch wn"], "plain PyTorch": "plain:" + configs["torch plain"],
             "plain PyTorch, torch.compile": "plain_compiled:" + configs["torch plain"]}
    torch_runs = {}
    for (batch, frames), steps, warmup, members in [
            ((args.batch, args.frames), args.steps, args.warmup,
             ["retc", "rf", "rf, fused Adam", "retc weight norm", "plain PyTorch"]),
            (large, args.large_steps, min(args.warmup, 2),
             ["retc", "rf", "retc weight norm", "plain PyTorch", "plain PyTorch, torch.compile"])]:
        log("torch steps at %d x %d: %s, taking turns" % (batch, frames, ", ".join(members)))
        group = run_worker(["torch_steps", "retc", "+".join(specs[n] for n in members), args.step_blocks, steps, warmup,
                            batch, frames, 1])
        torch_runs.update((n + ("" if (batch, frames) != large else " 8x500"), r) for n, r in zip(members, group))
    # The same at the small batch with MKL's own choice of kernels (runtime/torch/mkl_cpu.c not loaded).
    log("torch steps at %d x %d with MKL's vendor check: retc, rf, taking turns" % (args.batch, args.frames))
    vendor = run_worker(["torch_steps", "retc", "+".join(specs[n] for n in ("retc", "rf")), args.step_blocks,
                         args.steps, args.warmup, args.batch, args.frames, 0], env={"RETC_MKL_VENDOR_CHECK": "1"})
    # Model creation: each model alone in a fresh process, alternating.
    create = {"retc": [], "rf": []}
    for _ in range(1 if args.quick else 3):
        for kind in create:
            log("torch model creation: %s" % kind)
            create[kind].append(run_worker(["torch_create", kind, specs[kind], args.step_blocks])["create_ms"])
    create = {kind: statistics.median(ms) for kind, ms in create.items()}
    out("| model | batch | params | median step ms | min step ms |")
    out("|---|---|---|---|---|")
    for name, r in torch_runs.items():
        if name.startswith("plain"):
            continue  # in the next table
        shape = "%d x %d" % (large if "8x500" in name else (args.batch, args.frames))
        out("| %s (torch) | %s | %d | %.1f | %.1f |" % (
            name.replace(" 8x500", ""), shape, r["params"], r["step_ms_median"], r["step_ms_min"]))
    for name in ["retc", "rf", "retc weight norm", "retc, elementwise dropout"]:
        r = runs["TF %s 8x500" % name]
        out("| %s (TF) | %d x %d | %d | %.1f | %.1f |" % (
            name, large[0], large[1], r["params"], r["step_ms_median"], r["step_ms_min"]))
    out()
    tr, trf, twn = torch_runs["retc"], torch_runs["rf"], torch_runs["retc weight norm"]
    tl, twl = torch_runs["retc 8x500"], torch_runs["retc weight norm 8x500"]
    fl, fwl, frl = runs["TF retc 8x500"], runs["TF retc weight norm 8x500"], runs["TF rf 8x500"]
    trl, trff = torch_runs["rf 8x500"], torch_runs["rf, fused Adam"]
    out("- median step retc / rf's ConformerEncoder, both on torch: %.3f at %d x %d, %.3f at 8 x 500; against rf "
        "with torch's fused Adam (as retc emits it on torch, `\"fused\": True`; rf's config as written has the "
        "default per-param loop): %.3f at %d x %d" % (
            tr["step_ms_median"] / trf["step_ms_median"], args.batch, args.frames,
            tl["step_ms_median"] / trl["step_ms_median"], tr["step_ms_median"] / trff["step_ms_median"],
            args.batch, args.frames))
    out("- on TF at 8 x 500: retc / rf %.3f" % (fl["step_ms_median"] / frl["step_ms_median"]))
    out("- the same retc model, TF / torch: %.3f at %d x %d, %.3f at 8 x 500 (from two processes)" % (
        a["step_ms_median"] / tr["step_ms_median"], args.batch, args.frames,
        fl["step_ms_median"] / tl["step_ms_median"]))
    out("- weight norm, median step weight-normed / plain: torch %.3f (%d x %d), %.3f (8 x 500); TF %.3f "
        "(%d x %d), %.3f (8 x 500)" % (
            twn["step_ms_median"] / tr["step_ms_median"], args.batch, args.frames,
            twl["step_ms_median"] / tl["step_ms_median"], w["step_ms_median"] / a["step_ms_median"],
            args.batch, args.frames, fwl["step_ms_median"] / fl["step_ms_median"]))
    mkl = [r["mkl_cpu"] for r in list(torch_runs.values()) + vendor]
    out("- MKL's kernels by the CPU's features (runtime/torch/mkl_cpu.c, which the venv hook loads before torch "
        "starts, in every process of retc's venv, rf's models' too; loaded in the rows above: %s; in the runs "
        "with RETC_MKL_VENDOR_CHECK=1: %s): at %d x %d, with MKL's own vendor check (%d steps, a process of "
        "its own, taking turns) retc %.1f ms, rf %.1f ms (retc / rf %.3f); the rows above / those: retc %.3f, "
        "rf %.3f" % (
            "yes" if all(mkl[:len(torch_runs)]) else "NO", "yes" if any(mkl[len(torch_runs):]) else "no",
            args.batch, args.frames, args.steps, vendor[0]["step_ms_median"], vendor[1]["step_ms_median"],
            vendor[0]["step_ms_median"] / vendor[1]["step_ms_median"],
            tr["step_ms_median"] / vendor[0]["step_ms_median"], trf["step_ms_median"] / vendor[1]["step_ms_median"]))
    out("- model creation on torch (get_model: params and their param-init stage; the median of %d fresh "
        "processes each, alternating): retc %.0f ms, rf %.0f ms" % (
            1 if args.quick else 3, create["retc"], create["rf"]))
    out("- %d timed steps (%d at 8 x 500) after warm-up, one fixed random batch; the models of a batch size in "
        "one process, taking turns step by step, each step under its model's config and behavior version; "
        "RETURNN's torch Updater (Adam)." % (args.steps, args.large_steps))
    out("- where a retc torch step goes (self CPU time of 2 profiled steps, top ops): " + ", ".join(
        "%s %.0f%%" % (k, 100 * f) for k, f in tr["profile"]))
    out()
    bound = plain_pytorch_bound(out, torch_runs, args, large)

    # 6. roofline
    log("matmul rate: torch, tf")
    rate = {fw: run_worker(["matmul", fw])["gflops"] for fw in ("torch", "tf")}
    vendor_rate = run_worker(["matmul", "torch"], env={"RETC_MKL_VENDOR_CHECK": "1"})["gflops"]
    best = max(rate.values())
    retc_bin = os.path.join(args.build, "retc")
    out("## 6. Roofline: the training step against this machine's matmul rate (%d blocks, CPU)" % args.step_blocks)
    out()
    out("This machine's float32 matmul rate, measured in this run (4096 x 4096 products, the frameworks' default "
        "threads): torch.mm %.1f GFLOP/s (%.1f with MKL's own vendor check, RETC_MKL_VENDOR_CHECK=1), "
        "tf.matmul %.1f GFLOP/s." % (rate["torch"], vendor_rate, rate["tf"]))
    out()
    out("| target | batch | step GFLOP (forward / with backward) | median step ms | achieved GFLOP/s | "
        "of the best matmul rate | of its framework's rate |")
    out("|---|---|---|---|---|---|---|")
    fractions = {}
    for target, (batch, frames), r in [("TF", (args.batch, args.frames), a), ("TF", large, fl),
                                      ("torch", (args.batch, args.frames), tr), ("torch", large, tl)]:
        forward, step, params = stats_flops(retc_bin, batch, frames, ["dropout_broadcast=true",
                                                                      "blocks=%d" % args.step_blocks])
        if params != r["params"]:
            raise RuntimeError("retc stats counts %d params, the run has %d" % (params, r["params"]))
        achieved = step / (r["step_ms_median"] / 1000) / 1e9
        fractions[target, batch] = achieved / best
        out("| %s | %d x %d | %.1f / %.1f | %.1f | %.1f | %.2f | %.2f |" % (
            target, batch, frames, forward / 1e9, step / 1e9, r["step_ms_median"], achieved, achieved / best,
            achieved / rate["tf" if target == "TF" else "torch"]))
    out()
    out("- FLOPs from `retc stats conformer-12x512 --set dropout_broadcast=true` at the padded batch (the benchmark's "
        "sequences are 3/4 to all of the longest one's length; every op computes the padding too): 2 FLOPs per "
        "multiply-add of every matmul, convolution and attention product, their backward once per operand that "
        "needs a gradient, other ops a few per element; the optimizer's update (Adam, about 10 FLOPs per param, "
        "0.75 GFLOP) is not counted. tests/integration/test_stats.py holds these counts within 1-6% of "
        "torch.profiler's (with_flops) on the same models.")
    out("- where a TF step goes at 8 x 500 (time of its ops by type, one traced step; ops overlap on 2 cores): " +
        ", ".join("%s %.0f%%" % (k, 100 * f) for k, f in fl["profile"]))
    out("- where a torch step goes at 8 x 500 (self CPU time of 2 profiled steps, top ops): " + ", ".join(
        "%s %.0f%%" % (k, 100 * f) for k, f in tl["profile"]))
    out()

    # 7. decoding
    out("## 7. Decoding: `retc search --beam 12` on both targets (CPU)")
    out()
    out("| model | epochs trained (torch) | dev sequences | TF: seconds, seq/s | torch: seconds, seq/s | "
        "torch / TF seq/s | torch beam 1: seconds | label error (TF / torch) |")
    out("|---|---|---|---|---|---|---|---|")
    decoding = {}
    for model, epochs in (("transformer-copy", 8), ("conformer-ctc", 10)):
        work = os.path.join(tmp, "decode-" + model)
        log("decoding: train %s (torch, %d epochs)" % (model, epochs))
        subprocess.run([retc_bin, "train", model, "--backend", "torch", "--workdir", work, "--epochs", str(epochs)],
                       check=True, capture_output=True)
        pt = os.path.join(work, "model", "network.%03d.pt" % epochs)
        tf_ckpt = os.path.join(work, "tf", "network.%03d" % epochs)
        os.makedirs(os.path.dirname(tf_ckpt), exist_ok=True)
        subprocess.run([retc_bin, "convert-checkpoint", model, "--from", "torch", pt, tf_ckpt], check=True,
                       capture_output=True)
        log("decoding: search %s" % model)
        seqs, tf_s, tf_err = decode(retc_bin, model, "tf", tf_ckpt, 12)
        _, pt_s, pt_err = decode(retc_bin, model, "torch", pt, 12)
        _, pt1_s, _ = decode(retc_bin, model, "torch", pt, 1)
        decoding[model] = (seqs / pt_s) / (seqs / tf_s)
        out("| %s | %d | %d | %.3f, %.1f | %.3f, %.1f | %.2f | %.3f | %.4f / %.4f |" % (
            model, epochs, seqs, tf_s, seqs / tf_s, pt_s, seqs / pt_s, decoding[model], pt1_s, tf_err, pt_err))
    out()
    out("- the same checkpoint on both targets (trained on torch, `retc convert-checkpoint` to TF); seconds: the "
        "decoding loop alone as `retc search` reports it (RETURNN's search runner on TF, its forward loop with "
        "retc's beam search on torch), model set-up and checkpoint loading not counted; one run each.")
    out("- TF's search is RETURNN's own decoding of the network (its choice layers' beam search in the graph); "
        "torch's is retc's `_Search` in the config: per frame one top-k over [beam, labels] of all hypotheses "
        "of the batch and one gather per state, no loop over hypotheses; beam 1 against beam 12 on torch shows "
        "the cost of the hypotheses. rf has beam-search helpers but no network of these models to run them on, "
        "so torch is compared with TF's RETURNN decoding only.")
    out("- conformer-ctc's data is synthetic (binary numbers as frames), so no real-time factor is given.")
    out()

    out("## Targets")
    out()
    t12 = compile_rows[12]["total_ms_median"]
    checks = [
        ("build+emit of the 12-block Conformer < 20 ms", "%.2f ms" % t12, t12 < 20),
        (">= 50x faster than rf to a net dict", "%.0fx" % (rf["rf_net_dict_ms_median"] / t12),
         rf["rf_net_dict_ms_median"] / t12 >= 50),
        ("RETURNN construction of retc's config no slower than rf's", "%.2f" % (a["construct_ms"] / b["construct_ms"]),
         a["construct_ms"] <= b["construct_ms"]),
        ("step time within 3% of rf's or better", "%.3f" % (a["step_ms_median"] / b["step_ms_median"]),
         a["step_ms_median"] <= 1.03 * b["step_ms_median"]),
        ("TF: step retc / rf <= 0.9", "%.3f" % (a["step_ms_median"] / b["step_ms_median"]),
         a["step_ms_median"] <= 0.9 * b["step_ms_median"]),
        ("torch: step retc / rf's ConformerEncoder <= 0.8 at %d x %d and at 8 x 500" % (args.batch, args.frames),
         "%.3f, %.3f" % (tr["step_ms_median"] / trf["step_ms_median"], tl["step_ms_median"] / trl["step_ms_median"]),
         tr["step_ms_median"] <= 0.8 * trf["step_ms_median"] and tl["step_ms_median"] <= 0.8 * trl["step_ms_median"]),
        ("the same, by plain PyTorch (the model by hand, retc's loss): step / rf's <= 0.8 at %d x %d and at "
         "8 x 500" % (args.batch, args.frames), "%.3f, %.3f (torch.compile at 8 x 500: %.3f)" % bound,
         bound[0] <= 0.8 and bound[1] <= 0.8),
        ("torch: model creation retc <= rf", "%.0f ms, %.0f ms" % (create["retc"], create["rf"]),
         create["retc"] <= create["rf"]),
        ("weight-norm overhead <= 1.1x at %d x %d, TF and torch" % (args.batch, args.frames), "%.3f, %.3f" % (
            w["step_ms_median"] / a["step_ms_median"], twn["step_ms_median"] / tr["step_ms_median"]),
         w["step_ms_median"] <= 1.1 * a["step_ms_median"] and twn["step_ms_median"] <= 1.1 * tr["step_ms_median"]),
        ("weight-norm overhead <= 1.05x at 8 x 500, TF and torch", "%.3f, %.3f" % (
            fwl["step_ms_median"] / fl["step_ms_median"], twl["step_ms_median"] / tl["step_ms_median"]),
         fwl["step_ms_median"] <= 1.05 * fl["step_ms_median"] and twl["step_ms_median"] <= 1.05 * tl["step_ms_median"]),
        ("roofline: achieved fraction of the matmul rate at 8 x 500, faster target, >= 0.6",
         "%.2f" % max(fractions["TF", 8], fractions["torch", 8]), max(fractions["TF", 8], fractions["torch", 8]) >= 0.6),
        ("decoding: torch search seq/s >= TF's, both models",
         ", ".join("%s %.2f" % (m, r) for m, r in decoding.items()), all(r >= 1 for r in decoding.values())),
        ("50,000-node stress model < 1 s and < 500 MiB", "%.0f ms, %.0f MiB" % (stress[0]["total_ms_median"], stress[1]),
         stress[0]["total_ms_median"] < 1000 and stress[1] < 500),
    ]
    out("| target | measured | met |")
    out("|---|---|---|")
    for what, got, ok in checks:
        out("| %s | %s | %s |" % (what, got, "yes" if ok else "no"))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(args.out + ".tmp", args.out)
    shutil.rmtree(tmp, ignore_errors=True)  # the configs and the decoding models' work dirs
    log("wrote %s" % args.out)


if __name__ == "__main__":
    main()
