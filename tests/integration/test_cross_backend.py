"""Same numbers on both backends: a TF checkpoint of a bundled model,
converted with `retc convert-checkpoint --from tf`, gives the torch target's
model the same outputs on the same batch (float32, evaluation: dropout off,
batch norm on its running statistics) within 1e-4; and a torch checkpoint
converted back gives TF the torch model's outputs (12ax, transformer-copy,
conformer-ctc). The other models take TF's values by name in the process
instead, as the sweep does: the conversion copies each value as it is, so
what they prove is the layout. conformer-12x512's TF variables and param
count also equal their formula (PARAM_FORMULAS).

The params are not the initial values: every one is perturbed (norm
variances kept positive), so that a param read in another layout (LSTM gate
order, the QKV columns of self-attention, conv filters) shows.

Run alone as `python test_cross_backend.py MODEL tf|torch` (the source backend);
ctest runs the cases below in groups (cases.py).
"""
# The cases ctest runs (tests/CMakeLists.txt reads these lines), 24 to a
# process; each direction's cases are listed together, since a process must
# not run both directions of one model (see main).
# ctest-group: 24
# ctest-cases: cross_backend.12ax.from_tf 12ax tf
# ctest-cases: cross_backend.12ax-wn.from_tf 12ax-wn tf
# ctest-cases: cross_backend.blstm-tagger.from_tf blstm-tagger tf
# ctest-cases: cross_backend.lstm-lm.from_tf lstm-lm tf
# ctest-cases: cross_backend.transformer-copy.from_tf transformer-copy tf
# ctest-cases: cross_backend.conformer-ctc.from_tf conformer-ctc tf
# ctest-cases: cross_backend.conformer-12x512.from_tf conformer-12x512 tf
# ctest-cases: cross_backend.mod-loop.from_tf mod-loop tf
# ctest-cases: cross_backend.rq-loop-encoder-state.from_tf rq-loop-encoder-state tf
# ctest-cases: cross_backend.mod-conv-stride.from_tf mod-conv-stride tf
# ctest-cases: cross_backend.mod-conv2d.from_tf mod-conv2d tf
# ctest-cases: cross_backend.mod-batch-norm.from_tf mod-batch-norm tf
# ctest-cases: cross_backend.mod-rel-pos-attention.from_tf mod-rel-pos-attention tf
# ctest-cases: cross_backend.mod-transposed-conv.from_tf mod-transposed-conv tf
# ctest-cases: cross_backend.op-array.from_tf op-array tf
# ctest-cases: cross_backend.op-stack-window.from_tf op-stack-window tf
# ctest-cases: cross_backend.op-repeat-const.from_tf op-repeat-const tf
# ctest-cases: cross_backend.op-reverse-slice.from_tf op-reverse-slice tf
# ctest-cases: cross_backend.op-floor-mod.from_tf op-floor-mod tf
# ctest-cases: cross_backend.mod-named-sequential.from_tf mod-named-sequential tf
# ctest-cases: cross_backend.mod-sequential-time.from_tf mod-sequential-time tf
# ctest-cases: cross_backend.mod-zoneout-lstm.from_tf mod-zoneout-lstm tf
# ctest-cases: cross_backend.mod-rel-pos-xl.from_tf mod-rel-pos-xl tf
# ctest-cases: cross_backend.mod-rel-pos-xl-dropout.from_tf mod-rel-pos-xl-dropout tf
# ctest-cases: cross_backend.loss-values.from_tf loss-values tf
# ctest-cases: cross_backend.mod-att-dropout.from_tf mod-att-dropout tf
# ctest-cases: cross_backend.mod-seq2seq.from_tf mod-seq2seq tf
# ctest-cases: cross_backend.mod-group-norm.from_tf mod-group-norm tf
# ctest-cases: cross_backend.mod-log-mel.from_tf mod-log-mel tf
# ctest-cases: cross_backend.loss-transducer.from_tf loss-transducer tf
# ctest-cases: cross_backend.mod-rotary-attention.from_tf mod-rotary-attention tf
# ctest-cases: cross_backend.mod-attention-cache.from_tf mod-attention-cache tf
# ctest-cases: cross_backend.mod-conformer-rf.from_tf mod-conformer-rf tf
# ctest-cases: cross_backend.mod-transformer-rf.from_tf mod-transformer-rf tf
# ctest-cases: cross_backend.mod-conformer-order.from_tf mod-conformer-order tf
# ctest-cases: cross_backend.mod-e-branchformer.from_tf mod-e-branchformer tf
# ctest-cases: cross_backend.mod-transformer-postnorm.from_tf mod-transformer-postnorm tf
# ctest-cases: cross_backend.mod-transformer-llama.from_tf mod-transformer-llama tf
# ctest-cases: cross_backend.mod-conformer-ctc.from_tf mod-conformer-ctc tf
# ctest-cases: cross_backend.mod-lstm-state.from_tf mod-lstm-state tf
# ctest-cases: cross_backend.mod-stepwise-decoder.from_tf mod-stepwise-decoder tf
# ctest-cases: cross_backend.op-cond.from_tf op-cond tf
# ctest-cases: cross_backend.mod-batch-norm-options.from_tf mod-batch-norm-options tf
# ctest-cases: cross_backend.mod-stepwise-decoder-rel-pos.from_tf mod-stepwise-decoder-rel-pos tf
# ctest-cases: cross_backend.mod-rel-pos-encoding.from_tf mod-rel-pos-encoding tf
# ctest-cases: cross_backend.op-scatter.from_tf op-scatter tf
# ctest-cases: cross_backend.op-dims-from-sizes.from_tf op-dims-from-sizes tf
# ctest-cases: cross_backend.op-ctc-durations.from_tf op-ctc-durations tf
# ctest-cases: cross_backend.12ax.from_torch 12ax torch
# ctest-cases: cross_backend.transformer-copy.from_torch transformer-copy torch
# ctest-cases: cross_backend.conformer-ctc.from_torch conformer-ctc torch
# ctest-cases: cross_backend.sweep sweep

import os
import subprocess
import sys

import numpy

# torch and its compiler (which the optimizer imports lazily, and which loads
# triton's LLVM) before TensorFlow: otherwise both register LLVM's options
# and the process aborts.
import torch  # noqa: E402
import torch._dynamo  # noqa: E402,F401
import torch_probe  # noqa: E402
from torch_probe import TorchNet  # noqa: E402
import returnn_probe  # noqa: E402
from returnn_probe import Net  # noqa: E402
import retc_runtime  # noqa: E402  (returnn_probe put runtime/ on the path)
import returnn.tf.compat as tf_compat  # noqa: E402

TOL = 1e-4
BUNDLED = ["12ax", "12ax-wn", "blstm-tagger", "lstm-lm", "transformer-copy", "conformer-ctc", "conformer-12x512"]
# The models whose checkpoints go through `retc convert-checkpoint` (an LSTM,
# attention, a conformer: each kind of param layout the conversion carries).
CONVERTED = ["12ax", "transformer-copy", "conformer-ctc"]


def perturbed(name, value, rng):
    if "variance" in name:
        return rng.uniform(0.5, 1.5, value.shape).astype(value.dtype)
    return (value + rng.normal(0.0, 0.1, value.shape)).astype(value.dtype)


def tf_output(net, feed, name):
    """An output layer's value in its own axis order, with its dims' names and lengths."""
    with net.graph.as_default():
        out = net.net.get_layer(name).output
        lengths = {}
        for tag in out.dim_tags:
            if not tag.is_batch_dim() and tag.dimension is None:
                lengths[tag.description] = tag.dyn_size_ext.placeholder
        value, lens = net.session.run((out.placeholder, lengths), feed_dict=feed)
    names = ["batch" if tag.is_batch_dim() else tag.description for tag in out.dim_tags]
    return value, names, lens


def torch_outputs(tnet, batch):
    """{mark name: Tensor} of the torch model's marked outputs in evaluation."""
    import returnn.frontend as rf
    from returnn.torch.data import extern_data as extern_data_util

    raw, template = batch
    extern_data = extern_data_util.raw_dict_to_extern_data(
        raw, extern_data_template=template, device="cpu", with_eval_targets=True)
    rf.init_train_step_run_ctx(train_flag=False, step=0, epoch=1)
    with torch.no_grad():
        return tnet.config.typed_value("train_step")(model=tnet.model, extern_data=extern_data)


def raw_in_order(out, names, shape):
    """out's raw values with its axes in the order of TF's dims `names` (of
    sizes `shape`): matched by name, or where TF named a dim itself (a slice's
    or merge's out dim), by size among the rest."""
    own = ["batch" if d.is_batch_dim() else d.name for d in out.dims]
    raw = out.raw_tensor.detach().cpu().numpy()
    order, free = [], [i for i, n in enumerate(own) if n not in names]
    for name, size in zip(names, shape):
        if name in own:
            order.append(own.index(name))
            continue
        fits = [i for i in free if raw.shape[i] == size]
        assert fits, ("no torch dim for TF's", name, own, names)
        order.append(fits[0])
        free.remove(fits[0])
    return raw.transpose(order)


def masked(value, names, lengths):
    """Frames past a sequence's end set to 0 (an output without the batch axis,
    e.g. a relative-position encoding over the longest sequence's frames: as is)."""
    if "batch" not in names:
        return value
    value = value.copy()
    b = names.index("batch")
    for name, lens in lengths.items():
        axis = names.index(name)
        for i, n in enumerate(lens):
            index = [slice(None)] * value.ndim
            index[b], index[axis] = i, slice(int(n), None)
            value[tuple(index)] = 0
    return value


# Models whose random batch needs more frames than `retc check`'s 7: raw audio
# (a 400-sample STFT window; lengths 1,998 to 2,000 samples).
BATCH = {"mod-log-mel": dict(max_time=2000)}
# Outputs compared relative to their largest value: the power spectrum of 400
# random N(0, 1) samples per window reaches about 1e3 (float32's rounding there:
# 1e-4).
RELATIVE = {("mod-log-mel", "power")}


def compare(net, tnet, what, model):
    """Every marked output (the TF layer of the mark's name) on the same batch."""
    feed = net.feed(5, **BATCH.get(model, {}))
    outputs = torch_outputs(tnet, tnet.batch(5, **BATCH.get(model, {})))
    assert outputs, what + ": no outputs"
    for name, out in sorted(outputs.items()):
        a, names, lengths = tf_output(net, feed, name)
        b = raw_in_order(out, names, a.shape)
        # The dynamic dims have TF's lengths (a strided conv's too).
        for d in out.dims:
            if d.name in lengths:
                got = d.dyn_size_ext.raw_tensor.cpu().numpy()
                assert (got == lengths[d.name]).all(), (what, name, d.name, got, lengths[d.name])
        assert a.shape == b.shape, (what, name, a.shape, b.shape)
        a, b = masked(a, names, lengths), masked(b, names, lengths)
        diff = float(numpy.abs(a - b).max())
        scale = float(numpy.abs(a).max())
        print("%s: %s %s %s, max |tf - torch| = %.3g (max |value| %.3g)" % (
            what, name, names, list(a.shape), diff, scale))
        tol = TOL * max(1.0, scale) if (model, name) in RELATIVE else TOL
        assert diff <= tol, "%s: %s differs by %g > %g" % (what, name, diff, tol)


def convert(model, src, in_path, out_path):
    binary = os.environ["RETC" if model in BUNDLED else "RETC_TEST_MODELS"]
    subprocess.run([binary, "convert-checkpoint", model, "--from", src, in_path, out_path], check=True)


def main(model, src=None):
    """src "tf": TF -> torch; "torch": torch -> TF (one direction of a model
    per process: RETURNN's TF dim tags do not survive a second network of one
    config); model "sweep": sweep()."""
    if model == "sweep":
        return sweep()
    rng = numpy.random.RandomState(7)
    tmp = returnn_probe.TMP
    binary = os.environ["RETC" if model in BUNDLED else "RETC_TEST_MODELS"]
    tf_config = returnn_probe.compile_model(model, binary)
    torch_config = torch_probe.compile_model(model, binary)
    if src == "torch":
        return torch_to_tf(model, tf_config, torch_config, rng, tmp)
    net = Net(tf_config, train_flag=False)
    variables, state = perturb_tf(net, rng)
    if model in PARAM_FORMULAS:
        check_params(model, variables)
    if model not in CONVERTED:
        tnet = TorchNet(torch_config, with_updater=False)
        tnet.pt_model.load_state_dict(state, strict=True)
        return compare(net, tnet, model + " tf -> torch", model)
    with net.graph.as_default():
        global_step = tf_compat.v1.train.get_or_create_global_step()
        net.session.run(global_step.initializer)
        saver = tf_compat.v1.train.Saver(var_list=variables + [global_step])
        prefix = os.path.join(tmp, "tf", "network.003")
        os.makedirs(os.path.dirname(prefix), exist_ok=True)
        saver.save(net.session, prefix, write_meta_graph=False, write_state=False)
    pt = os.path.join(tmp, "from_tf.pt")
    convert(model, "tf", prefix, pt)
    tnet = TorchNet(torch_config)
    ckpt = torch.load(pt, weights_only=False)
    assert ckpt["epoch"] == 3, ckpt["epoch"]
    tnet.pt_model.load_state_dict(ckpt["model"], strict=True)
    compare(net, tnet, model + " tf -> torch", model)


def conformer_12x512_params():
    """conformer-12x512's variables and param count by the formulas of test_modules.py."""
    from test_modules import conformer_block, conformer_frontend

    want, count = conformer_frontend("encoder/frontend", 80, 32, 64, 512)
    for i in range(12):
        block, block_count = conformer_block("encoder/layers/%d" % i, 512, 2048, 8, 31, 16)
        want |= block
        count += block_count
    want |= {"out/weight/param:0": [512, 1001], "out/bias/param:0": [1001]}  # 1000 labels + blank
    return want, count + 512 * 1001 + 1001


# The bundled models of realistic size whose TF variables are checked against their
# formula, here where their TF network is built anyway ({model: () -> (variables, count)}).
PARAM_FORMULAS = {"conformer-12x512": conformer_12x512_params}


def check_params(model, variables):
    got = {v.name: [int(d) for d in v.shape.as_list()] for v in variables
           if not returnn_probe._is_random_state(v)}
    total = sum(int(numpy.prod(shape)) for shape in got.values())
    want, count = PARAM_FORMULAS[model]()
    assert got == want, sorted(set(got) ^ set(want))[:5]
    assert total == count, (total, count)
    print("%s: %d variables, %d parameters (formula: %d)" % (model, len(got), total, count))


def perturb_tf(net, rng):
    """Every param of the TF network perturbed in place; returns its
    variables and {torch state_dict key: value} (a param's path, as the
    conversion maps it)."""
    with net.graph.as_default():
        variables = net.net.get_params_list()
        state, feed, inits = {}, {}, []
        for v, value in zip(variables, net.session.run(variables)):
            if returnn_probe._is_random_state(v):
                continue  # a random layer's generator state: no param (none on torch)
            value = perturbed(v.name, value, rng)
            feed[v.initializer.inputs[1]] = value  # what v.load feeds, all in one run
            inits.append(v.initializer)
            state[v.name[:-len("/param:0")].replace("/", ".")] = torch.from_numpy(value)
        # One run: a v.load each costs a run with its own executor (26 s for conformer-12x512's 392).
        net.session.run(inits, feed_dict=feed)
    return variables, state


def torch_to_tf(model, tf_config, torch_config, rng, tmp):
    """torch's perturbed params through `retc convert-checkpoint --from torch`."""
    assert model in CONVERTED, model + ": the torch -> TF direction is for the converted models"
    tnet = TorchNet(torch_config)
    with torch.no_grad():
        for name, value in tnet.pt_model.state_dict().items():
            value.copy_(torch.from_numpy(perturbed(name, value.numpy(), rng)))
    pt = os.path.join(tmp, "network.004.pt")
    torch.save({"model": tnet.pt_model.state_dict(), "epoch": 4, "step": 40}, pt)
    prefix = os.path.join(tmp, "tf2", "network.004")
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    convert(model, "torch", pt, prefix)
    net = Net(tf_config, train_flag=False)
    with net.graph.as_default():
        net.net.load_params_from_file(prefix, session=net.session)
    compare(net, tnet, model + " torch -> tf", model)


def sweep():
    """Every op of the sweep (plain, broadcast, in a loop, as a loop state, without a
    feature dim, on a static time, under a random bool mask) on
    both backends, in one process: the TF model's perturbed params loaded into
    the torch model by name; each marked output within 1e-4. Models with
    random values in the step stage are left out: TF's and numpy's generators
    differ (the random op's own test checks its distribution)."""
    models = returnn_probe.sweep_models()
    rng = numpy.random.RandomState(7)
    compared, skipped, failures = 0, [], []
    for model in models:
        ir = subprocess.run([os.environ["RETC_TEST_MODELS"], "dump-ir", model, "--stage", "step"], check=True,
                            capture_output=True, text=True).stdout
        if " = random " in ir:
            skipped.append(model)
            continue
        try:
            tf_config = returnn_probe.compile_model(model)
            torch_config = torch_probe.compile_model(model)
            net = Net(tf_config, train_flag=False)
            tnet = TorchNet(torch_config, with_updater=False)
            tnet.pt_model.load_state_dict(perturb_tf(net, rng)[1], strict=True)
            compare(net, tnet, model, model)
            net.close()
            compared += 1
        except Exception as exc:  # noqa: BLE001: every failure is reported below
            failures.append("%s: %s" % (model, retc_runtime.error_line(exc)[:300]))
        finally:
            returnn_probe.reset_batch_dim()  # for the next model's TF network
    assert not failures, "\n".join(failures)
    print("sweep: %d models give the same outputs on both backends; left out (random values): %s" % (
        compared, ", ".join(skipped)))


if __name__ == "__main__":
    main(*sys.argv[1:])
