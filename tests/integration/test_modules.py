"""Module library and functional ops in RETURNN: for each module test model,
RETURNN constructs it and runs it once on random data (`retc check`), its
variable names and shapes equal the IR's, and the param count equals the
formula written here; numbers are checked where an op has numbers to check.

Run alone as `python test_modules.py NAME`; ctest runs the cases in groups (cases.py).
"""
# ctest-group: 15  (cases per process: tests/integration/cases.py)

import json
import os
import re
import subprocess
import sys

import numpy

import returnn_probe  # noqa: E402
from returnn_probe import TMP, Net, close, compile_model

BIN = os.environ["RETC_TEST_MODELS"]

# name: (variables {name: shape}, param count formula)
IN, C = 5, 3
EXPECTED = {
    "mod-layer-norm": (
        {"norm/scale/param:0": [IN], "norm/bias/param:0": [IN], "out/weight/param:0": [IN, C], "out/bias/param:0": [C]},
        2 * IN + IN * C + C,
    ),
    "mod-rms-norm": ({"norm/scale/param:0": [IN], "out/weight/param:0": [IN, C], "out/bias/param:0": [C]}, IN + IN * C + C),
    "mod-embedding": (
        {"embed/weight/param:0": [7, 6], "out/weight/param:0": [6, C], "out/bias/param:0": [C]},
        7 * 6 + 6 * C + C,
    ),
    "mod-blstm": (
        {
            "blstm/fw/ff_weight/param:0": [IN, 16], "blstm/fw/rec_weight/param:0": [4, 16], "blstm/fw/bias/param:0": [16],
            "blstm/bw/ff_weight/param:0": [IN, 12], "blstm/bw/rec_weight/param:0": [3, 12], "blstm/bw/bias/param:0": [12],
            "out/weight/param:0": [7, C], "out/bias/param:0": [C],
        },
        # LSTM: 4 gates x (in + out + 1) x out, per direction; then 7 -> 3 linear
        4 * 4 * (IN + 4 + 1) + 4 * 3 * (IN + 3 + 1) + 7 * C + C,
    ),
    "op-functional": (
        {"frame/weight/param:0": [2 * IN, C], "frame/bias/param:0": [C], "pooled/weight/param:0": [IN, C],
         "pooled/bias/param:0": [C]},
        2 * IN * C + C + IN * C + C,
    ),
}
ATT = {"att/qkv/param:0": [IN, 2 * 8 + 6], "att/proj/weight/param:0": [6, IN], "att/proj/bias/param:0": [IN],
       "out/weight/param:0": [IN, C], "out/bias/param:0": [C]}
EXPECTED["mod-self-attention"] = (ATT, IN * (2 * 8 + 6) + 6 * IN + IN + IN * C + C)
EXPECTED["mod-causal-attention"] = (ATT, IN * (2 * 8 + 6) + 6 * IN + IN + IN * C + C)
D, FF = 8, 16
LAYER = {"ln1/scale": [D], "ln1/bias": [D], "self_att/qkv": [D, 3 * D], "self_att/proj/weight": [D, D],
         "self_att/proj/bias": [D], "ln2/scale": [D], "ln2/bias": [D], "ff1/weight": [D, FF], "ff1/bias": [FF],
         "ff2/weight": [FF, D], "ff2/bias": [D]}
TRANSFORMER = {"in_proj/weight/param:0": [IN, D], "in_proj/bias/param:0": [D], "out/weight/param:0": [D, C],
               "out/bias/param:0": [C], "encoder/final_norm/scale/param:0": [D], "encoder/final_norm/bias/param:0": [D]}
for i in range(2):
    for k, v in LAYER.items():
        TRANSFORMER["encoder/layers/%d/%s/param:0" % (i, k)] = v
# per layer: 2 LN (2D each), QKV D*3D, proj D*D + D, FF D*FF + FF + FF*D + D
PER_LAYER = 4 * D + 3 * D * D + D * D + D + D * FF + FF + FF * D + D
EXPECTED["mod-transformer"] = (TRANSFORMER, IN * D + D + 2 * PER_LAYER + 2 * D + D * C + C)


EXPECTED["mod-conv1d"] = ({"weight/param:0": [3, IN, C], "bias/param:0": [C]}, 3 * IN * C + C)

OUT = {"out/weight/param:0": [IN, C], "out/bias/param:0": [C]}
EXPECTED["mod-conv2d"] = (
    {"conv/weight/param:0": [3, 3, 1, 4], "conv/bias/param:0": [4], "out/weight/param:0": [12, C], "out/bias/param:0": [C]},
    # 3x3 kernel, 1 -> 4 channels; pooled features ceil(5/2) = 3 times 4 channels -> classes
    9 * 4 + 4 + 12 * C + C,
)
EXPECTED["mod-conv-stride"] = (
    {"strided/weight/param:0": [3, IN, 4], "strided/bias/param:0": [4], "depthwise/weight/param:0": [5, 1, 4],
     "depthwise/bias/param:0": [4], **OUT},
    # kernel 3, 5 -> 4; depthwise kernel 5, in/groups = 1
    3 * IN * 4 + 4 + 5 * 1 * 4 + 4 + IN * C + C,
)
EXPECTED["mod-batch-norm"] = (
    {"norm/%s/param:0" % k: [IN] for k in ("scale", "bias", "running_mean", "running_var")} | OUT,
    4 * IN + IN * C + C,
)
EXPECTED["mod-rel-pos-attention"] = (
    ATT | {"att/rel_pos/param:0": [5, 4]},
    # as mod-self-attention, plus the table [2 * clipping + 1, key / heads]
    IN * (2 * 8 + 6) + 6 * IN + IN + (2 * 2 + 1) * (8 // 2) + IN * C + C,
)
EXPECTED["mod-sequential"] = (
    {"0/weight/param:0": [IN, 6], "0/bias/param:0": [6], "3/weight/param:0": [6, C], "3/bias/param:0": [C]},
    IN * 6 + 6 + 6 * C + C,
)
EXPECTED["op-shapes"] = (OUT, IN * C + C)
EXPECTED["op-select"] = ({"weight/param:0": [7, C], "bias/param:0": [C]}, 7 * C + C)
EXPECTED["mod-loop"] = (
    {"in/weight/param:0": [IN, 4], "in/bias/param:0": [4], "rec/weight/param:0": [4, 4],
     "out/weight/param:0": [4, C], "out/bias/param:0": [C]},
    IN * 4 + 4 + 4 * 4 + 4 * C + C,
)


def conformer_block(prefix, d, ff, heads, kernel, clipping):
    """Variables of one Conformer block, and its param count formula."""
    v = {}
    for norm in ("ff1_norm", "att_norm", "conv_norm", "ff2_norm", "final_norm"):
        v[norm + "/scale"] = [d]
        v[norm + "/bias"] = [d]
    for f in ("ff1", "ff2"):
        v.update({f + "/linear_ff/weight": [d, ff], f + "/linear_ff/bias": [ff], f + "/linear_out/weight": [ff, d],
                  f + "/linear_out/bias": [d]})
    v.update({"self_att/qkv": [d, 3 * d], "self_att/rel_pos": [2 * clipping + 1, d // heads],
              "self_att/proj/weight": [d, d], "self_att/proj/bias": [d]})
    v.update({"conv/pointwise_conv1/weight": [d, 2 * d], "conv/pointwise_conv1/bias": [2 * d],
              "conv/depthwise_conv/weight": [kernel, 1, d], "conv/depthwise_conv/bias": [d],
              "conv/pointwise_conv2/weight": [d, d], "conv/pointwise_conv2/bias": [d]})
    for k in ("scale", "bias", "running_mean", "running_var"):
        v["conv/norm/" + k] = [d]
    count = (10 * d  # 5 layer norms
             + 2 * (d * ff + ff + ff * d + d)  # 2 feed-forward modules
             + 3 * d * d + (2 * clipping + 1) * (d // heads) + d * d + d  # MHSA: QKV, rel-pos table, proj
             + d * 2 * d + 2 * d + kernel * d + d + 4 * d + d * d + d)  # conv module (depthwise, batch norm)
    return {"%s/%s/param:0" % (prefix, k): shape for k, shape in v.items()}, count


def conformer_frontend(prefix, feat, c1, c2, d):
    v = {"conv1/weight": [3, 3, 1, c1], "conv1/bias": [c1], "conv2/weight": [3, 3, c1, c2], "conv2/bias": [c2],
         "linear/weight": [(feat + 1) // 2 * c2, d], "linear/bias": [d]}
    # two 3x3 convs; the features max-pooled by 2 (ceil), times c2 channels, -> model dim
    count = 9 * c1 + c1 + 9 * c1 * c2 + c2 + (feat + 1) // 2 * c2 * d + d
    return {"%s/%s/param:0" % (prefix, k): shape for k, shape in v.items()}, count


FRONT, FRONT_COUNT = conformer_frontend("encoder/frontend", IN, 4, 6, 8)
BLOCK, BLOCK_COUNT = conformer_block("encoder/layers/0", 8, 16, 2, 3, 2)
EXPECTED["mod-conformer-ctc"] = (
    FRONT | BLOCK | {"out/weight/param:0": [8, 4], "out/bias/param:0": [4]},
    FRONT_COUNT + BLOCK_COUNT + 8 * (C + 1) + C + 1,  # output: the classes and the blank
)
S2S = {"src_embed/weight/param:0": [6, D], "tgt_embed/weight/param:0": [6, D], "out/weight/param:0": [D, 6],
       "out/bias/param:0": [6], "encoder/final_norm/scale/param:0": [D], "encoder/final_norm/bias/param:0": [D],
       "decoder/final_norm/scale/param:0": [D], "decoder/final_norm/bias/param:0": [D]}
for k, v in LAYER.items():
    S2S["encoder/layers/0/%s/param:0" % k] = v
    S2S["decoder/layers/0/%s/param:0" % k] = v  # the decoder's ln1, self_att, ln2, ff1, ff2
S2S |= {"decoder/layers/0/ln3/scale/param:0": [D], "decoder/layers/0/ln3/bias/param:0": [D],
        "decoder/layers/0/cross_att/query/weight/param:0": [D, D],
        "decoder/layers/0/cross_att/key/weight/param:0": [D, D],
        "decoder/layers/0/cross_att/value/weight/param:0": [D, D],
        "decoder/layers/0/cross_att/proj/weight/param:0": [D, D], "decoder/layers/0/cross_att/proj/bias/param:0": [D]}
# embeddings, encoder layer + final norm, decoder layer (+ ln3 and cross-attention) + final norm, output
S2S_COUNT = 2 * 6 * D + PER_LAYER + 2 * D + PER_LAYER + 2 * D + 3 * D * D + D * D + D + 2 * D + D * 6 + 6
EXPECTED["mod-seq2seq"] = (S2S, S2S_COUNT)


def test_structure():
    """RETURNN constructs each model with the variables at their module
    paths, of the IR's shapes, as many params as the formula counts, and a
    finite training loss on random data."""
    for model, (variables, count) in EXPECTED.items():
        got = returnn_probe.constructed(model)
        assert got == variables, (model, got)
        total = sum(int(numpy.prod(shape)) for shape in got.values())
        assert total == count, (model, total, count)
        ir = json.loads(subprocess.run([BIN, "dump-ir", model, "--format", "json"], check=True, capture_output=True,
                                       text=True).stdout)
        sizes = {d["id"]: d["size"] for d in ir["dims"]}
        # The TF target names a param's variable by its path (emit/tf/naming.h).
        from_ir = {p["path"].replace(".", "/") + "/param:0": [sizes[d] for d in p["dims"]] for p in ir["params"]}
        assert from_ir == got, (model, from_ir)
        print("%-15s %d variables, %d params = formula" % (model, len(got), total))


def test_norms():
    x_eps = 1e-6
    ln = Net(compile_model("mod-layer-norm"), train_flag=False)
    feed = ln.feed(4)
    x = ln.layer("data:data", feed).astype("float64")
    want = (x - x.mean(-1, keepdims=True)) / numpy.sqrt(x.var(-1, keepdims=True) + x_eps)
    close(ln.layer("norm.add", feed), want, 1e-4, "layer norm")
    rms = Net(compile_model("mod-rms-norm"), train_flag=False)
    feed = rms.feed(4)
    x = rms.layer("data:data", feed).astype("float64")
    close(rms.layer("norm.mul_2", feed), x / numpy.sqrt((x ** 2).mean(-1, keepdims=True) + x_eps), 1e-4, "rms norm")
    print("layer norm and RMS norm match numpy")


def test_embedding():
    net = Net(compile_model("mod-embedding"), train_flag=False)
    feed = net.feed(2)
    ids = net.layer("data:data", feed)
    w = net.variable("embed/weight/param:0")
    close(net.layer("embed.gather", feed), w[ids], 0, "gathered rows")
    print("embedding rows gathered")


def test_functional():
    net = Net(compile_model("op-functional"), train_flag=False)
    feed = net.feed(6)
    x = net.layer("data:data", feed)
    w = net.layer("softmax", feed)  # [B, T, F], softmax over T within each sequence's length
    data = net.net.extern_data.data["data"]
    seq_lens = net.run(data.get_sequence_lengths(), feed)
    for b, n in enumerate(seq_lens):
        close(w[b, :n].sum(axis=0), numpy.ones(w.shape[-1]), 1e-5, "softmax over time sums to 1")
        e = numpy.exp(x[b, :n] - x[b, :n].max(axis=0))
        close(w[b, :n], e / e.sum(axis=0), 1e-5, "softmax values")
    logits = net.layer("output", feed)
    close(net.layer("log_probs", feed), logits - numpy.log(numpy.exp(logits).sum(-1, keepdims=True)), 1e-4, "log_softmax")
    close(net.layer("max_logit", feed), logits.max(-1), 1e-6, "reduce max")
    both = net.layer("concat", feed)
    assert both.shape[-1] == 10
    close(both[..., :5], x, 0, "concat keeps the first part")
    normed = both[..., 5:]
    close(net.layer("min_xy", feed), numpy.minimum(x, normed), 0, "minimum")
    close(net.layer("max_x", feed), numpy.maximum(x, 0.25), 0, "maximum with a scalar")
    print("softmax over time (masked), log_softmax, reduce, concat, normalize, minimum, maximum: checked")


def test_logic():
    """logical and / or of masks, argmax / argmin over the classes (int32, sparse)."""
    net = Net(compile_model("op-logic"), train_flag=False)
    feed = net.feed(4)
    x = feed[net.net.extern_data.data["data"].placeholder]
    pos, small = x > 0, x < 0.5
    close(net.layer("both", feed), (pos & small).astype("float32"), 0, "logical_and")
    close(net.layer("either", feed), (pos | small).astype("float32"), 0, "logical_or")
    logits = net.layer("output", feed)
    best, worst = net.layer("best", feed), net.layer("worst", feed)
    assert best.dtype == numpy.int32, best.dtype
    close(best, logits.argmax(-1), 0, "argmax")
    close(worst, logits.argmin(-1), 0, "argmin")
    assert net.net.get_layer("best").output.sparse_dim.dimension == 3
    print("logical_and, logical_or, argmax, argmin: match numpy")


def test_blstm_directions():
    """The backward LSTM's first frame depends on the last frame; the forward one's does not."""
    net = Net(compile_model("mod-blstm"), train_flag=False)
    feed = net.feed(3)
    data = net.net.extern_data.data["data"]
    x = feed[data.placeholder].copy()
    fw0, bw0 = net.layer("blstm.fw.lstm", feed), net.layer("blstm.bw.lstm", feed)
    seq_lens = net.run(data.get_sequence_lengths(), feed)
    b = int(numpy.argmax(seq_lens))
    last = seq_lens[b] - 1
    x[b, last] += 5.0
    feed[data.placeholder] = x
    fw1, bw1 = net.layer("blstm.fw.lstm", feed), net.layer("blstm.bw.lstm", feed)
    assert numpy.allclose(fw0[b, 0], fw1[b, 0]), "forward LSTM frame 0 saw the future"
    assert not numpy.allclose(bw0[b, 0], bw1[b, 0]), "backward LSTM frame 0 did not see the last frame"
    print("BLSTM: forward causal, backward anti-causal")


def test_attention_causality():
    """Causal: frame 0 ignores later frames; plain: it attends to all of them."""
    for model, causal in [("mod-causal-attention", True), ("mod-self-attention", False)]:
        net = Net(compile_model(model), train_flag=False)
        feed = net.feed(8)
        data = net.net.extern_data.data["data"]
        seq_lens = net.run(data.get_sequence_lengths(), feed)
        b = int(numpy.argmax(seq_lens))
        before = net.layer("attended", feed)
        x = feed[data.placeholder].copy()
        x[b, seq_lens[b] - 1] += 3.0
        feed[data.placeholder] = x
        after = net.layer("attended", feed)
        same = numpy.allclose(before[b, 0], after[b, 0], atol=1e-6)
        assert same == causal, (model, same)
        # Padding never leaks in: changing frames past the length changes nothing.
        short = int(numpy.argmin(seq_lens))
        x[short, seq_lens[short]:] += 7.0
        feed[data.placeholder] = x
        again = net.layer("attended", feed)
        close(again[short, : seq_lens[short]], after[short, : seq_lens[short]], 1e-5, model + " padding")
    print("causal attention ignores the future; plain attention sees it; padding is masked")


def test_conv1d():
    """Same padding, dilation 2: y[t] = b + sum_k x[t + 2(k-1)] W[k], zeros outside each sequence."""
    net = Net(compile_model("mod-conv1d"), train_flag=False)
    feed = net.feed(9)
    x = net.layer("data:data", feed).astype("float64")
    w = net.variable("weight/param:0").astype("float64")
    bias = net.variable("bias/param:0")
    y = net.layer("conv_out", feed)
    # Frames past each sequence's end count as zeros (use_time_mask).
    lens = net.run(net.net.extern_data.data["data"].get_sequence_lengths(), feed)
    for b, n in enumerate(lens):
        x[b, n:] = 0
    T = x.shape[1]
    pad = numpy.zeros((x.shape[0], T + 4, x.shape[2]))
    pad[:, 2:T + 2] = x
    want = bias + sum(pad[:, 2 + 2 * (k - 1): 2 + 2 * (k - 1) + T] @ w[k] for k in range(3))
    close(y, want, 1e-4, "conv1d")
    print("conv1d (kernel 3, dilation 2, same padding) matches numpy")


def test_array_ops():
    """cumsum, top_k (values and indices), logical_not and pad (static; dynamic, after each
    sequence's end) against numpy."""
    net = Net(compile_model("op-array"), train_flag=False)
    feed = net.feed(4)
    x = net.layer("data:data", feed).astype("float64")
    lens = seq_lens(net, feed)
    cs, values, indices = net.layer("cumsum", feed), net.layer("top_values", feed), net.layer("top_indices", feed)
    not_positive, pad_feature = net.layer("not_positive", feed), net.layer("pad_feature", feed)
    pad_time = net.layer("pad_time", feed)
    with net.graph.as_default():
        pad_lens = net.net.get_layer("pad_time").output.get_time_dim_tag().dyn_size_ext.placeholder
    assert list(net.run(pad_lens, feed)) == [n + 3 for n in lens], (net.run(pad_lens, feed), lens)
    for b, n in enumerate(lens):
        close(cs[b, :n], numpy.cumsum(x[b, :n], axis=0), 1e-5, "cumsum")
        close(values[b, :n], -numpy.sort(-x[b, :n], axis=-1)[:, :3], 1e-6, "top_k values")
        close(numpy.take_along_axis(x[b, :n], indices[b, :n].astype(int), -1), values[b, :n], 1e-6,
              "top_k indices")
        close(not_positive[b, :n], (x[b, :n] <= 0).astype("float64"), 0, "logical_not")
        want = numpy.concatenate([numpy.full((n, 1), -1.0), x[b, :n], numpy.full((n, 2), -1.0)], -1)
        close(pad_feature[b, :n], want, 1e-6, "pad of the features")
        want = numpy.concatenate([numpy.full((2, 5), 0.5), x[b, :n], numpy.full((1, 5), 0.5)], 0)
        close(pad_time[b, :n + 3], want, 1e-6, "pad of time, sequence %d" % b)
    print("cumsum, top_k, logical_not, pad (features; time: lengths %s -> %s) match numpy" % (
        list(lens), [n + 3 for n in lens]))
    # Dots plus a bias: one linear layer on TF (a weight stored [out, in]; x and 2x stacked), and
    # a dot with a second user, which stays a dot.
    net_dict = net.config.typed_value("network")
    linears = sorted(k for k, v in net_dict.items() if v["class"] == "eval" and v["eval"].startswith("linear("))
    assert linears == ["linear_over_two", "linear_stacked", "linear_t", "output"], linears
    assert net_dict["dot_plus_bias"]["class"] == "combine", net_dict["dot_plus_bias"]
    params = {k.split("/param")[0]: v.astype("float64") for k, v in net.params().items()}
    w, bias, w_t, b_t = params["lin/weight"], params["lin/bias"], params["w_t"], params["b_t"]
    stacked, names = _named(net, feed, "linear_stacked")
    stacked = numpy.moveaxis(stacked, [names.index("batch"), names.index("time"), names.index("classes")], [0, 1, -1])
    for b, n in enumerate(lens):
        close(net.layer("output", feed)[b, :n], x[b, :n] @ w + bias, 1e-5, "linear")
        close(net.layer("linear_t", feed)[b, :n], x[b, :n] @ w_t.T + b_t, 1e-5, "linear, weight [out, in]")
        close(net.layer("dot_plus_bias", feed)[b, :n], x[b, :n] @ w + bias, 1e-5, "dot plus bias")
        close(net.layer("dot_twice", feed)[b, :n], 2 * (x[b, :n] @ w), 1e-5, "the dot's second user")
    assert stacked.shape[2] == 2, (stacked.shape, names)
    for k in range(2):
        got = stacked[:, :, k]
        for b, n in enumerate(lens):
            close(got[b, :n], (k + 1) * x[b, :n] @ w + bias, 1e-5, "linear of stacked values, part %d" % k)
    over_two, names = _named(net, feed, "linear_over_two")
    over_two = numpy.moveaxis(over_two, [names.index(d) for d in ("batch", "time", "classes", "input")], range(4))
    w_two = params["w_two"]
    for b, n in enumerate(lens):
        close(over_two[b, :n], x[b, :n, None, :] * (w_two[0] + 2 * w_two[1])[None, :, None]
              + b_t[None, :, None], 1e-5, "linear over the stacked dim (not the last)")
    print("dots plus a bias as one linear layer (weight [in, out] and [out, in], stacked values, over a "
          "dim not the last) and a shared dot match numpy")


def _named(net, feed, name):
    """A layer's value with its axes as named: {dim description or "batch": axis}."""
    with net.graph.as_default():
        out = net.net.get_layer(name).output
    value = net.run(out.placeholder, feed)
    names = ["batch" if t.is_batch_dim() else t.description for t in out.dim_tags]
    return value, names


def test_stack_window():
    """stack / unstack, and windows over time ("same": centered, zeros outside each sequence;
    stride 2, and back with inverse_window; "valid") against numpy."""
    net = Net(compile_model("op-stack-window"), train_flag=False)
    feed = net.feed(6)
    x = net.layer("data:data", feed).astype("float64")
    lens = seq_lens(net, feed)
    for b, n in enumerate(lens):
        x[b, n:] = 0
    stacked, names = _named(net, feed, "stacked")
    # RETURNN's stack names its own dim ("stacked:stack"), declared the same as the model's.
    three = [d for d in names if d not in ("batch", "time", "input")][0]
    stacked = numpy.moveaxis(stacked, [names.index(k) for k in ("batch", "time", "input", three)],
                             [0, 1, 2, 3])
    unstacked = net.layer("unstacked_1", feed)
    T = x.shape[1]

    def windows(w, left, stride, valid):
        pad = numpy.zeros((x.shape[0], T + w, x.shape[2]))
        start = 0 if valid else left
        pad[:, start:start + T] = x
        n_out = T - w + 1 if valid else T
        return numpy.stack([pad[:, t:t + w] for t in range(0, n_out, stride)], 1)

    for name, w, left, stride, valid in (("window_same", 3, 1, 1, False), ("window_strided", 4, 1, 2, False),
                                         ("window_valid", 2, 0, 1, True)):
        got, names = _named(net, feed, name)
        want = windows(w, left, stride, valid)
        win = [d for d in names if d.startswith("win")][0]
        time = [d for d in names if d not in ("batch", "input", win)][0]
        got = numpy.moveaxis(got, [names.index(k) for k in ("batch", time, win, "input")], [0, 1, 2, 3])
        with net.graph.as_default():
            tag = net.net.get_layer(name).output.dim_tags[names.index(time)]
        out_lens = net.run(tag.dyn_size_ext.placeholder, feed)
        for b, n in enumerate(lens):
            want_n = (n - w + 1 if valid else (n + stride - 1) // stride)
            assert out_lens[b] == want_n, (name, b, out_lens[b], want_n)
            close(got[b, :want_n], want[b, :want_n], 1e-6, "%s, sequence %d" % (name, b))
    inverse = net.layer("inverse_strided", feed)
    for b, n in enumerate(lens):
        close(inverse[b, :n], x[b, :n], 1e-5, "inverse_window of the strided windows, sequence %d" % b)
        for k in range(3):
            close(stacked[b, :n, :, k], (k + 1) * x[b, :n], 1e-6, "stack")
        close(unstacked[b, :n], 2 * x[b, :n], 1e-6, "unstack")
    print("stack, unstack, windows (same, stride 2, valid) and inverse_window match numpy")


def test_repeat_const():
    """repeat (a scalar count; a count per frame: 2 where the frame's mean is positive, else 1),
    a constant vector, labels padded with a BOS label, against numpy."""
    net = Net(compile_model("op-repeat-const"), train_flag=False)
    feed = net.feed(3)
    x = net.layer("data:data", feed).astype("float64")
    y = net.layer("data:classes", feed)
    lens = seq_lens(net, feed)
    h = net.layer("output", feed)
    for name, counts in (("repeat_3", lambda b, n: [3] * n),
                         ("repeat_by_mean", lambda b, n: [2 if x[b, t].mean() > 0 else 1 for t in range(n)])):
        got = net.layer(name, feed)
        with net.graph.as_default():
            out = net.net.get_layer(name).output
            tag = [t for t in out.dim_tags if t.dimension is None and not t.is_batch_dim()][0]
        out_lens = net.run(tag.dyn_size_ext.placeholder, feed)
        for b, n in enumerate(lens):
            c = counts(b, n)
            assert out_lens[b] == sum(c), (name, out_lens[b], c)
            close(got[b, :sum(c)], numpy.repeat(h[b, :n], c, axis=0), 1e-6, "%s, sequence %d" % (name, b))
    close(net.layer("plus_vector", feed), x + numpy.array([0.0, 0.5, 1.0, 1.5, 2.0]), 1e-6, "x + vector")
    bos = net.layer("bos_labels", feed)
    for b, n in enumerate(lens):
        assert list(bos[b, :n + 1]) == [0] + list(y[b, :n]), (bos[b], y[b])
    print("repeat (3 times; 1 or 2 times per frame), a constant vector and BOS-padded labels match numpy")


def test_scatter():
    """scatter of the frames into their class (the labels as indices): sum, max (fill -1),
    min, mean, logsumexp (of 30 x), argmax (fill -1) and, on ints, each class's last and first frame (fill
    -1), against numpy within each sequence's length (classes without frames: the fill);
    masked_scatter of masked_select's frames (through tanh) back in place (the others 5);
    top_k over two axes together (values, each axis's indices)."""
    net = Net(compile_model("op-scatter"), train_flag=False)
    feed = net.feed(6)
    x = net.layer("data:data", feed).astype("float64")
    labels = net.layer("data:classes", feed)
    lens = seq_lens(net, feed)
    got = {name: net.layer(name, feed) for name in (
        "x_sum", "x_max", "x_min", "x_mean", "x_logsumexp", "x_argmax", "last_frame", "first_frame")}
    # top_k over [input, three] of x * (1, -2, 0.5), k = 4: values and both indices.
    z = x[:, :, :, None] * numpy.array([1.0, -2.0, 0.5])
    flat = z.reshape(z.shape[0], z.shape[1], -1)
    order = numpy.argsort(-flat, axis=-1)[:, :, :4]
    for b, n in enumerate(lens):
        close(net.layer("joint_top", feed)[b, :n], numpy.take_along_axis(flat, order, -1)[b, :n], 1e-5,
              "top_k over two axes, seq %d" % b)
        assert (net.layer("joint_top_input", feed)[b, :n] == order[b, :n] // 3).all(), b
        assert (net.layer("joint_top_three", feed)[b, :n] == order[b, :n] % 3).all(), b
    unpacked = net.layer("unpacked", feed)
    for b, n in enumerate(lens):
        want = numpy.where((labels[b, :n] == 1)[:, None], numpy.tanh(x[b, :n]), 5.0)
        close(unpacked[b, :n], want, 1e-5, "masked_scatter seq %d" % b)
    assert got["last_frame"].dtype == numpy.int32, got["last_frame"].dtype
    empty = 0
    for b, n in enumerate(lens):
        for c in range(3):
            frames = [t for t in range(n) if labels[b, t] == c]
            if not frames:
                empty += 1
                want = {"x_sum": 0.0, "x_max": -1.0, "x_min": 0.0, "x_mean": 0.0, "x_logsumexp": 0.0,
                        "x_argmax": -1, "last_frame": -1, "first_frame": -1}
            else:
                v = x[b, frames]
                m = (30 * v).max(axis=0)
                want = {"x_sum": v.sum(axis=0), "x_max": v.max(axis=0), "x_min": v.min(axis=0),
                        "x_mean": v.mean(axis=0),
                        "x_logsumexp": m + numpy.log(numpy.exp(30 * v - m).sum(axis=0)),
                        "x_argmax": numpy.array(frames)[v.argmax(axis=0)],
                        "last_frame": frames[-1], "first_frame": frames[0]}
            for name, value in want.items():
                close(got[name][b, c], value, 1e-4, "%s seq %d class %d" % (name, b, c))
    # The gradients of a loss through max, mean and logsumexp (classes without frames
    # included): finite, and the torch target's on the same batch and params equal TF's.
    import tensorflow as tf
    import torch
    from torch_probe import TorchNet, compile_model as torch_config

    train = Net(compile_model("op-scatter"), train_flag=True)
    with train.graph.as_default():
        variables = train.net.get_trainable_params()
        grads = train.run(lambda: tf.gradients(train.net.get_total_loss(), variables), train.feed(6))
    tnet = TorchNet(torch_config("op-scatter"), with_updater=False)
    tnet.pt_model.load_state_dict({k[:-len("/param:0")].replace("/", "."): torch.tensor(v)
                                   for k, v in train.params().items()})
    tnet.run(tnet.batch(6)).total_loss().raw_tensor.backward()
    torch_grads = {n: p.grad.numpy() for n, p in tnet.pt_model.named_parameters()}
    diff = 0.0
    for v, g in zip(variables, grads):
        assert numpy.isfinite(g).all() and numpy.abs(g).max() > 0, (v.name, g)
        diff = max(diff, float(numpy.abs(g - torch_grads[v.name[:-len("/param:0")].replace("/", ".")]).max()))
    assert diff < 1e-4, diff
    print("scatter: sum, max, min, mean, logsumexp, argmax and ints' max / min match numpy "
          "(%d sequences, %d classes without frames), masked_scatter unpacks, top_k over two axes; gradients through max, mean and "
          "logsumexp finite, torch's = TF's within %.2g" % (len(lens), empty, diff))


def test_dims_from_sizes():
    """dim_value (the time's padded size, the input's 5) and a new dim from computed lengths
    (range_of_lengths: ceil(n / 2) frames per sequence, its positions; x's even frames
    gathered at twice them), against numpy within each sequence's length."""
    net = Net(compile_model("op-dims-from-sizes"), train_flag=False)
    feed = net.feed(3)
    x = net.layer("data:data", feed)
    lens = seq_lens(net, feed)
    assert int(net.layer("time_size", feed)) == x.shape[1] == max(lens), (net.layer("time_size", feed), lens)
    assert int(net.layer("input_size", feed)) == 5
    halves = net.run(lambda: net.net.get_layer("half_positions").output.dim_tags[0].dyn_size_ext.placeholder, feed)
    assert list(halves) == [(n + 1) // 2 for n in lens], (list(halves), list(lens))
    assert list(net.layer("half_positions", feed)) == list(range(max(halves)))
    even = net.layer("even_frames", feed)
    for b, n in enumerate(lens):
        close(even[b, :(n + 1) // 2], x[b, :n:2], 1e-6, "even frames of seq %d" % b)
    print("dim_value %d and 5; range_of_lengths: lengths %s (ceil(n / 2) of %s), x's even frames"
          % (max(lens), [int(h) for h in halves], [int(n) for n in lens]))


def test_floor_mod():
    """floor_div and mod (Python's // and %) on ints (negative ones too) and floats, pow on floats, against numpy."""
    net = Net(compile_model("op-floor-mod"), train_flag=False)
    feed = net.feed(3)
    x = net.layer("data:data", feed)
    labels = net.layer("data:classes", feed).astype("int64") - 5
    lens = seq_lens(net, feed)
    for name, want in (("labels_div_3", numpy.floor_divide(labels, 3)), ("labels_mod_3", numpy.mod(labels, 3))):
        got = net.layer(name, feed)
        assert got.dtype == numpy.int32, (name, got.dtype)
        for b, n in enumerate(lens):
            assert list(got[b, :n]) == list(want[b, :n]), (name, got[b, :n], want[b, :n])
    close(net.layer("x_div", feed), numpy.floor_divide(x, numpy.float32(0.7)), 1e-6, "x // 0.7")
    close(net.layer("x_mod", feed), numpy.mod(x, numpy.float32(0.7)), 1e-5, "x % 0.7")
    close(net.layer("x_pow", feed), numpy.power(numpy.abs(x) + numpy.float32(0.5), x), 1e-5, "(|x| + 0.5) ** x")
    label_2 = net.layer("label_2", feed)
    assert label_2.shape == x.shape[:2] + (3,), label_2.shape
    close(label_2, numpy.broadcast_to(numpy.eye(3, dtype="float32")[2], label_2.shape), 0, "one_hot(sparse_constant(2))")
    lcse = net.layer("x_lcse_time", feed)
    for b, n in enumerate(lens):
        want = numpy.logaddexp.accumulate(100.0 * x[b, :n].astype("float64"), axis=0)
        close(lcse[b, :n] / 100.0, want / 100.0, 1e-5, "log_cumsum_exp over time (x 100), sequence %d" % b)
    close(net.layer("x_lcse_feat", feed), numpy.logaddexp.accumulate(x.astype("float64"), axis=-1), 1e-5,
          "log_cumsum_exp over the features")
    print("floor_div and mod match numpy's // and %% on int32 (negative too) and float32; pow numpy's **; "
          "sparse_constant a label; log_cumsum_exp numpy's logaddexp.accumulate (values to %.0f)"
          % float(numpy.abs(lcse).max()))


def test_reverse_slice():
    """reverse within each sequence (frames and labels); a slice from a start per sequence
    (the last 3 frames, then 0; labels 1..3), against numpy."""
    net = Net(compile_model("op-reverse-slice"), train_flag=False)
    feed = net.feed(2)
    y, h = net.layer("data:classes", feed), net.layer("output", feed)
    lens = seq_lens(net, feed)
    rev, rev_labels, tail = net.layer("reversed", feed), net.layer("reversed_labels", feed), net.layer("tail", feed)
    for b, n in enumerate(lens):
        close(rev[b, :n], h[b, :n][::-1], 1e-6, "reverse, sequence %d" % b)
        assert list(rev_labels[b, :n]) == list(y[b, :n][::-1]), (rev_labels[b], y[b])
        close(tail[b], numpy.concatenate([h[b, n - 3:n], numpy.zeros((1, 3))]), 1e-6, "tail, sequence %d" % b)
    assert (net.layer("labels_1_3", feed) == y[:, 1:4]).all()
    x = net.layer("data:data", feed)
    close(net.layer("in_a", feed), x[..., :2], 0.0, "split of the features, part 0 (a split layer)")
    close(net.layer("in_b", feed), x[..., 2:], 0.0, "split of the features, part 1")
    for name, want in [("class_0", h[..., 0:1]), ("class_2", h[..., 2:3]), ("h2_01", 2 * h[..., 0:2]),
                       ("h2_12", 2 * h[..., 1:3])]:
        close(net.layer(name, feed), want, 1e-6, name)
    print("reverse (frames, labels) and slices from a start per sequence (past the end: 0; labels) "
          "match numpy; the features cut into parts (a split layer), a part left out and overlapping "
          "slices too")


def test_raw_layer():
    """raw_layer: RETURNN layers retc does not know (softsign; a reduce over "$0", the features),
    their values as RETURNN computes them; the torch target rejects it at build time."""
    net = Net(compile_model("op-raw-layer"), train_flag=False)
    feed = net.feed(2)
    x = net.layer("data:data", feed).astype("float64")
    lens = seq_lens(net, feed)
    softsign, mean = net.layer("softsign", feed), net.layer("feature_mean", feed)
    for b, n in enumerate(lens):
        close(softsign[b, :n], x[b, :n] / (1 + numpy.abs(x[b, :n])), 1e-6, "softsign")
        close(mean[b, :n], x[b, :n].mean(-1), 1e-6, "mean over the features")
    r = subprocess.run([os.environ["RETC_TEST_MODELS"], "compile", "op-raw-layer", "--backend", "torch", "-o",
                        os.path.join(TMP, "raw.torch.config")], capture_output=True, text=True)
    assert r.returncode != 0 and "a raw RETURNN layer is a layer of TF's net dict" in r.stderr, (r.returncode, r.stderr)
    assert "module_models.cc" in r.stderr, r.stderr  # at the user's line
    print("raw layers: softsign and a feature mean as numpy has them; torch: %s" % r.stderr.strip())


def test_zoneout_lstm():
    """ZoneoutLstm in evaluation: NativeLstm2's step (gates j, i, f, o), then each state the
    expectation z * previous + (1 - z) * new (cell 0.15, output 0.05), against numpy, and its
    state handed from one call to the next (forward_with_state: the final h and c, and a
    second call from them continuing as one call over both chunks would); in training
    its outputs differ from evaluation's (the random masks)."""
    net = Net(compile_model("mod-zoneout-lstm"), train_flag=False)
    feed = net.feed(7)
    x = net.layer("data:data", feed).astype("float64")
    lens = seq_lens(net, feed)
    w = net.variable("lstm/cell/ff_weight/param:0").astype("float64")
    r = net.variable("lstm/cell/rec_weight/param:0").astype("float64")
    bias = net.variable("lstm/cell/bias/param:0").astype("float64")
    got, got2 = net.layer("zoneout_h", feed), net.layer("zoneout_h2", feed)
    state_h, state_c = net.layer("zoneout_state_h", feed), net.layer("zoneout_state_c", feed)
    sig = lambda v: 1 / (1 + numpy.exp(-v))  # noqa: E731
    n_out = r.shape[0]
    for b, n in enumerate(lens):
        h, c = numpy.zeros(n_out), numpy.zeros(n_out)
        # Two calls over the sequence, the second from the first's final state
        # (forward_with_state's handoff): as one call over it twice.
        for call, out in enumerate((got, got2)):
            for t in range(n):
                z = x[b, t] @ w + h @ r + bias
                j, i, f, o = (z[k * n_out:(k + 1) * n_out] for k in range(4))
                c_new = sig(f) * c + sig(i) * numpy.tanh(j)
                h_new = sig(o) * numpy.tanh(c_new)
                c = 0.15 * c + 0.85 * c_new
                h = 0.05 * h + 0.95 * h_new
                close(out[b, t], h, 1e-5, "zoneout LSTM, call %d, sequence %d frame %d" % (call + 1, b, t))
            if call == 0:
                close(state_h[b], h, 1e-5, "the handed-on h of sequence %d" % b)
                close(state_c[b], c, 1e-5, "the handed-on c of sequence %d" % b)
    trained = Net(compile_model("mod-zoneout-lstm"), train_flag=True)
    with trained.graph.as_default():
        for v in trained.net.get_params_list():
            if v.name in net.params():
                v.load(net.params()[v.name], trained.session)
    train_feed = trained.feed(7)
    assert numpy.allclose(trained.layer("data:data", train_feed), x)
    got_train = trained.layer("zoneout_h", train_feed)
    assert not numpy.allclose(got_train[0, :lens[0]], got[0, :lens[0]]), "training equals evaluation"
    print("zoneout LSTM (evaluation) matches numpy over %s frames, also a second call from the first's "
          "final state (forward_with_state); training differs" % list(lens))


def test_rel_pos_xl():
    """RelPosSelfAttention against numpy computing rf's Transformer-XL attention directly: scores
    ((q_i + u) . k_j + (q_i + v) . linear_pos(emb(j - i))) / sqrt(d), emb = [sin(d w), cos(d w)],
    w_f = 10000^(-2f / F), softmax over the keys within each sequence."""
    _check_rel_pos_xl(Net(compile_model("mod-rel-pos-xl"), train_flag=False))


def test_rel_pos_xl_dropout():
    """RelPosSelfAttention with rel_pos_dropout (0.3; its encodings as a table over the offsets,
    gathered at j - i): in evaluation the same numbers as numpy's Transformer-XL attention (as
    test_rel_pos_xl); in training, with the same params, other ones; and with linear_pos zeroed
    (no position term) training equals evaluation: the dropout acts on the encodings alone."""
    config = compile_model("mod-rel-pos-xl-dropout")
    net = Net(config, train_flag=False)
    _check_rel_pos_xl(net)
    trained = Net(config, train_flag=True)
    with trained.graph.as_default():
        for v in trained.net.get_params_list():
            v.load(net.params()[v.name], trained.session)
    feed, train_feed = net.feed(8), trained.feed(8)
    before, before_train = net.layer("att", feed), trained.layer("att", train_feed)
    assert not numpy.allclose(before, before_train), "rel_pos_dropout has no effect in training"
    for n in (net, trained):
        with n.graph.as_default():
            w = [v for v in n.net.get_params_list() if v.name == "att/linear_pos/weight/param:0"][0]
            n.session.run(w.assign(numpy.zeros(w.shape.as_list(), "float32")))
    close(trained.layer("att", train_feed), net.layer("att", feed), 1e-6,
          "training without a position term (the dropout on the encodings alone)")
    print("Transformer-XL encodings' dropout: evaluation as numpy, training differs, only through the encodings")


def _check_rel_pos_xl(net):
    feed = net.feed(8)
    h = net.layer("att_in", feed).astype("float64")
    lens = seq_lens(net, feed)
    var = lambda name: net.variable("att/%s/param:0" % name).astype("float64")  # noqa: E731
    wqkv, bqkv, wpos = var("qkv/weight"), var("qkv/bias"), var("linear_pos/weight")
    u, v_bias, wproj, bproj = var("pos_bias_u"), var("pos_bias_v"), var("proj/weight"), var("proj/bias")
    heads, dk, dv, F = 2, 3, 2, h.shape[-1]
    freq = numpy.exp(numpy.arange(F // 2) * -(2.0 * numpy.log(1e4) / F))
    got = net.layer("att", feed)
    for b, n in enumerate(lens):
        qkv = (h[b, :n] @ wqkv + bqkv).reshape(n, heads, 2 * dk + dv)
        q, k, v = qkv[..., :dk], qkv[..., dk:2 * dk], qkv[..., 2 * dk:]
        d = numpy.arange(n)[None, :] - numpy.arange(n)[:, None]  # j - i
        emb = numpy.concatenate([numpy.sin(d[..., None] * freq), numpy.cos(d[..., None] * freq)], -1)
        pos = (emb @ wpos).reshape(n, n, heads, dk)  # [i, j, h, dk]
        ac = numpy.einsum("ihd,jhd->hij", q + u, k)
        bd = numpy.einsum("ihd,ijhd->hij", q + v_bias, pos)
        scores = (ac + bd) / numpy.sqrt(dk)
        w = numpy.exp(scores - scores.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        att = numpy.einsum("hij,jhd->ihd", w, v).reshape(n, heads * dv)
        close(got[b, :n], att @ wproj + bproj, 1e-4, "Transformer-XL attention, sequence %d" % b)
    print("RelPosSelfAttention matches numpy's Transformer-XL attention over %s frames" % list(lens))


def test_loss_values():
    """Losses as values and on computed targets (TF): the cross-entropy marked as a loss and
    summed as an output, a cross-entropy against the targets shifted by a frame, CTC marked and
    as an output; the objective is their sum."""
    net, feed, objective, lens = _objective_and_logits("loss-values", seed=3)
    logits = net.layer("output", feed).astype("float64")
    y = net.layer("data:classes", feed)
    logp = logits - numpy.log(numpy.exp(logits).sum(-1, keepdims=True))
    ce_sum = net.layer("ce_sum", feed)
    ctc = net.layer("ctc_value", feed).astype("float64")
    want_ce, want_shifted = [], []
    for b, n in enumerate(lens):
        want_ce.append(-sum(logp[b, t, y[b, t]] for t in range(n)))
        shifted = [0] + list(y[b, :n - 1])
        want_shifted.append(-sum(logp[b, t, shifted[t]] for t in range(n)))
    close(ce_sum, numpy.array(want_ce), 1e-4, "the cross-entropy as a value")
    assert numpy.isfinite(ctc).all(), ctc
    close(objective, sum(want_ce) + sum(want_shifted) + ctc.sum(), 1e-3,
          "CE + CE on computed targets + CTC")
    print("CE as a value %s; CE on shifted targets; CTC values %s; objective %.4f" % (
        numpy.round(ce_sum, 3).tolist(), numpy.round(ctc, 3).tolist(), objective))


def test_att_dropout():
    """Attention dropout (0.5) in SelfAttention, RelPosSelfAttention and CrossAttention: in
    evaluation the outputs are deterministic (two runs equal); in training they vary between runs
    (the weights' masks), and the projection without bias has no bias variable."""
    net = Net(compile_model("mod-att-dropout"), train_flag=False)
    feed = net.feed(9)
    names = set(net.params())
    assert "self_att/proj/weight/param:0" in names and "self_att/proj/bias/param:0" not in names, names
    trained = Net(compile_model("mod-att-dropout"), train_flag=True)
    train_feed = trained.feed(9)
    for out in ("self_att", "xl", "cross"):
        a, b = net.layer(out, feed), net.layer(out, feed)
        assert numpy.array_equal(a, b), out
        t1, t2 = trained.layer(out, train_feed), trained.layer(out, train_feed)
        assert not numpy.allclose(t1, t2), "%s: training runs equal: no attention dropout" % out
    print("attention dropout: evaluation deterministic, training varies, for self_att, xl and cross")


def test_transposed_conv():
    """Transposed conv (kernel 3, stride 2, valid, no bias): y[2t + k] += x[t] W[k]^T, 2n + 1 frames
    per sequence of n; strided down and back up (kernel 2) and given x's time by replace_dim: the
    same frames, x's extent and lengths."""
    net = Net(compile_model("mod-transposed-conv"), train_flag=False)
    feed = net.feed(3)
    x = net.layer("data:data", feed).astype("float64")
    lens = seq_lens(net, feed)
    w = net.variable("wide/weight/param:0").astype("float64")  # [3, out 4, in 5]
    for b, n in enumerate(lens):
        x[b, n:] = 0
    wide = net.layer("wide", feed)
    want = numpy.zeros((x.shape[0], 2 * x.shape[1] + 1, w.shape[1]))
    for t in range(x.shape[1]):
        for k in range(3):
            want[:, 2 * t + k] += x[:, t] @ w[k].T
    for b, n in enumerate(lens):
        close(wide[b, :2 * n + 1], want[b, :2 * n + 1], 1e-4, "transposed conv, sequence %d" % b)
    with net.graph.as_default():
        wide_lens = net.net.get_layer("wide").output.get_time_dim_tag().dyn_size_ext.placeholder
        back_out = net.net.get_layer("back").output
        back_lens = back_out.get_time_dim_tag().dyn_size_ext.placeholder
    assert list(net.run(wide_lens, feed)) == [2 * n + 1 for n in lens], net.run(wide_lens, feed)
    up, back = net.layer("up", feed), net.layer("back", feed)
    assert back.shape[1] == x.shape[1], (back.shape, x.shape)
    assert list(net.run(back_lens, feed)) == list(lens)
    for b, n in enumerate(lens):
        close(back[b, :n], up[b, :n], 1e-6, "replace_dim keeps the frames")
    print("transposed conv matches numpy (lengths 2n + 1); replace_dim: x's extent %d and lengths %s" % (
        x.shape[1], list(lens)))


def _objective_and_logits(model, seed=5):
    net = Net(compile_model(model), train_flag=True)
    feed = net.feed(seed)
    objective = net.run(net.net.get_objective, feed)
    data = net.net.extern_data.data["data"]
    return net, feed, float(objective), net.run(data.get_sequence_lengths(), feed)


def test_loss_options():
    """Loss scale halves the objective; label smoothing and MSE equal their formulas."""
    _, _, plain, _ = _objective_and_logits("loss-plain")
    _, _, scaled, _ = _objective_and_logits("loss-scaled")
    close(scaled, 0.5 * plain, 1e-5, "scaled CE")
    _, _, normalized, lens = _objective_and_logits("loss-normalized")
    close(normalized, plain / sum(lens), 1e-5, "CE normalized by the number of frames")
    net, feed, smoothed, lens = _objective_and_logits("loss-smoothed")
    logits = net.layer("output", feed).astype("float64")
    y = net.layer("data:classes", feed)
    eps, n = 0.1, logits.shape[-1]
    logp = logits - numpy.log(numpy.exp(logits).sum(-1, keepdims=True))
    q = numpy.full(logits.shape, eps / (n - 1))
    for b in range(logits.shape[0]):
        for t in range(logits.shape[1]):
            q[b, t, y[b, t]] = 1 - eps
    norm = -((1 - eps) * numpy.log(1 - eps) + (n - 1) * (eps / (n - 1)) * numpy.log(eps / (n - 1)))
    per_frame = -(q * logp).sum(-1) - norm
    want = sum(per_frame[b, :lens[b]].sum() for b in range(len(lens)))
    close(smoothed, want, 1e-4, "label-smoothed CE")
    net, feed, mse, lens = _objective_and_logits("loss-mse")
    pred = net.layer("output", feed).astype("float64")
    target = net.layer("data:target", feed).astype("float64")
    want = sum(((pred[b, :lens[b]] - target[b, :lens[b]]) ** 2).mean(-1).sum() for b in range(len(lens)))
    close(mse, want, 1e-4, "mean squared error")
    # custom losses: "sq" (sum over classes of logits^2, normalized by frames, scale 0.1) adds to the
    # objective; "max_logit" (as_error) is reported only.
    net, feed, custom, lens = _objective_and_logits("loss-custom")
    logits = net.layer("output", feed).astype("float64")
    frames = [logits[b, :lens[b]] for b in range(len(lens))]
    n = sum(lens)
    sq = sum((f ** 2).sum() for f in frames) / n
    close(custom, plain + 0.1 * sq, 1e-4, "CE + 0.1 x normalized custom loss")
    errors = net.run(lambda: {k: v.get_error_value() for k, v in net.net.losses_dict.items()
                              if v.get_error_value() is not None}, feed)
    want_err = sum(f.max(-1).sum() for f in frames)
    assert "max_logit" in errors, errors
    close(float(errors["max_logit"]), want_err, 1e-3, "as_error: the summed value, reported as the error")
    # focal loss (factor 2): each frame's CE times (1 - p_target)^2
    net, feed, focal, lens = _objective_and_logits("loss-focal")
    logits = net.layer("output", feed).astype("float64")
    y = net.layer("data:classes", feed)
    logp = logits - numpy.log(numpy.exp(logits).sum(-1, keepdims=True))
    want = 0.0
    for b in range(len(lens)):
        for t in range(lens[b]):
            lp = logp[b, t, y[b, t]]
            want += -lp * (1 - numpy.exp(lp)) ** 2
    close(focal, want, 1e-4, "focal loss")
    print("loss scale 0.5: %.4f = 0.5 x %.4f; label smoothing, focal, MSE and custom losses match their "
          "formulas" % (scaled, plain))



def seq_lens(net, feed, key="data"):
    return net.run(lambda: net.net.extern_data.data[key].get_sequence_lengths(), feed)


def test_conv_consistent_padding():
    """Conv1d, kernel 3, stride 2, padding "same_consistent": each sequence's frames are those
    it gets alone (its own length, no batch), ceil(n / 2) of them; TF's "same" pads by the
    batch's longest sequence instead (printed: how far one sequence's frames move). Both
    targets agree on both (the sweep's cross-backend check)."""
    for model, independent in (("sweep:conv1d_consistent:plain", True), ("sweep:conv1d_strided:plain", False)):
        net = Net(compile_model(model), train_flag=False)
        feed = net.feed(3)
        lens = seq_lens(net, feed)
        data = net.net.extern_data.data["data"]
        batch = len(lens)
        worst = 0.0
        for b, n in enumerate(lens):
            alone = {k: (v[b:b + 1] if getattr(v, "shape", ()) and v.shape[0] == batch else v) for k, v in feed.items()}
            alone[data.placeholder] = feed[data.placeholder][b:b + 1, :n]
            frames = (n + 1) // 2
            got, want = net.layer("output", alone)[0, :frames], net.layer("output", feed)[b, :frames]
            worst = max(worst, float(numpy.abs(got - want).max()))
            if independent:
                close(got, want, 1e-6, "%s: sequence %d alone and batched" % (model, b))
        print("%s: lengths %s, max |alone - batched| = %.3g" % (model, list(lens), worst))


def test_batch_norm():
    """Training: normalized by the batch statistics over the frames within
    each length; one step moves the running statistics by momentum 0.1."""
    net = Net(compile_model("mod-batch-norm"), train_flag=True, with_updater=True, learning_rate=0.0)
    feed = net.feed(4)
    x = feed[net.net.extern_data.data["data"].placeholder].astype("float64")
    lens = seq_lens(net, feed)
    frames = numpy.concatenate([x[b, :n] for b, n in enumerate(lens)])  # [frames, in]
    mean, var = frames.mean(0), frames.var(0)
    y = net.layer("norm.batch_norm", feed)
    for b, n in enumerate(lens):
        close(y[b, :n], (x[b, :n] - mean) / numpy.sqrt(var + 1e-5), 1e-4, "batch-normalized frames")
    # RETURNN runs the statistics update with each training step (the
    # network's post control dependencies, fetched by its engine).
    net.run(lambda: net.net.get_post_control_dependencies(), feed)
    close(net.variable("norm/running_mean/param:0"), 0.1 * mean, 1e-5, "running mean after a step")
    close(net.variable("norm/running_var/param:0"), 0.9 + 0.1 * var, 1e-4, "running var after a step")
    trainable = {v.name for v in net.graph.get_collection("trainable_variables")}
    assert "norm/running_mean/param:0" not in trainable and "norm/scale/param:0" in trainable, trainable
    print("batch norm: batch statistics over valid frames, running statistics updated, stats not trainable")


def test_batch_norm_options():
    """BatchNormOptions against RETURNN frontend's own BatchNorm with the same
    options, in training, on the same padded batch: affine(false) (masked
    statistics: rf's affine=False, use_mask=True) and masked(false) with epsilon
    1e-3 and momentum 0.2 (statistics over the padded tensor: rf's
    use_mask=False, torch's batch_norm). The normalized frames and the running
    statistics after one step agree within 1e-5 (the masked ones also with
    numpy's over the valid frames); both targets: cross_backend.mod-batch-norm-options."""
    import torch
    import returnn.frontend as rf
    from returnn.tensor import Dim, Tensor as RfTensor

    net = Net(compile_model("mod-batch-norm-options"), train_flag=True, with_updater=True, learning_rate=0.0)
    feed = net.feed(4)
    x, lens = net.layer("data:data", feed), seq_lens(net, feed)
    got = {"masked": net.layer("masked_out", feed), "unmasked": net.layer("unmasked_out", feed)}
    assert "masked/scale/param:0" not in net.params(), "affine(false) has a scale"
    net.run(lambda: net.net.get_post_control_dependencies(), feed)
    frames = numpy.concatenate([x[b, :n] for b, n in enumerate(lens)]).astype("float64")
    close(net.variable("masked/running_var/param:0"), 0.9 + 0.1 * frames.var(0), 1e-5, "masked running var (numpy)")

    rf.select_backend_torch()
    rf.init_train_step_run_ctx(train_flag=True)
    batch, time = Dim(x.shape[0], name="batch"), Dim(None, name="time")
    time.dyn_size_ext = RfTensor("lens", dims=[batch], dtype="int32", raw_tensor=torch.tensor(lens))
    in_dim = Dim(x.shape[2], name="in")
    source = RfTensor("x", dims=[batch, time, in_dim], dtype="float32", raw_tensor=torch.tensor(x))
    refs = {"masked": rf.BatchNorm(in_dim, affine=False, use_mask=True, eps=1e-5, momentum=0.1),
            "unmasked": rf.BatchNorm(in_dim, affine=True, use_mask=False, eps=1e-3, momentum=0.2)}
    worst = 0.0
    for name, ref in refs.items():
        with torch.no_grad():
            want = ref(source).copy_transpose([batch, time, in_dim]).raw_tensor.numpy()
        for b, n in enumerate(lens):
            worst = max(worst, float(numpy.abs(got[name][b, :n] - want[b, :n]).max()))
        for stat in ("mean", "var"):
            mine = net.variable("%s/running_%s/param:0" % (name, stat))
            theirs = getattr(ref, "running_" + ("mean" if stat == "mean" else "variance")).raw_tensor.detach().numpy()
            close(mine, theirs, 1e-5, "%s running %s = rf's" % (name, stat))
    assert worst <= 1e-5, worst

    # The torch target's training step on a batch of its own, against rf's BatchNorm.
    from torch_probe import TorchNet, compile_model as torch_config
    from returnn.torch.data import extern_data as extern_data_util

    tnet = TorchNet(torch_config("mod-batch-norm-options"), with_updater=False)
    raw, template = tnet.batch(5)
    extern = extern_data_util.raw_dict_to_extern_data(raw, extern_data_template=template, device="cpu",
                                                      with_eval_targets=True)
    rf.init_train_step_run_ctx(train_flag=True)
    with torch.no_grad():
        outs = tnet.config.typed_value("train_step")(model=tnet.model, extern_data=extern)
    data = extern["data"]
    refs = {"masked": rf.BatchNorm(data.feature_dim, affine=False, use_mask=True, eps=1e-5, momentum=0.1),
            "unmasked": rf.BatchNorm(data.feature_dim, affine=True, use_mask=False, eps=1e-3, momentum=0.2)}
    params = None
    for name, ref in refs.items():
        with torch.no_grad():
            want = ref(data).copy_transpose(data.dims).raw_tensor.numpy()
        mine = outs[name + "_out"].copy_transpose(data.dims).raw_tensor.numpy()
        worst = max(worst, float(numpy.abs(mine - want).max()))
        params = params or tnet.params()
        close(params[name + ".running_mean"], ref.running_mean.raw_tensor.detach().numpy(), 1e-5,
              "torch target: %s running mean = rf's" % name)
        close(params[name + ".running_var"], ref.running_variance.raw_tensor.detach().numpy(), 1e-5,
              "torch target: %s running var = rf's" % name)
    assert worst <= 1e-5, worst
    rf.init_train_step_run_ctx(train_flag=False)
    print("batch norm options = rf's BatchNorm on both targets (affine=False masked; unmasked eps 1e-3 "
          "momentum 0.2): outputs max |diff| %.3g, running statistics after a step within 1e-5" % worst)


def _frame_mean(x, lens):
    return numpy.concatenate([x[b, :n] for b, n in enumerate(lens)]).astype("float64").mean(0)


def test_param_assign():
    """nn::assign / nn::assign_add in the training step, two steps on each target
    against numpy: "steps" counts them, "mean" becomes 0.9 mean + 0.1 the batch's
    frame mean (the step's own output "centered" = x - mean reads the old value),
    "ema" += 0.5 (out's weight - ema) from the weight before the optimizer moved it;
    evaluation assigns nothing. TF: RETURNN's Updater with the network's post
    control dependencies, fetched together as its engine does; torch: RETURNN's
    updater after the config's train_step, with its backward."""
    import torch

    net = Net(compile_model("op-param-assign"), train_flag=True, with_updater=True, learning_rate=0.1)
    mean, worst = numpy.zeros(IN), 0.0
    for step in (1, 2):
        feed = net.feed(step)
        x, lens = net.layer("data:data", feed), seq_lens(net, feed)
        w0 = net.variable("out/weight/param:0")
        ema0 = net.variable("ema/param:0")
        centered = net.run(lambda: [net.optim_op, net.net.get_post_control_dependencies(),
                                    net.net.get_layer("centered").output.copy_as_batch_spatial_major().placeholder],
                           feed)[2]
        for b, n in enumerate(lens):
            close(centered[b, :n], x[b, :n] - mean, 1e-5, "tf: centered reads the mean before the step's assign")
        mean = 0.9 * mean + 0.1 * _frame_mean(x, lens)
        close(net.variable("steps/param:0"), step, 0, "tf: steps")
        close(net.variable("mean/param:0"), mean, 1e-5, "tf: running mean")
        w1 = net.variable("out/weight/param:0")
        assert numpy.abs(w1 - w0).max() > 1e-3, "the optimizer did not move the weight"
        close(net.variable("ema/param:0"), ema0 + 0.5 * (w0 - ema0), 1e-6, "tf: ema from the weight before the update")
        worst = max(worst, float(numpy.abs(w1 - w0).max()))
    net.close()
    evaluation = Net(compile_model("op-param-assign"), train_flag=False)
    evaluation.run(lambda: evaluation.net.get_post_control_dependencies(), evaluation.feed(1))
    close(evaluation.variable("steps/param:0"), 0, 0, "tf: evaluation assigns nothing")

    from torch_probe import TorchNet, compile_model as torch_config
    from returnn.torch.data import extern_data as extern_data_util
    import returnn.frontend as rf

    tnet = TorchNet(torch_config("op-param-assign"), learning_rate=0.1)
    mean = numpy.zeros(IN)
    for step in (1, 2):
        raw, template = tnet.batch(step)
        extern = extern_data_util.raw_dict_to_extern_data(raw, extern_data_template=template, device="cpu",
                                                          with_eval_targets=True)
        before = tnet.params()
        tnet.updater.zero_grad()
        rf.init_train_step_run_ctx(train_flag=True, step=step - 1, epoch=1)
        outs = tnet.config.typed_value("train_step")(model=tnet.model, extern_data=extern)
        rf.get_run_ctx().total_loss().raw_tensor.backward()  # after the in-place assigns: nothing it reads moved
        tnet.updater.step()
        data = extern["data"]
        x = data.copy_transpose(data.dims).raw_tensor.numpy()
        lens = data.dims[1].dyn_size_ext.raw_tensor.numpy()
        centered = outs["centered"].copy_transpose(data.dims).raw_tensor.numpy()
        for b, n in enumerate(lens):
            close(centered[b, :n], x[b, :n] - mean, 1e-5, "torch: centered reads the mean before the step's assign")
        mean = 0.9 * mean + 0.1 * _frame_mean(x, lens)
        after = tnet.params()
        close(after["steps"], step, 0, "torch: steps")
        close(after["mean"], mean, 1e-5, "torch: running mean")
        assert numpy.abs(after["out.weight"] - before["out.weight"]).max() > 1e-3, "the weight did not move"
        close(after["ema"], before["ema"] + 0.5 * (before["out.weight"] - before["ema"]), 1e-6,
              "torch: ema from the weight before the update")
    tnet.run(tnet.batch(3), train=False)
    close(tnet.params()["steps"], 2, 0, "torch: evaluation assigns nothing")
    rf.init_train_step_run_ctx(train_flag=False)
    print("param assignments over 2 steps = numpy's on both targets (steps, running mean, ema of a weight the "
          "optimizer moved by up to %.3g: the ema took the weight before the update); none in evaluation" % worst)


def test_rel_pos_encoding():
    """RelPosEncoding (clipping 2) on the input's frames against themselves: entry
    (i, j) is the table's row clip(j - i, -2, 2) + 2, over the longest sequence's
    frames (RETURNN's relative_positional_encoding layer indexes so: the stepwise
    decoder's keys shifted by these rows equal its fused layer's, test_stepwise.py);
    both targets: cross_backend.mod-rel-pos-encoding."""
    net = Net(compile_model("mod-rel-pos-encoding"), train_flag=False)
    feed = net.feed(3)
    table = net.variable("enc/table/param:0")

    def queries_keys_feat(name):  # the output [time, keys, pos] and its dims' names
        value, names = _named(net, feed, name)
        order = [next(i for i, n in enumerate(names) if n.startswith(p)) for p in ("time", "keys", "pos")]
        return value.transpose(order), names

    got, names = queries_keys_feat("enc")
    n = got.shape[0]
    assert got.shape == (n, n, 4) and n == max(seq_lens(net, feed)), (got.shape, names)
    want = numpy.stack([numpy.stack([table[min(max(j - i, -2), 2) + 2] for j in range(n)]) for i in range(n)])
    close(got, want, 0, "the table's rows by clipped offset")
    print("rel pos encoding: [%d queries, %d keys, 4], row clip(j - i) + 2 of the table, dims %s" % (n, n, names))
    # nn::sinusoidal_rel_pos_encoding (dim 6) against RETURNN frontend's own
    # relative_positional_encoding: its table has one row per offset (its
    # _make_indices gives each row's offset), ours the row of j - i per pair.
    import torch
    import returnn.frontend as rf
    from returnn.frontend.attention import _make_indices, relative_positional_encoding
    from returnn.tensor import Dim

    got, _ = queries_keys_feat("sin_enc")
    rf.select_backend_torch()
    time = Dim(n, name="time")
    table, rows = relative_positional_encoding(query_spatial_dim=time, key_value_spatial_dim=time,
                                               feat_dim=Dim(6, name="pos"))
    offsets, _ = _make_indices(time, time, 0, device="cpu")
    table = table.copy_transpose([rows, table.feature_dim]).raw_tensor.numpy()
    offsets = offsets.raw_tensor.numpy()
    want = numpy.stack([numpy.stack([table[list(offsets).index(j - i)] for j in range(n)]) for i in range(n)])
    close(got, want, 1e-6, "sinusoidal encoding of j - i as rf's relative_positional_encoding")
    print("sinusoidal rel pos encoding: [%d, %d, 6] = rf's relative_positional_encoding's row of j - i"
          % (n, n))


def test_shape_ops():
    """slice, split, split_dims, merge_dims, shift_right and mask_padding against numpy."""
    net = Net(compile_model("op-shapes"), train_flag=False)
    feed = net.feed(5)
    x = feed[net.net.extern_data.data["data"].placeholder]
    lens = seq_lens(net, feed)
    close(net.layer("sliced", feed), x[..., 1:4], 0, "slice [1, 4)")
    close(net.layer("split_b", feed), x[..., 2:5], 0, "split's second part")
    close(net.layer("split_dims", feed), x[..., 2:5, None], 0, "split_dims")
    close(net.layer("merged", feed), x[..., 2:5], 0, "merge_dims")
    shifted = net.layer("shifted", feed)
    close(shifted[:, 0], 0 * x[:, 0], 0, "shift_right pads the first frame with zeros")
    close(shifted[:, 1:], x[:, :-1], 0, "shift_right")
    masked = net.layer("masked", feed)
    for b, n in enumerate(lens):
        close(masked[b, :n], x[b, :n], 0, "mask_padding keeps frames within the length")
        assert (masked[b, n:] == -1).all(), "mask_padding sets frames past the length"
    print("slice, split, split_dims, merge_dims, shift_right, mask_padding: checked")


def test_pooling():
    """Max pool 2 over the (spatial) features with same padding; avg pool 2
    over time with stride 2, valid padding."""
    net = Net(compile_model("mod-conv2d"), train_flag=False)
    feed = net.feed(6)
    conv = net.layer("conv_out", feed)  # [B, T, feat 5, ch 4]
    want = numpy.stack([conv[:, :, 0:2].max(2), conv[:, :, 2:4].max(2), conv[:, :, 4]], axis=2)
    close(net.layer("pooled", feed), want, 1e-6, "max pool over features")
    net = Net(compile_model("mod-conv-stride"), train_flag=False)
    feed = net.feed(6)
    x = feed[net.net.extern_data.data["data"].placeholder]
    lens = seq_lens(net, feed)
    got = net.layer("avg_pooled", feed)
    for b, n in enumerate(lens):
        m = n // 2  # "valid": whole windows within the sequence
        close(got[b, :m], (x[b, 0:2 * m:2] + x[b, 1:2 * m:2]) / 2, 1e-6, "avg pool over time, stride 2")
    sub = net.layer("strided", feed)
    assert sub.shape[1] == (x.shape[1] + 1) // 2, sub.shape  # "same": ceil(T / 2)
    print("max pool (features), avg pool (time, stride 2), strided conv lengths: checked")


def test_decoder_causality():
    """Teacher-forced decoders: the output at target position t depends on
    targets before t only (shift right + causal self-attention), and on the
    whole source through cross-attention; source padding is masked. The
    plain layers (mod-seq2seq: RETURNN's fused causal attention) and those
    with a QKV bias and a fused cross-attention kv (mod-transformer-rf: from
    primitive ops), and post-norm (mod-transformer-postnorm)."""
    for model in ("mod-seq2seq", "mod-transformer-rf", "mod-transformer-postnorm"):
        _check_decoder_causality(model)
        returnn_probe.reset_batch_dim()


def _check_decoder_causality(model):
    net = Net(compile_model(model), train_flag=False)
    feed = net.feed(7)
    src, tgt = net.net.extern_data.data["data"], net.net.extern_data.data["classes"]
    src_lens, tgt_lens = seq_lens(net, feed, "data"), seq_lens(net, feed, "classes")
    b = int(numpy.argmax(tgt_lens))
    assert tgt_lens[b] >= 2
    before = net.layer("output", feed)
    y = feed[tgt.placeholder].copy()
    y[b, 1] = (y[b, 1] + 1) % 6
    feed[tgt.placeholder] = y
    after = net.layer("output", feed)
    close(before[b, :2], after[b, :2], 1e-6, "positions 0 and 1 ignore target 1")
    # ... but position 1 reads target 0 (the shifted input), position 0 does not.
    y[b, 0] = (y[b, 0] + 1) % 6
    feed[tgt.placeholder] = y
    moved = net.layer("output", feed)
    close(moved[b, 0], after[b, 0], 1e-6, "position 0 ignores target 0")
    assert not numpy.allclose(moved[b, 1], after[b, 1]), "position 1 does not read target 0"
    y[b, 0] = (y[b, 0] - 1) % 6
    feed[tgt.placeholder] = y
    x = feed[src.placeholder].copy()
    x[b, src_lens[b] - 1] = (x[b, src_lens[b] - 1] + 1) % 6
    feed[src.placeholder] = x
    again = net.layer("output", feed)
    assert not numpy.allclose(after[b, 0], again[b, 0]), "cross-attention does not see the last source token"
    short = int(numpy.argmin(src_lens))
    x[short, src_lens[short]:] = (x[short, src_lens[short]:] + 1) % 6
    feed[src.placeholder] = x
    padded = net.layer("output", feed)
    close(padded[short], again[short], 1e-5, "source padding is masked")
    print("%s: causal over targets, sees the whole source, source padding masked" % model)


def test_group_norm():
    """GroupNorm (6 channels, 3 groups) against numpy: over each group's channels and
    the sequence's frames (within its length; torch.nn.GroupNorm's statistics), and
    per frame (rf's GroupNorm); initial scale 1 and bias 0."""
    net = Net(compile_model("mod-group-norm"), train_flag=False)
    feed = net.feed(3)
    h, lens = net.layer("h", feed), seq_lens(net, feed)
    over_time, per_frame = net.layer("gn_time", feed), net.layer("gn_frame", feed)
    for b, n in enumerate(lens):
        g = h[b, :n].reshape(n, 3, 2).astype("float64")
        want = (g - g.mean(axis=(0, 2), keepdims=True)) / numpy.sqrt(g.var(axis=(0, 2), keepdims=True) + 1e-5)
        close(over_time[b, :n], want.reshape(n, 6), 1e-4, "group norm over time, seq %d" % b)
        want = (g - g.mean(axis=2, keepdims=True)) / numpy.sqrt(g.var(axis=2, keepdims=True) + 1e-5)
        close(per_frame[b, :n], want.reshape(n, 6), 1e-4, "group norm per frame, seq %d" % b)
    print("group norm: over time (within each length) and per frame as numpy's, lengths %s" % list(lens))


def _test_audio(lengths, seed=3):
    """Speech-like test signals at 16 kHz: a few harmonics of a gliding pitch
    and some noise, a different mix per sequence; zero-padded to the longest."""
    rng = numpy.random.RandomState(seed)
    audio = numpy.zeros((len(lengths), max(lengths)), dtype="float32")
    for b, n in enumerate(lengths):
        t = numpy.arange(n) / 16000.0
        f0 = rng.uniform(90, 220) * (1 + 0.2 * t)
        wave = sum(rng.uniform(0.1, 1) / h * numpy.sin(2 * numpy.pi * h * f0 * t + rng.uniform(0, 6)) for h in range(1, 9))
        audio[b, :n] = 0.3 * wave + 0.02 * rng.normal(size=n)
    return audio


def test_log_mel():
    """Log-mel features in the model (nn::log_mel_filterbank_from_raw: 80 filters, 25 ms
    windows every 10 ms, 512-point FFT) equal RETURNN frontend's own
    log_mel_filterbank_from_raw (rf.stft's FFT on torch) on the same audio, 3
    sequences of different lengths, within 1e-4; the frames per sequence as
    rf counts them; the power spectrum equals torch.stft's |X|^2 (TF/SciPy
    alignment: the 400-sample window left in the 512-point frame)."""
    import torch
    import returnn.frontend as rf
    from returnn.tensor import Dim, Tensor as RfTensor

    net = Net(compile_model("mod-log-mel"), train_flag=False)
    lengths = [16000, 9137, 4000]
    audio = _test_audio(lengths)
    data = net.net.extern_data.data["data"]
    feed = {data.placeholder: audio[:, :, None], data.get_sequence_lengths(): numpy.array(lengths, dtype="int32")}
    got, power = net.layer("log_mel", feed), net.layer("power", feed)
    frames = net.run(net.net.get_layer("log_mel").output.get_sequence_lengths(), feed)

    rf.select_backend_torch()
    batch, time, mel = Dim(len(lengths), name="batch"), Dim(None, name="time"), Dim(80, name="mel")
    time.dyn_size_ext = RfTensor("lens", dims=[batch], dtype="int32", raw_tensor=torch.tensor(lengths, dtype=torch.int32))
    x = RfTensor("audio", dims=[batch, time], dtype="float32", raw_tensor=torch.tensor(audio))
    want, out_time = rf.audio.log_mel_filterbank_from_raw(x, in_spatial_dim=time, out_dim=mel)
    want_frames = out_time.dyn_size_ext.raw_tensor.numpy()
    assert list(frames) == list(want_frames), (frames, want_frames)
    want = want.copy_transpose([batch, out_time, mel]).raw_tensor.numpy()
    # Both against the float64 truth (numpy's FFT, rf's filter matrix): float32
    # rounding in either, relative to each frame's energy (printed).
    from returnn.frontend.audio.mel import _mel_filter_bank_matrix_np
    filters = _mel_filter_bank_matrix_np(f_min=0, f_max=8000, sampling_rate=16000, fft_size=512, nr_of_filters=80)
    hann = 0.5 - 0.5 * numpy.cos(2 * numpy.pi * numpy.arange(400) / 400)
    worst = {"rf": 0.0, "truth": 0.0, "rf_truth": 0.0}
    for b, n in enumerate(frames):
        signal = audio[b].astype("float64")
        windows = numpy.stack([signal[t * 160:t * 160 + 400] * hann for t in range(n)])
        truth = numpy.log10(numpy.maximum(numpy.abs(numpy.fft.rfft(windows, 512)) ** 2 @ filters, 1e-10))
        for key, a, b_ in (("rf", got, want), ("truth", got, None), ("rf_truth", want, None)):
            ref = b_[b, :n] if b_ is not None else truth
            worst[key] = max(worst[key], float(numpy.abs(a[b, :n] - ref).max()))
    assert worst["rf"] <= 1e-4, ("log-mel: max |retc - rf|", worst)
    window = torch.nn.functional.pad(torch.hann_window(400), (0, 112))
    for b, n in enumerate(frames):
        signal = torch.nn.functional.pad(torch.tensor(audio[b, :lengths[b]]), (0, 112))  # as rf.stft
        spec = torch.stft(signal, n_fft=512, hop_length=160, win_length=512,
                          window=window, center=False, return_complex=True)
        want_power = (spec.abs() ** 2).numpy().T  # [frames, 257]
        assert want_power.shape[0] == n, (want_power.shape, n)
        scale = float(want_power.max())
        close(power[b, :n] / scale, want_power / scale, 1e-5, "power spectrum, sequence %d" % b)
    print("log-mel of %s samples (%s frames): max |retc - rf| = %.3g; against float64 numpy: retc %.3g, "
          "rf %.3g; the power spectrum = torch.stft's" % (
              lengths, [int(n) for n in frames], worst["rf"], worst["truth"], worst["rf_truth"]))


def test_rotary_attention():
    """SelfAttentionOptions(...).causal(true).rotary(true) equals RETURNN frontend's own
    RotaryPosCausalSelfAttention (with_bias=False) with the same params on the same
    batch (valid frames), within 1e-5: the same pairs, angles and numbers."""
    import torch
    import returnn.frontend as rf
    from returnn.tensor import Dim, Tensor as RfTensor

    net = Net(compile_model("mod-rotary-attention"), train_flag=False)
    feed = net.feed(3, max_time=9)
    x, got, lens = net.layer("data:data", feed), net.layer("attended", feed), seq_lens(net, feed)
    qkv, proj = net.variable("att/qkv/param:0"), net.variable("att/proj/weight/param:0")
    from returnn.frontend.attention import _apply_rope_real
    from returnn.torch.frontend._backend import TorchBackend

    # rf's backend-independent RoPE (its reference for the backends): the torch
    # backend's torch.compile kernel loads an LLVM that clashes with TF's here.
    TorchBackend.apply_rope = staticmethod(_apply_rope_real)
    rf.select_backend_torch()
    batch, time = Dim(x.shape[0], name="batch"), Dim(None, name="time")
    time.dyn_size_ext = RfTensor("lens", dims=[batch], dtype="int32", raw_tensor=torch.tensor(lens))
    in_dim = Dim(x.shape[2], name="in")
    att = rf.RotaryPosCausalSelfAttention(in_dim=in_dim, proj_dim=in_dim, key_dim_total=Dim(8, name="key"),
                                          value_dim_total=Dim(8, name="value"), num_heads=2, with_bias=False)
    with torch.no_grad():
        att.qkv.weight.raw_tensor.copy_(torch.tensor(qkv))
        att.proj.weight.raw_tensor.copy_(torch.tensor(proj))
        out, _ = att(RfTensor("x", dims=[batch, time, in_dim], dtype="float32", raw_tensor=torch.tensor(x)),
                     axis=time)
    want = out.copy_transpose([batch, time, in_dim]).raw_tensor.numpy()
    worst = max(float(numpy.abs(got[b, :n] - want[b, :n]).max()) for b, n in enumerate(lens))
    assert worst <= 1e-5, worst
    print("rotary causal self-attention = rf's RotaryPosCausalSelfAttention (lengths %s): max |diff| %.3g"
          % ([int(n) for n in lens], worst))


def _np_self_attention(net, name, x, pos, keys_visible, key=8, heads=2, clipping=0, rotary=False, qkv_bias=False):
    """numpy multi-head self-attention of the frames x [T, in] at positions `pos`: query t
    attends to the frames keys_visible(t) (indices into x); RETURNN's QKV layout (per head
    [q | k | v]), Shaw key shifts clip(j - i) of rel_pos, RoPE pairs (2i, 2i + 1)."""
    w = net.variable("%s/qkv/param:0" % name).astype("float64")
    h = x.astype("float64") @ w
    if qkv_bias:
        h = h + net.variable("%s/qkv_bias/param:0" % name)
    per = h.reshape(len(x), heads, -1)
    kph = key // heads
    q, k, v = per[:, :, :kph], per[:, :, kph:2 * kph], per[:, :, 2 * kph:]
    if rotary:
        freq = 10000.0 ** (-2.0 * numpy.arange(kph // 2) / kph)

        def rot(z):
            a = numpy.asarray(pos, "float64")[:, None, None] * freq
            re, im = z[..., 0::2], z[..., 1::2]
            out = numpy.empty_like(z)
            out[..., 0::2], out[..., 1::2] = re * numpy.cos(a) - im * numpy.sin(a), re * numpy.sin(a) + im * numpy.cos(a)
            return out
        q, k = rot(q), rot(k)
    table = net.variable("%s/rel_pos/param:0" % name).astype("float64") if clipping else None
    out = numpy.zeros((len(x), v.shape[1] * v.shape[2]))
    for t in range(len(x)):
        js = keys_visible(t)
        keys = k[js]  # [J, heads, kph]
        if clipping:
            keys = keys + table[numpy.clip(numpy.asarray(pos)[js] - pos[t], -clipping, clipping) + clipping][:, None]
        e = numpy.einsum("hd,jhd->hj", q[t] / numpy.sqrt(kph), keys)
        a = numpy.exp(e - e.max(1, keepdims=True))
        a /= a.sum(1, keepdims=True)
        out[t] = numpy.einsum("hj,jhd->hd", a, v[js]).reshape(-1)
    return out @ net.variable("%s/proj/weight/param:0" % name) + net.variable("%s/proj/bias/param:0" % name)


def test_attention_cache():
    """SelfAttention::forward_with_cache hands each call's keys and values to the next:
    calls over chunks (here x again each time) give, per sequence, the frames of one
    attention over the chunks concatenated at that sequence's length (numpy, within 1e-5),
    causal with relative positions over three chunks (offsets across chunks), causal rotary
    (positions after the cached frames) and non-causal with a QKV bias (each chunk sees
    every cached frame and all of its own). The torch target: the cross-backend case."""
    net = Net(compile_model("mod-attention-cache"), train_flag=False)
    feed = net.feed(4, batch=5, max_time=7)
    x, lens = net.layer("data:data", feed), seq_lens(net, feed)
    assert len(set(lens)) > 2, lens  # chunks continuing at several lengths
    cases = [("rel", 3, dict(clipping=2), True), ("rot", 2, dict(rotary=True), True),
             ("chunk", 2, dict(qkv_bias=True), False)]
    worst = 0.0
    for name, chunks, opts, causal in cases:
        got = [net.layer("%s_%d" % (name, c + 1), feed) for c in range(chunks)]
        for b, n in enumerate(lens):
            seq = numpy.concatenate([x[b, :n]] * chunks)
            pos = numpy.arange(len(seq))
            visible = (lambda t: numpy.arange(t + 1)) if causal else (lambda t: numpy.arange((t // n + 1) * n))
            want = _np_self_attention(net, name, seq, pos, visible, **opts)
            for c in range(chunks):
                diff = float(numpy.abs(got[c][b, :n] - want[c * n:(c + 1) * n]).max())
                assert diff <= 1e-5, (name, c + 1, b, diff)
                worst = max(worst, diff)
    print("attention cache over chunks (lengths %s) = numpy over the chunks concatenated: rel-pos causal "
          "x3, rotary causal x2, non-causal with QKV bias x2; max |diff| %.3g" % ([int(n) for n in lens], worst))


def test_ctc_durations():
    """nn::ctc_best_path_durations against numpy: each frame's best class
    within the sequence's length, runs of one class, the labeled runs' classes
    and frame counts; the labels equal ctc_greedy_decode's. Random logits of
    12 to 14 frames over 3 labels + blank (several seeds, so that runs of a
    label longer than one frame and sequences ending in a label occur)."""
    net = Net(compile_model("op-ctc-durations"), train_flag=False)
    checked, longest = 0, 0
    for seed in range(4):
        feed = net.feed(seed, max_time=14)
        logits, lens = _named(net, feed, "logits"), seq_lens(net, feed)
        assert logits[1][:2] == ["batch", "time"], logits[1]
        logits = logits[0]
        with net.graph.as_default():
            layers = [net.net.get_layer(n).output for n in ("path_labels", "path_frames", "greedy")]
            fetch = [(o.copy_as_batch_major().placeholder, o.get_sequence_lengths()) for o in layers]
        (labels, n_labels), (frames, n_frames), (greedy, n_greedy) = net.run(fetch, feed)
        blank = logits.shape[-1] - 1
        for b, n in enumerate(lens):
            best = logits[b, :n].argmax(-1)
            runs = []  # [class, frames]
            for c in best:
                if runs and runs[-1][0] == c:
                    runs[-1][1] += 1
                else:
                    runs.append([c, 1])
            want = [(c, k) for c, k in runs if c != blank]
            got = list(zip(labels[b, :n_labels[b]], frames[b, :n_frames[b]]))
            assert n_labels[b] == n_frames[b] == len(want), (b, n_labels[b], n_frames[b], want)
            assert [(int(c), int(k)) for c, k in got] == [(int(c), int(k)) for c, k in want], (got, want)
            assert list(greedy[b, :n_greedy[b]]) == [c for c, _ in want]
            checked += len(want)
            longest = max([longest] + [k for _, k in want])
    assert checked > 0 and longest > 1, (checked, longest)
    print("CTC best path with durations = numpy's: %d labels, runs up to %d frames" % (checked, longest))


def _retc_block_output(model, seed=3, max_time=9):
    """TF's run of MODEL's marked "block" (an encoder block on the input
    features) after every param was perturbed: (input, output, lengths,
    {variable path under block/: value})."""
    net = Net(compile_model(model), train_flag=False)
    rng = numpy.random.RandomState(seed)
    with net.graph.as_default():
        for v in net.net.get_params_list():
            value = net.session.run(v)
            value = rng.uniform(0.5, 1.5, value.shape) if "running_var" in v.name else \
                value + rng.normal(0.0, 0.1, value.shape)
            v.load(value.astype(v.dtype.as_numpy_dtype), net.session)
    feed = net.feed(seed, max_time=max_time)
    x, got, lens = net.layer("data:data", feed), net.layer("block", feed), seq_lens(net, feed)
    params = {k[len("block/"):-len("/param:0")]: v for k, v in net.params().items() if k.startswith("block/")}
    net.close()
    return x, got, lens, params


def _worst_valid_frame_diff(got, want, lens):
    return max(float(numpy.abs(got[b, :n] - want[b, :n]).max()) for b, n in enumerate(lens))


def test_e_branchformer():
    """nn::EBranchformerBlock equals RETURNN frontend's own EBranchformerLayer
    (rf.encoder.e_branchformer: Transformer-XL relative positions, cgMLP,
    merge) param for param: the same names up to renaming, the same shapes
    (conv filters transposed), and with retc's (perturbed) params copied into
    rf's layer, the same outputs on the same batch (valid frames) within 1e-5."""
    import torch
    import returnn.frontend as rf
    from returnn.frontend.encoder.e_branchformer import EBranchformerLayer
    from returnn.tensor import Dim, Tensor as RfTensor

    x, got, lens, params = _retc_block_output("mod-e-branchformer")
    rf.select_backend_torch()
    rf.set_random_seed(1)
    model = Dim(8, name="model")
    layer = EBranchformerLayer(model, ff_dim=Dim(16, name="ff"), num_heads=2, cgmlp_ff_dim=Dim(12, name="cgmlp"),
                               cgmlp_conv_kernel=3, merge_conv_kernel=3)
    renames = [("ffn1_layer_norm", "ff1_norm"), ("ffn2_layer_norm", "ff2_norm"), ("ffn1", "ff1"), ("ffn2", "ff2"),
               ("self_att_layer_norm", "att_norm"), ("cgmlp_layer_norm", "cgmlp_norm"),
               ("final_layer_norm", "final_norm"), ("depthwise_conv_fusion", "depthwise_conv"),
               ("merge_proj", "proj"), ("filter", "weight")]
    copied = set()
    with torch.no_grad():
        for name, p in layer.named_parameters():
            ours = name
            for a, b in renames:
                ours = ours.replace(a, b)
            value = params[ours.replace(".", "/")]
            if name.endswith("filter"):  # rf: [out, in / groups, kernel]; retc: [kernel, in / groups, out]
                value = value.transpose(2, 1, 0)
            assert list(value.shape) == [d.dimension for d in p.dims], (name, value.shape, p.dims)
            p.raw_tensor.copy_(torch.tensor(value))
            copied.add(ours.replace(".", "/"))
    assert copied == set(params), "retc params rf's layer lacks: %s" % sorted(set(params) - copied)
    batch, time = Dim(x.shape[0], name="batch"), Dim(None, name="time")
    time.dyn_size_ext = RfTensor("lens", dims=[batch], dtype="int32", raw_tensor=torch.tensor(lens))
    rf.init_forward_step_run_ctx()
    with torch.no_grad():
        out = layer(RfTensor("x", dims=[batch, time, model], dtype="float32", raw_tensor=torch.tensor(x)),
                    spatial_dim=time)
    want = out.copy_transpose([batch, time, model]).raw_tensor.numpy()
    worst = _worst_valid_frame_diff(got, want, lens)
    assert worst <= 1e-5, worst
    print("EBranchformerBlock = rf's EBranchformerLayer (%d params, lengths %s): max |diff| %.3g"
          % (len(params), [int(n) for n in lens], worst))


def test_conformer_order():
    """A ConformerBlock of another module order (mod-conformer-order's "block":
    {"mhsa", "ff", "conv"}, scales {1, 0.5, 1}, plain self-attention with a QKV
    bias) equals i6_models' ConformerBlockV2 of that order and scales (torch's
    MultiheadAttention, BatchNorm1d in the conv module) with retc's (perturbed)
    params copied in, on the same batch (valid frames) within 1e-5. (Its
    LayerNorms' epsilon set to retc's 1e-6, torch's default being 1e-5; and
    its depthwise convolution sees zeros past each sequence's end, as
    RETURNN's on both targets: i6_models convolves the padding frames' values,
    so a shorter sequence's last frames would depend on its batch.)"""
    import torch
    from i6_models.assemblies.conformer.conformer_v2 import ConformerBlockV2, ConformerBlockV2Config
    from i6_models.parts.conformer import (ConformerConvolutionV1Config, ConformerMHSAV1Config,
                                           ConformerPositionwiseFeedForwardV1Config)

    x, got, lens, params = _retc_block_output("mod-conformer-order")
    d, heads = 8, 2
    cfg = ConformerBlockV2Config(
        ff_cfg=ConformerPositionwiseFeedForwardV1Config(input_dim=d, hidden_dim=16, dropout=0.2,
                                                        activation=torch.nn.functional.silu),
        mhsa_cfg=ConformerMHSAV1Config(input_dim=d, num_att_heads=heads, att_weights_dropout=0.0, dropout=0.05),
        conv_cfg=ConformerConvolutionV1Config(channels=d, kernel_size=3, dropout=0.0,
                                              activation=torch.nn.functional.silu, norm=torch.nn.BatchNorm1d(d)),
        modules=["mhsa", "ff", "conv"], scales=[1.0, 0.5, 1.0])
    block = ConformerBlockV2(cfg).eval()
    for m in block.modules():
        if isinstance(m, torch.nn.LayerNorm):
            m.eps = 1e-6
    mhsa, ff, conv = block.module_list
    mask = torch.arange(x.shape[1])[None, :] < torch.tensor(lens)[:, None]
    conv.depthwise_conv.register_forward_pre_hook(lambda _, args: (args[0] * mask[:, None, :],))
    p = lambda name: torch.tensor(params[name])  # noqa: E731
    dh = d // heads
    # retc's fused QKV columns are per head [q | k | v]; torch's rows are [q; k; v], heads inside each.
    order = [h * 3 * dh + part * dh + j for part in range(3) for h in range(heads) for j in range(dh)]
    with torch.no_grad():
        for module, norm in ((mhsa.layernorm, "att_norm"), (ff.layer_norm, "ff1_norm"),
                             (conv.layer_norm, "conv_norm"), (block.final_layer_norm, "final_norm")):
            module.weight.copy_(p(norm + "/scale"))
            module.bias.copy_(p(norm + "/bias"))
        mhsa.mhsa.in_proj_weight.copy_(p("self_att/qkv").T[order])
        mhsa.mhsa.in_proj_bias.copy_(p("self_att/qkv_bias")[order])
        mhsa.mhsa.out_proj.weight.copy_(p("self_att/proj/weight").T)
        mhsa.mhsa.out_proj.bias.copy_(p("self_att/proj/bias"))
        for linear, name in ((ff.linear_ff, "ff1/linear_ff"), (ff.linear_out, "ff1/linear_out"),
                             (conv.pointwise_conv1, "conv/pointwise_conv1"),
                             (conv.pointwise_conv2, "conv/pointwise_conv2")):
            linear.weight.copy_(p(name + "/weight").T)
            linear.bias.copy_(p(name + "/bias"))
        conv.depthwise_conv.weight.copy_(p("conv/depthwise_conv/weight").permute(2, 1, 0))
        conv.depthwise_conv.bias.copy_(p("conv/depthwise_conv/bias"))
        conv.norm.weight.copy_(p("conv/norm/scale"))
        conv.norm.bias.copy_(p("conv/norm/bias"))
        conv.norm.running_mean.copy_(p("conv/norm/running_mean").reshape(-1))
        conv.norm.running_var.copy_(p("conv/norm/running_var").reshape(-1))
        want = block(torch.tensor(x), mask).numpy()
    n_params = sum(v.size for v in params.values())
    assert n_params == sum(t.numel() for t in block.state_dict().values() if t.dtype.is_floating_point), n_params
    worst = _worst_valid_frame_diff(got, want, lens)
    assert worst <= 1e-5, worst
    print("ConformerBlock {mhsa, ff, conv} x {1, 0.5, 1} = i6_models' ConformerBlockV2 (%d values, lengths %s): "
          "max |diff| %.3g" % (n_params, [int(n) for n in lens], worst))


def _levenshtein(a, b):
    d = numpy.arange(len(b) + 1)
    for i, x in enumerate(a, 1):
        prev, d[0] = d[0], i
        for j, y in enumerate(b, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (x != y))
    return int(d[-1])


def test_edit_distance():
    """nn::edit_distance against the Levenshtein distance in Python, on 3 batches
    of label sequences (each within its length; a second axis of its own);
    both targets: cross_backend.loss-values."""
    net = Net(compile_model("loss-values"), train_flag=False)
    checked = []
    for seed in (1, 2, 3):
        feed = net.feed(seed, max_time=9)
        y, labels = net.layer("data:classes", feed), net.layer("data:labels", feed)
        got = net.layer("edit_distance", feed)
        n_y, n_labels = seq_lens(net, feed), seq_lens(net, feed, "labels")
        for b in range(len(got)):
            want = _levenshtein(list(labels[b, :n_labels[b]]), list(y[b, :n_y[b]]))
            assert got[b] == want, (seed, b, got[b], want)
            checked.append(int(want))
    print("edit distances = Levenshtein's: %s" % checked)


def _transducer_nll(logits, labels, monotonic):
    """The transducer's negative log-likelihood in float64 numpy, the forward
    algorithm written out: logits [T, U + 1, labels + blank] (blank last),
    labels [U]. RNN-T (Graves 2012, eq. 16-17) or one symbol per frame (RNA)."""
    lp = logits.astype("float64")
    lp = lp - numpy.logaddexp.reduce(lp, axis=-1, keepdims=True)
    n_frames, n_pos, blank = lp.shape[0], lp.shape[1], lp.shape[2] - 1
    if monotonic:
        s = numpy.full(n_pos, -numpy.inf)
        s[0] = 0.0
        for t in range(n_frames):
            moved = numpy.full(n_pos, -numpy.inf)
            moved[1:] = s[:-1] + lp[t, numpy.arange(n_pos - 1), labels]
            s = numpy.logaddexp(s + lp[t, :, blank], moved)
        return -s[-1]
    alpha = numpy.full((n_frames, n_pos), -numpy.inf)
    for t in range(n_frames):
        for u in range(n_pos):
            if t == 0 and u == 0:
                alpha[t, u] = 0.0
                continue
            stay = alpha[t - 1, u] + lp[t - 1, u, blank] if t > 0 else -numpy.inf
            emit = alpha[t, u - 1] + lp[t, u - 1, labels[u - 1]] if u > 0 else -numpy.inf
            alpha[t, u] = numpy.logaddexp(stay, emit)
    return -(alpha[-1, -1] + lp[-1, -1, blank])


def test_transducer_loss():
    """nn::transducer_loss against the forward algorithm in float64 numpy: the
    RNN-T loss and the monotonic (RNA) one per sequence, on 3 sequences of
    their own frame and label counts; the RNN-T loss's gradient with respect
    to the logits (TF's, through the loop) against central differences of the
    numpy reference; torch's param gradients equal TF's. Both targets give the
    same values (cross_backend.loss-transducer)."""
    import tensorflow as tf
    import torch

    # In training (RETURNN builds a loop without backprop in evaluation); the model has no dropout.
    net = Net(compile_model("loss-transducer"), train_flag=True)
    feed = net.feed(4)
    for p in list(feed):  # 3, 1 and 2 labels (retc check's batch has 2 each)
        if p.name.startswith("extern_data/placeholders/labels/labels:"):
            feed[p] = numpy.random.RandomState(4).randint(0, 3, size=(3, 3)).astype("int32")
        elif p.name.startswith("extern_data/placeholders/labels/labels_dim0_size:"):
            feed[p] = numpy.array([3, 1, 2], dtype="int32")
    out = net.net.get_layer("logits").output
    bsm = out.copy_as_batch_spatial_major()
    names = [tag.description for tag in bsm.dim_tags]
    logits = net.layer("logits", feed)  # [B, time, pred_time, 4] in some spatial order
    if not names[1].startswith("time"):
        logits = logits.transpose(0, 2, 1, 3)
    # The lengths as fed (the loop over time gave RETURNN's time dim a size of its own).
    fed = {p.name.split(":")[0]: v for p, v in feed.items()}
    frames = fed["extern_data/placeholders/data/data_dim0_size"]
    n_labels = fed["extern_data/placeholders/labels/labels_dim0_size"]
    labels = net.layer("data:labels", feed)
    rnnt, rna = net.layer("rnnt_value", feed), net.layer("rna_value", feed)
    for b in range(len(frames)):
        lg = logits[b, :frames[b], :n_labels[b] + 1]
        y = labels[b, :n_labels[b]]
        close(rnnt[b], _transducer_nll(lg, y, False), 1e-4, "RNN-T loss, sequence %d" % b)
        close(rna[b], _transducer_nll(lg, y, True), 1e-4, "RNA loss, sequence %d" % b)
    grad = net.run(lambda: tf.gradients(tf.reduce_sum(net.net.get_layer("rnnt_value").output.placeholder),
                                        out.placeholder)[0], feed)
    grad = grad.transpose([out.dim_tags.index(tag) for tag in bsm.dim_tags])
    if not names[1].startswith("time"):
        grad = grad.transpose(0, 2, 1, 3)
    rng, eps, worst = numpy.random.RandomState(5), 1e-4, 0.0
    for _ in range(12):
        b = rng.randint(len(frames))
        t, u, k = rng.randint(frames[b]), rng.randint(n_labels[b] + 1), rng.randint(4)
        lg = logits[b, :frames[b], :n_labels[b] + 1].astype("float64")
        y = labels[b, :n_labels[b]]
        plus, minus = lg.copy(), lg.copy()
        plus[t, u, k] += eps
        minus[t, u, k] -= eps
        want = (_transducer_nll(plus, y, False) - _transducer_nll(minus, y, False)) / (2 * eps)
        worst = max(worst, abs(grad[b, t, u, k] - want))
        close(grad[b, t, u, k], want, 1e-3, "d loss / d logits[%d, %d, %d, %d]" % (b, t, u, k))
    # The torch target's gradients (autograd through its loop) equal TF's: the
    # RNN-T loss's (the trained one) gradient of every param, on retc check's batch.
    import torch_probe

    with net.graph.as_default():
        params = net.net.get_params_list()
        loss = tf.reduce_sum(net.net.get_layer("rnnt").output.placeholder)
        tf_grads = dict(zip([v.name for v in params], net.session.run(tf.gradients(loss, params), feed)))
        values = dict(zip([v.name for v in params], net.session.run(params)))
    tnet = torch_probe.TorchNet(torch_probe.compile_model("loss-transducer"), with_updater=False)
    tnet.pt_model.load_state_dict(
        {k: torch.tensor(values[k.replace(".", "/") + "/param:0"]) for k in tnet.pt_model.state_dict()}, strict=True)
    raw, template = tnet.batch(4)
    for key in raw:  # the TF feed's values (its labels above; classes share the data's time)
        name = key.split(":")[0]
        if ":" in key:
            name = "data" if name == "classes" else name
            raw[key] = torch.tensor(fed["extern_data/placeholders/%s/%s_dim0_size" % (name, name)])
        else:
            raw[key] = torch.tensor(fed["extern_data/placeholders/%s/%s" % (name, name)])
    ctx = tnet.run((raw, template))
    ctx.losses["rnnt"].loss.raw_tensor.sum().backward()
    grad_diff = 0.0
    for name, p in tnet.pt_model.named_parameters():
        want = tf_grads[name.replace(".", "/") + "/param:0"]
        grad_diff = max(grad_diff, float(numpy.abs(p.grad.numpy() - want).max()))
        close(p.grad.numpy(), want, 1e-4, "torch's gradient of " + name)
    print("transducer losses = numpy's forward algorithm (frames %s, labels %s): RNN-T %s, RNA %s; gradient "
          "within %.2g of central differences; torch's param gradients within %.2g of TF's" % (
              [int(n) for n in frames], [int(n) for n in n_labels], numpy.round(rnnt, 3), numpy.round(rna, 3),
              worst, grad_diff))


def _ir_param_shapes(model):
    """{param path: shape} of MODEL's IR (dump-ir's JSON)."""
    ir = json.loads(subprocess.run([BIN, "dump-ir", model, "--format", "json"], check=True,
                                   capture_output=True, text=True).stdout)
    sizes = {d["id"]: d.get("size") for d in ir["dims"]}
    return {p["path"]: [sizes[d] for d in p["dims"]] for p in ir["params"]}


def _rf_transformer_shapes(with_bias, llama=False):
    """{param name: shape} of RETURNN frontend's own TransformerEncoder and
    TransformerDecoder (rf.encoder.transformer, rf.decoder.transformer) with
    the dims of mod-transformer-rf (vocab 6, model 8, 2 heads, 2 layers, ff
    4 x model: rf's default): rf's defaults, or without biases (rf's
    with_bias=False in the feed-forward, self- and cross-attention), with
    `llama` also RMSNorm and FeedForwardGated (ff 32)."""
    import returnn.frontend as rf
    from returnn.frontend.decoder.transformer import FeedForward, FeedForwardGated, TransformerDecoder
    from returnn.frontend.encoder.transformer import TransformerEncoder
    from returnn.tensor import Dim

    rf.select_backend_torch()
    vocab, model = Dim(6, name="vocab"), Dim(8, name="model")
    enc_opts, dec_opts = {}, {}
    if not with_bias:
        enc_opts = dict(ff=rf.build_dict(FeedForward, with_bias=False))
        if llama:  # FeedForwardGated has no biases by default
            enc_opts = dict(ff=rf.build_dict(FeedForwardGated, ff_dim=32), norm=rf.RMSNorm)
        dec_opts = dict(enc_opts)
        enc_opts = dict(enc_opts, layer_opts=dict(self_att=rf.build_dict(rf.SelfAttention, with_bias=False)))
        dec_opts = dict(dec_opts, layer_opts=dict(self_att=rf.build_dict(rf.CausalSelfAttention, with_bias=False),
                                                  cross_att=rf.build_dict(rf.CrossAttention, with_bias=False)))
    encoder = TransformerEncoder(vocab, model, num_layers=2, num_heads=2, **enc_opts)
    decoder = TransformerDecoder(encoder_dim=model, vocab_dim=vocab, model_dim=model, num_layers=2, num_heads=2,
                                 **dec_opts)
    shapes = {}
    for prefix, module in (("encoder", encoder), ("decoder", decoder)):
        for name, param in module.named_parameters():
            shapes["%s.%s" % (prefix, name)] = [d.dimension for d in param.dims]
    return shapes


def test_transformer_rf_params():
    """The built-in Transformer layers with options build the same params as
    RETURNN frontend's own Transformer encoder and decoder, with biases (rf's
    defaults: mod-transformer-rf) and without (mod-transformer-rf-nobias; with RMS
    norms and a gated feed-forward: mod-transformer-llama):
    the same number of params of each shape, and the same total. (Both
    models run in RETURNN on both targets: test_structure, the decoder
    causality test and the cross-backend cases.)"""
    for model, with_bias, llama in (("mod-transformer-rf", True, False), ("mod-transformer-rf-nobias", False, False),
                                    ("mod-transformer-llama", False, True)):
        ours, theirs = _ir_param_shapes(model), _rf_transformer_shapes(with_bias, llama)
        def count(shapes):
            counts = {}
            for shape in shapes.values():
                counts[tuple(shape)] = counts.get(tuple(shape), 0) + 1
            return counts
        assert count(ours) == count(theirs), "%s: params by shape: retc %s, rf %s\nretc: %s\nrf: %s" % (
            model, sorted(count(ours).items()), sorted(count(theirs).items()), sorted(ours), sorted(theirs))
        total = sum(int(numpy.prod(s)) for s in ours.values())
        assert total == sum(int(numpy.prod(s)) for s in theirs.values())
        print("%s: %d params (%d values), shape for shape as rf's TransformerEncoder + TransformerDecoder%s" % (
            model, len(ours), total, "" if with_bias else " with with_bias=False" + (
                ", RMSNorm, FeedForwardGated" if llama else "")))


def test_conformer_rf_params():
    """The built-in Conformer with options (mod-conformer-rf's encoder: rel_pos_xl,
    att_qkv_bias, conv_kernel 32, its frontend's channels and no projection bias)
    builds RETURNN frontend's own ConformerEncoder defaults with that frontend
    (ConformerConvSubsample: two 3x3 convs of 8 channels, pool 1x2, time stride
    2), param for param: the same sizes (layouts differ: rf's conv filters are
    [out, in, k...]), the same count. (RETURNN runs the model on both targets:
    the cross-backend case.)"""
    import returnn.frontend as rf
    from returnn.frontend.encoder.conformer import ConformerConvSubsample, ConformerEncoder
    from returnn.tensor import Dim

    rf.select_backend_torch()
    in_dim, model = Dim(40, name="in"), Dim(16, name="model")
    frontend = ConformerConvSubsample(in_dim, out_dims=[Dim(8, name="c1"), Dim(8, name="c2")],
                                      filter_sizes=[(3, 3), (3, 3)], pool_sizes=[(1, 2)], strides=[(1, 1), (2, 1)])
    encoder = ConformerEncoder(in_dim, model, num_layers=2, num_heads=2, input_layer=frontend)
    theirs = {n: [d.dimension for d in p.dims] for n, p in encoder.named_parameters()}
    ours = {k: v for k, v in _ir_param_shapes("mod-conformer-rf").items() if k.startswith("encoder.")}

    def sizes(shapes):
        return sorted(tuple(sorted(s)) for s in shapes.values())

    assert sizes(ours) == sizes(theirs), "retc %s\nrf %s" % (sorted(ours.items()), sorted(theirs.items()))
    total = sum(int(numpy.prod(s)) for s in ours.values())
    print("mod-conformer-rf's encoder: %d params (%d values), size for size as rf's ConformerEncoder" % (
        len(ours), total))


def test_cond():
    """nn::cond on the train flag is RETURNN's cond layer, each branch a subnetwork
    (computed only when taken): training gives the first branch's value,
    evaluation the second's."""
    config = compile_model("op-cond")
    for train, check in ((True, "then_check"), (False, "else_check")):
        net = Net(config, train_flag=train)
        cond = net.config.typed_value("network")["output"]
        assert cond["class"] == "cond" and cond["true_layer"]["class"] == "subnetwork", cond
        feed = net.feed(2)
        close(net.layer("output", feed), net.layer(check, feed), 1e-6, "cond = " + check)
        net.close()
    print("cond: training takes the first branch, evaluation the second; branches are subnetworks")


def test_lstm_state():
    """An LSTM's final state is its output at each sequence's last frame (h) and
    its cell (c); it starts the second LSTM (whose output then differs from one
    started from zeros); Lstm::step in a loop gives the fused LSTM's outputs."""
    net = Net(compile_model("mod-lstm-state"), train_flag=False)
    feed = net.feed(4)
    lens = seq_lens(net, feed)
    y1, y1_steps, h1, c1 = (net.layer(name, feed) for name in ("y1", "y1_steps", "h1", "c1"))
    for b, n in enumerate(lens):
        close(y1_steps[b, :n], y1[b, :n], 1e-5, "Lstm::step = the fused LSTM")
        close(h1[b], y1[b, n - 1], 1e-6, "the final h = the output at the last frame")
    assert not numpy.allclose(h1, c1), "c is not h"
    print("lstm state: final h = last frame, Lstm::step = fused; lengths", list(lens))


def test_rel_pos_attention():
    """The relative-position table is used: zeroing it changes the output;
    its effect depends on offsets only (attention stays length-masked). Its
    rel_pos_dropout (0.5) acts in training on the table alone: training's
    output differs from evaluation's, and with the table zeroed they are equal."""
    config = compile_model("mod-rel-pos-attention")
    net = Net(config, train_flag=False)
    trained = Net(config, train_flag=True)
    feed = net.feed(8)
    train_feed = trained.feed(8)

    def attended(zero_table):
        for n in (net, trained):
            with n.graph.as_default():
                table = [v for v in n.net.get_params_list() if v.name == "att/rel_pos/param:0"][0]
                if zero_table:
                    n.session.run(table.assign(numpy.zeros(table.shape.as_list(), "float32")))
        return net.layer("attended", feed), trained.layer("attended", train_feed)

    with trained.graph.as_default():
        for v in trained.net.get_params_list():
            v.load(net.params()[v.name], trained.session)
    before, before_train = attended(False)
    after, after_train = attended(True)
    assert not numpy.allclose(before, after), "the relative position table has no effect"
    assert not numpy.allclose(before, before_train), "rel_pos_dropout has no effect in training"
    close(after_train, after, 0, "training with a zero table (dropout on the table alone)")
    print("relative-positional attention uses its table; its dropout acts on the table in training only")


def test_conformer_ctc():
    """The Conformer subsamples time by 2 (ceil) and its CTC loss trains:
    a few Adam steps on one batch lower it."""
    net = Net(compile_model("mod-conformer-ctc"), train_flag=True, with_updater=True, learning_rate=0.01)
    feed = net.feed(9)
    lens = seq_lens(net, feed)
    out = net.layer("output", feed)
    assert out.shape[1] == (int(lens.max()) + 1) // 2 and out.shape[-1] == 4, out.shape
    loss0 = net.run(lambda: net.net.get_total_loss(), feed)
    for _ in range(20):
        net.step(feed)
    loss1 = net.run(lambda: net.net.get_total_loss(), feed)
    print("CTC loss %.4f -> %.4f after 20 steps on one batch" % (loss0, loss1))
    assert numpy.isfinite(loss0) and loss1 < loss0 * 0.8, (loss0, loss1)


def _check_bundled(model):
    got = returnn_probe.constructed(model, os.environ["RETC"])
    return got, sum(int(numpy.prod(shape)) for shape in got.values())


def per_layer(d, ff):
    """A Transformer encoder layer: 2 layer norms, QKV, proj, feed-forward."""
    return 4 * d + 3 * d * d + d * d + d + d * ff + ff + ff * d + d


def test_bundled():
    """The bundled transformer-copy and conformer-ctc: RETURNN constructs
    them (returnn_probe.constructed, as `retc check` does) and their
    param counts equal the formulas."""
    got, total = _check_bundled("transformer-copy")
    d, ff, v = 64, 256, 10
    dec_layer = per_layer(d, ff) + 2 * d + 3 * d * d + d * d + d  # + ln3 and cross-attention
    want = 2 * v * d + 2 * per_layer(d, ff) + 2 * d + 2 * dec_layer + 2 * d + d * v + v
    assert total == want, ("transformer-copy", total, want)
    assert len(got) == 2 + 2 * 11 + 2 + 2 * (11 + 2 + 5) + 2 + 2, len(got)
    print("transformer-copy: %d variables, %d parameters (formula: %d)" % (len(got), total, want))
    got, total = _check_bundled("conformer-ctc")
    want_vars, count = conformer_frontend("encoder/frontend", 16, 8, 16, 64)
    for i in range(2):
        block, block_count = conformer_block("encoder/layers/%d" % i, 64, 128, 4, 7, 8)
        want_vars |= block
        count += block_count
    want_vars |= {"embed/weight/param:0": [2, 16], "out/weight/param:0": [64, 17], "out/bias/param:0": [17]}
    count += 2 * 16 + 64 * 17 + 17  # binary digits -> 16 features; 16 hex digits + blank
    assert got == want_vars, sorted(set(got) ^ set(want_vars))
    assert total == count, ("conformer-ctc", total, count)
    print("conformer-ctc: %d variables, %d parameters (formula: %d)" % (len(got), total, count))


def test_bundled_options():
    """`retc check conformer-ctc --set blocks=1 --set model_dim=32` prints the
    variables and the count of the formula for those sizes (and the default's
    2 x 64 give another count)."""
    out = subprocess.run([os.environ["RETC"], "check", "conformer-ctc", "--set", "blocks=1", "--set", "model_dim=32"],
                         check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout
    got = {}
    for line in out.splitlines():
        if line.startswith("variable "):
            _, name, shape = line.split(" ", 2)
            got[name] = json.loads(shape.replace(" (not trained)", ""))
    want_vars, count = conformer_frontend("encoder/frontend", 16, 8, 16, 32)
    block, block_count = conformer_block("encoder/layers/0", 32, 128, 4, 7, 8)
    want_vars |= block
    count += block_count + 2 * 16 + 32 * 17 + 17
    want_vars |= {"embed/weight/param:0": [2, 16], "out/weight/param:0": [32, 17], "out/bias/param:0": [17]}
    assert got == want_vars, sorted(set(got) ^ set(want_vars))
    summary = out.splitlines()[-1]
    # Batch norm's running mean and variance (32 each) are not trained.
    head = "conformer-ctc: %d variables, %d parameters (%d trainable, 64 not trained); " % (len(want_vars), count, count - 64)
    assert summary.startswith(head), (summary, head)
    print("conformer-ctc --set blocks=1 --set model_dim=32: %s" % summary.split(";")[0])


def test_loop():
    """A loop over time (RETURNN rec layer with a subnetwork): an Elman RNN
    and a running sum equal numpy's, frame by frame, within each length, and
    loop.last gives each sequence's last frame of them."""
    net = Net(compile_model("mod-loop"), train_flag=False)
    feed = net.feed(3)
    x = feed[net.net.extern_data.data["data"].placeholder].astype("float64")
    lens = seq_lens(net, feed)
    w, bias = net.variable("in/weight/param:0"), net.variable("in/bias/param:0")
    u = net.variable("rec/weight/param:0")
    rnn, cumsum = net.layer("rnn", feed), net.layer("cumsum", feed)
    rnn_last, total = net.layer("rnn_last", feed), net.layer("sum", feed)
    for b, n in enumerate(lens):
        h = numpy.zeros(u.shape[0])
        for t in range(n):
            h = numpy.tanh(x[b, t] @ w + bias + h @ u)
            close(rnn[b, t], h, 1e-5, "rnn frame %d" % t)
        close(cumsum[b, :n], numpy.cumsum(x[b, :n], axis=0), 1e-5, "running sum")
        close(rnn_last[b], h, 1e-5, "loop.last of the RNN")
        close(total[b], x[b, :n].sum(axis=0), 1e-5, "loop.last of the running sum")
    print("loop: Elman RNN and running sum match numpy over %d sequences; loop.last: each "
          "sequence's last frame" % len(lens))


def test_select():
    """one_hot, where on the train flag, range over time, and a masked loop
    update (sum over the frames whose first feature is positive)."""
    for train in (False, True):
        net = Net(compile_model("op-select"), train_flag=train)
        feed = net.feed(4)
        ids = feed[net.net.extern_data.data["ids"].placeholder]
        x = feed[net.net.extern_data.data["data"].placeholder].astype("float64")
        lens = seq_lens(net, feed)
        close(net.layer("one_hot", feed), numpy.eye(7)[ids], 0, "one_hot")
        close(net.layer("by_flag", feed), x if train else 2 * x, 1e-6, "where(train_flag, x, 2x)")
        close(net.layer("positions", feed), numpy.arange(x.shape[1]), 0, "range over time")
        got = net.layer("masked_sum", feed)
        for b, n in enumerate(lens):
            s = numpy.zeros(x.shape[-1])
            for t in range(n):
                if x[b, t, 0] > 0:
                    s = s + x[b, t]
                close(got[b, t], s, 1e-5, "masked running sum, frame %d" % t)
    print("one_hot, where(train_flag), range, masked loop update: checked in training and evaluation")


def ordered(net, name, feed, order):
    """A layer's value with its axes in `order` (dim names; "B" for the batch)."""
    out = net.net.get_layer(name).output
    names = ["B" if d.is_batch_dim() else d.name for d in out.dim_tags]
    value = net.run(out.placeholder, feed)
    return value.transpose([names.index(n) for n in order]).astype("float64")


def masked_softmax(z, n):
    """Softmax of z over axis 0 within the first n entries."""
    e = numpy.exp(z[:n] - z[:n].max(axis=0))
    return e / e.sum(axis=0)


def probe(model, seed):
    """An evaluation net of `model`, a random batch, its data (float64) and lengths."""
    net = Net(compile_model(model), train_flag=False)
    feed = net.feed(seed)
    x = feed[net.net.extern_data.data["data"].placeholder].astype("float64")
    return net, feed, x, seq_lens(net, feed)


def test_rq():
    """Models RETURNN once rejected after retc accepted them (tests/rq_models.cc):
    outer broadcasts in combine and where, attention's weighted sum, loop
    states initialized from constants without the state's dims (batch; the
    encoder's time), and a forward-only model in `retc check`."""
    # [B, T, classes] + [B, input]
    net, feed, x, lens = probe("rq-outer-broadcast", 2)
    logits = ordered(net, "output", feed, ["B", "time", "classes"])
    got = ordered(net, "bcast", feed, ["B", "time", "classes", "input"])
    for b, n in enumerate(lens):
        mean = x[b, :n].mean(axis=0)
        close(got[b, :n], logits[b, :n, :, None] + mean[None, None, :], 1e-5, "outer broadcast")
    # where(mean(x) > 0, logits, 0) over [B, T, classes, input]
    net, feed, x, lens = probe("rq-where-broadcast", 2)
    logits = ordered(net, "output", feed, ["B", "time", "classes"])
    got = ordered(net, "selected", feed, ["B", "time", "classes", "input"])
    for b, n in enumerate(lens):
        cond = x[b, :n].mean(axis=0) > 0
        want = numpy.where(cond[None, None, :], logits[b, :n, :, None], 0.0)
        close(got[b, :n], want, 1e-5, "where broadcast")
    # weights [B, T, heads] * x [B, T, input], summed over T
    net, feed, x, lens = probe("rq-attention-sum", 3)
    ws = net.variable("score/weight/param:0")
    context = ordered(net, "context", feed, ["B", "heads", "input"])
    for b, n in enumerate(lens):
        w = masked_softmax(x[b] @ ws, n)  # [n, heads]
        close(context[b], numpy.einsum("th,ti->hi", w, x[b, :n]), 1e-5, "attention weighted sum")
    # h_t = tanh(W h_{t-1} + b), h_0 = 0.5 (a constant without the batch dim)
    net = Net(compile_model("rq-loop-constant-state"), train_flag=False)
    feed = net.feed(4)
    lens = seq_lens(net, feed)
    w, bias = net.variable("rec/weight/param:0"), net.variable("rec/bias/param:0")
    rnn = ordered(net, "rnn", feed, ["B", "time", "hidden"])
    for b, n in enumerate(lens):
        h = numpy.full(w.shape[0], 0.5)
        for t in range(n):
            h = numpy.tanh(h @ w + bias)
            close(rnn[b, t], h, 1e-5, "constant-initialized state, frame %d" % t)
    # accumulated attention weights over the encoder's time, initialized from a scalar 0
    net = Net(compile_model("rq-loop-encoder-state"), train_flag=False)
    feed = net.feed(5)
    x = feed[net.net.extern_data.data["data"].placeholder].astype("float64")
    dec = feed[net.net.extern_data.data["dec"].placeholder].astype("float64")
    lens, dec_lens = seq_lens(net, feed), seq_lens(net, feed, "dec")
    acc_got = ordered(net, "acc", feed, ["B", "dec_time", "time"])
    coverage = ordered(net, "coverage", feed, ["B", "dec_time"])
    for b in range(len(lens)):
        n = lens[b]
        acc = numpy.zeros(n)
        for t in range(dec_lens[b]):
            w = masked_softmax(x[b, :n] @ dec[b, t] - acc, n)
            close(coverage[b, t], numpy.minimum(acc, w).sum(), 1e-5, "coverage, frame %d" % t)
            acc = acc + w
            close(acc_got[b, t, :n], acc, 1e-5, "accumulated weights, frame %d" % t)
    # labels shifted right with BOS (index 5)
    net = Net(compile_model("rq-shift-labels"), train_flag=False)
    feed = net.feed(6)
    ids = feed[net.net.extern_data.data["data"].placeholder]
    lens = seq_lens(net, feed)
    shifted = ordered(net, "shifted", feed, ["B", "time"])
    for b, n in enumerate(lens):
        close(shifted[b, :n], numpy.concatenate([[5], ids[b, : n - 1]]), 0, "shifted labels")
    # shift_right(embed(labels)) into a loop over the labels' axis
    net = Net(compile_model("rq-shift-embed-loop"), train_flag=False)
    feed = net.feed(7)
    y = feed[net.net.extern_data.data["classes"].placeholder]
    lens = seq_lens(net, feed, "classes")
    emb = net.variable("embed/weight/param:0")
    w_in, b_in = net.variable("in/weight/param:0"), net.variable("in/bias/param:0")
    u = net.variable("rec/weight/param:0")
    w_out, b_out = net.variable("out/weight/param:0"), net.variable("out/bias/param:0")
    logits = ordered(net, "output", feed, ["B", "label_time", "vocab"])
    for b, n in enumerate(lens):
        h = numpy.zeros(u.shape[0])
        for t in range(n):
            e = emb[y[b, t - 1]] if t > 0 else numpy.zeros(emb.shape[1])
            h = numpy.tanh(e @ w_in + b_in + h @ u)
            close(logits[b, t], h @ w_out + b_out, 1e-5, "decoder logits, frame %d" % t)
    # gather with indices that share the batch dim: x[b, pick[b]]
    net = Net(compile_model("rq-gather-batch"), train_flag=False)
    feed = net.feed(8)
    x = feed[net.net.extern_data.data["data"].placeholder]
    pick = feed[net.net.extern_data.data["pick"].placeholder]
    picked = ordered(net, "picked", feed, ["B", "input"])
    close(picked, x[numpy.arange(len(pick)), pick], 0, "batched gather")
    # a forward-only model: no params, no loss
    out = subprocess.run([BIN, "check", "rq-forward-only"], check=True, capture_output=True, text=True).stdout
    assert "0 variables, 0 parameters" in out, out
    print("outer broadcast (combine, where), attention sum, constant-initialized loop states "
          "(batch; encoder time), shifted labels with BOS, shift_right(embed) into a loop, "
          "batched gather and a forward-only check: match numpy")


def test_sweep():
    """Every op and module of the library (tests/sweep_models.cc) in the plain
    (forward only, no loss), broadcast and loop situations, through the
    RETURNN side of `retc check` (construct, initialize, one step on random
    data), each output with the IR's number of axes."""
    import tempfile

    sys.path.insert(0, os.path.join(os.environ["RETC_SOURCE_DIR"], "runtime"))
    import retc_runtime

    models = returnn_probe.sweep_models()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in models:
            config = os.path.join(tmp, "sweep.config")
            subprocess.run([BIN, "compile", model, "-o", config], check=True)
            ir = json.loads(subprocess.run([BIN, "dump-ir", model, "--format", "json"], check=True,
                                           capture_output=True, text=True).stdout)
            try:
                _, outputs = retc_runtime.check(config)
            except Exception as exc:  # noqa: BLE001: every failure is reported below
                failures.append("%s: %s" % (model, retc_runtime.error_line(exc)))
                continue
            want = {ir["nodes"][m["node"]]["name"]: len(ir["nodes"][m["node"]]["type"]["dims"])
                    for m in ir["marks"] if m["kind"] == "output"}
            for name, shape in outputs:
                if name in want and len(shape) != want[name]:
                    failures.append("%s: output %s has %d axes, the IR %d" % (model, name, len(shape), want[name]))
    assert not failures, "\n".join(failures)
    print("sweep: %d op x situation models checked in RETURNN" % len(models))


def test_sweep_torch():
    """The same sweep on the torch target: every model runs its train_step
    (every node, the backward pass included) on random data in RETURNN's
    PyTorch backend. (A model the target refused would have to be a
    build-time error at the user's line naming the target; none is now.)"""
    import tempfile

    sys.path.insert(0, os.path.join(os.environ["RETC_SOURCE_DIR"], "runtime"))
    import retc_runtime

    models = returnn_probe.sweep_models()
    failures, ran, refused = [], 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for model in models:
            config = os.path.join(tmp, "sweep.config")
            r = subprocess.run([BIN, "compile", model, "--backend", "torch", "-o", config],
                               capture_output=True, text=True)
            if r.returncode != 0:
                if not re.search(r"sweep_models\.cc:\d+:\d+: error: .*the torch target does not", r.stderr):
                    failures.append("%s: not a build-time error naming the target: %s" % (model, r.stderr.strip()))
                refused += 1
                continue
            try:
                retc_runtime.check_torch(config)
                ran += 1
            except Exception as exc:  # noqa: BLE001: every failure is reported below
                failures.append("%s: %s" % (model, retc_runtime.error_line(exc)))
    assert not failures, "\n".join(failures)
    assert ran == len(models) and refused == 0, (ran, refused, len(models))
    print("sweep on torch: all %d models ran" % ran)


def test_module_fuzz():
    """The module-API fuzzer's models (tests/module_fuzz_models.cc) that retc accepts, through
    RETURNN on both targets (as `retc check` runs them: TF constructs, initializes and runs a
    step on random data; torch runs its train_step, the backward pass included): a model that
    retc accepts and RETURNN then rejects fails the test. Models retc rejects must be refused at
    their line (or naming the target). Models with a dim over 65,536 (the fuzzer's 2^31) would
    need gigabytes of params here and are only compiled. MODULE_FUZZ_SEEDS=FIRST:COUNT (default
    1:300; the unit tests build seeds 1 to 1,500)."""
    import tempfile

    sys.path.insert(0, os.path.join(os.environ["RETC_SOURCE_DIR"], "runtime"))
    import retc_runtime

    env = dict(os.environ, RETC_MODULE_FUZZ_MODELS=os.environ.get("MODULE_FUZZ_SEEDS", "1:300"))
    models = [line.split()[0] for line in subprocess.run(
        [BIN, "list"], env=env, check=True, capture_output=True, text=True).stdout.splitlines()
        if line.startswith("fuzz:")]
    counts = {"ran": 0, "refused": 0, "too big": 0}
    failures = []
    # One target after the other: RETURNN's global batch dim keeps the size a torch step gave
    # it, which a TF network in the same process then cannot take.
    with tempfile.TemporaryDirectory() as tmp:
        for backend, run in (("tf", retc_runtime.check), ("torch", retc_runtime.check_torch)):
            returnn_probe.reset_batch_dim()
            for model in models:
                config = os.path.join(tmp, "fuzz." + backend)
                r = subprocess.run([BIN, "compile", model, "--backend", backend, "-o", config], env=env,
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    if not re.search(r"module_fuzz_models\.cc:\d+:\d+: error: |the %s target" % backend, r.stderr):
                        failures.append("%s (%s): not an error at the model's line: %s" % (model, backend, r.stderr.strip()))
                    counts["refused"] += 1
                    continue
                ir = json.loads(subprocess.run([BIN, "dump-ir", model, "--backend", backend, "--format", "json"],
                                               env=env, check=True, capture_output=True, text=True).stdout)
                if any((d.get("size") or 0) > 65536 for d in ir["dims"]):
                    counts["too big"] += 1
                    continue
                try:
                    run(config)
                    counts["ran"] += 1
                except Exception as exc:  # noqa: BLE001: every failure is reported below
                    failures.append("%s (%s): accepted by retc, rejected by RETURNN: %s"
                                    % (model, backend, retc_runtime.error_line(exc)))
    returnn_probe.reset_batch_dim()
    assert not failures, "\n".join(failures)
    assert counts["ran"] > 0, counts
    print("module fuzz: %d seeds; model x target: %d ran in RETURNN, %d refused by retc at the model's line, "
          "%d too big to run here" % (len(models), counts["ran"], counts["refused"], counts["too big"]))


if __name__ == "__main__":
    globals()["test_" + sys.argv[1]]()
    print("ok:", sys.argv[1])
