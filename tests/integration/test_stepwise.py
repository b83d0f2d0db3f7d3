"""The stepwise Transformer decoder (SelfAttention::step: one frame at a time,
the keys and values of the frames so far cached with cum_concat) gives the
outputs of the full-sequence decoder (causal self-attention over the whole
target) on the same input and params, within 1e-5, on both backends
(test models mod-stepwise-decoder, RETURNN's fused causal self-attention,
and mod-stepwise-decoder-rf, rf's layers: a QKV bias, so primitive ops, and a
fused cross-attention kv; mod-stepwise-decoder-llama, rotary positions (the
step's keys rotated at their own frame, a frame counter), RMS norms, SwiGLU;
mod-stepwise-decoder-rel-pos, learned relative positions clipped at 3: RETURNN's
fused causal layer with its relative_positional_encoding against the step's
table rows by offset; evaluation, random batch).

Run by ctest as `python test_stepwise.py`.
"""
# ctest-cases: modules.stepwise_decoder

import numpy

import torch  # noqa: F401  (before TensorFlow, see test_cross_backend.py)
import torch._dynamo  # noqa: F401
import torch_probe
import returnn_probe

TOL = 1e-5
MODELS = ("mod-stepwise-decoder", "mod-stepwise-decoder-rf", "mod-stepwise-decoder-llama",
          "mod-stepwise-decoder-rel-pos")


def masked_diff(full, step, lengths):
    """max |full - step| over the frames within each sequence's length ([B, T, F])."""
    worst = 0.0
    for b, n in enumerate(lengths):
        worst = max(worst, float(numpy.abs(full[b, :n] - step[b, :n]).max()))
    return worst


def tf_check(model):
    returnn_probe.reset_batch_dim()  # the torch run's batch size
    net = returnn_probe.Net(returnn_probe.compile_model(model), train_flag=False)
    feed = net.feed(3)
    with net.graph.as_default():
        lens = net.session.run(net.net.extern_data.data["data"].get_sequence_lengths(), feed_dict=feed)
        full, step = (net.session.run(net.net.get_layer(name).output.copy_as_batch_major().placeholder,
                                      feed_dict=feed) for name in ("full", "stepwise"))
    return full, step, lens


def torch_check(model):
    import returnn.frontend as rf
    from returnn.torch.data import extern_data as extern_data_util

    tnet = torch_probe.TorchNet(torch_probe.compile_model(model), with_updater=False)
    raw, template = tnet.batch(3)
    extern_data = extern_data_util.raw_dict_to_extern_data(
        raw, extern_data_template=template, device="cpu", with_eval_targets=True)
    rf.init_train_step_run_ctx(train_flag=False, step=0, epoch=1)
    with torch.no_grad():
        out = tnet.config.typed_value("train_step")(model=tnet.model, extern_data=extern_data)
    full, step = out["full"], out["stepwise"]
    step = step.copy_transpose(full.dims)
    return full.raw_tensor.numpy(), step.raw_tensor.numpy(), raw["data:seq_len"].numpy()


def main():
    for model in MODELS:
        for backend, check in (("torch", torch_check), ("tf", tf_check)):
            full, step, lens = check(model)
            assert full.shape == step.shape, (model, backend, full.shape, step.shape)
            diff = masked_diff(full, step, lens)
            print("%s on %s: stepwise vs full decoder %s, lengths %s: max |diff| = %.3g (max |value| %.3g)"
                  % (model, backend, list(full.shape), list(lens), diff, float(numpy.abs(full).max())))
            assert diff <= TOL, "%s on %s: the stepwise decoder differs by %g > %g" % (model, backend, diff, TOL)


if __name__ == "__main__":
    main()
