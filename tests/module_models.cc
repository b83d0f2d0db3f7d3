// Test models for the module library and functional ops; the integration
// test tests/integration/test_modules.py checks each in RETURNN: variable
// names and shapes equal the IR's, and the param count equals a formula.
#include <functional>

#include "compiler/nn/audio.h"
#include "compiler/nn/conformer.h"
#include "compiler/nn/loop.h"
#include "compiler/nn/modules.h"
#include "tests/tagging_io.h"
#include "tests/test_models.h"

namespace retc::testing {
namespace {

using ir::Dim;
using nn::Builder;
using nn::Tensor;

using Io = TaggingIo;

template <class Norm>
class Normed : public nn::Module {
 public:
  Normed(Dim in, Dim out) : Module("normed") {
    norm = register_module("norm", std::make_shared<Norm>(in));
    out_ = register_module("out", std::make_shared<nn::Linear>(in, out));
  }
  Tensor forward(const Tensor& x) const {
    return call(x, std::source_location::current(),
                [&](const Tensor& h) { return out_->forward(norm->forward(h)); });
  }
  std::shared_ptr<Norm> norm;
  std::shared_ptr<nn::Linear> out_;
};

template <class Norm>
void build_normed(Builder& b) {
  Io io(b);
  auto m = b.set_root(std::make_shared<Normed<Norm>>(io.in, io.classes));
  io.finish(m->forward(io.x));
}

// BatchNorm's options side by side: `masked` without a scale and bias (rf's
// affine=False), `unmasked` with them and statistics over the padded tensor
// (rf's use_mask=False, torch's batch_norm), epsilon 1e-3 (rf's default).
class BatchNormOptionsNet : public nn::Module {
 public:
  BatchNormOptionsNet(Dim in, Dim out) : Module("batch_norm_options") {
    masked = register_module(
        "masked", std::make_shared<nn::BatchNorm>(in, nn::BatchNormOptions().affine(false)));
    unmasked = register_module(
        "unmasked", std::make_shared<nn::BatchNorm>(
                        in, nn::BatchNormOptions().masked(false).epsilon(1e-3).momentum(0.2)));
    out_ = register_module("out", std::make_shared<nn::Linear>(in, out));
  }
  std::shared_ptr<nn::BatchNorm> masked, unmasked;
  std::shared_ptr<nn::Linear> out_;
};

void build_batch_norm_options(Builder& b) {
  Io io(b);
  auto m = b.set_root(std::make_shared<BatchNormOptionsNet>(io.in, io.classes));
  Tensor a = m->masked->forward(io.x);
  Tensor u = m->unmasked->forward(io.x);
  a.mark_as_output("masked_out");
  u.mark_as_output("unmasked_out");
  io.finish(m->out_->forward(a + u));
}

// Param assignments in the training step (nn::assign, nn::assign_add): a
// step counter ("steps" += 1), a running mean of the input's frames ("mean"
// becomes 0.9 mean + 0.1 the batch's mean over its valid frames; the step
// reads its old value: output "centered" = x - mean), and an average of out's
// weight ("ema" += 0.5 (weight - ema), from the weight before the update).
class AssignNet : public nn::Module {
 public:
  AssignNet(Dim in, Dim out) : Module("assign_net") {
    out_ = register_module("out", std::make_shared<nn::Linear>(in, out));
    const ir::Initializer zero = ir::Initializer::constant(0.0);
    steps = register_parameter("steps", {}, ir::ParamKind::kAuxiliary, zero);
    mean = register_parameter("mean", {in}, ir::ParamKind::kAuxiliary, zero);
    ema = register_parameter("ema", out_->weight().dims(), ir::ParamKind::kAuxiliary, zero);
    for (nn::Parameter* p : {&steps, &mean, &ema}) p->set_trainable(false);
  }
  std::shared_ptr<nn::Linear> out_;
  nn::Parameter steps, mean, ema;
};

void build_param_assign(Builder& b) {
  Io io(b);
  auto m = b.set_root(std::make_shared<AssignNet>(io.in, io.classes));
  const Tensor mean = b.param(m->mean);
  (io.x - mean).mark_as_output("centered");
  nn::assign_add(m->steps, nn::constant(b, 1.0));
  const Tensor batch_mean = nn::reduce(io.x, "mean", {Dim::batch(), io.time});
  nn::assign(m->mean, mean * nn::constant(b, 0.9) + batch_mean * nn::constant(b, 0.1));
  nn::assign_add(m->ema, (b.param(m->out_->weight()) - b.param(m->ema)) * nn::constant(b, 0.5));
  io.finish(m->out_->forward(io.x));
}

// RelPosEncoding on its own: the [time, keys, 4] encoding of the input's
// frames against themselves (clipping 2), marked as "enc".
class RelPosEncodingNet : public nn::Module {
 public:
  RelPosEncodingNet(Dim in, Dim out) : Module("rel_pos_encoding_net") {
    enc = register_module("enc", std::make_shared<nn::RelPosEncoding>(Dim::feature("pos", 4), 2));
    out_ = register_module("out", std::make_shared<nn::Linear>(in, out));
  }
  std::shared_ptr<nn::RelPosEncoding> enc;
  std::shared_ptr<nn::Linear> out_;
};

void build_rel_pos_encoding(Builder& b) {
  Io io(b);
  auto m = b.set_root(std::make_shared<RelPosEncodingNet>(io.in, io.classes));
  const Dim time = io.x.dims()[1], keys = Dim::spatial("keys");
  m->enc->forward(io.x, time, nn::replace_dim(io.x, time, keys), keys).mark_as_output("enc");
  nn::sinusoidal_rel_pos_encoding(io.x, time, nn::replace_dim(io.x, time, keys), keys,
                                  Dim::feature("pos", 6))
      .mark_as_output("sin_enc");
  io.finish(m->out_->forward(io.x));
}

class EmbedNet : public nn::Module {
 public:
  EmbedNet(Dim vocab, Dim dim, Dim out) : Module("embed_net") {
    embed = register_module("embed", std::make_shared<nn::Embedding>(vocab, dim));
    out_ = register_module("out", std::make_shared<nn::Linear>(dim, out));
  }
  std::shared_ptr<nn::Embedding> embed;
  std::shared_ptr<nn::Linear> out_;
};

void build_embedding(Builder& b) {
  Dim vocab = Dim::feature("vocab", 7);
  Io io(b, vocab);
  auto m = b.set_root(std::make_shared<EmbedNet>(vocab, Dim::feature("embed", 6), io.classes));
  io.finish(m->out_->forward(m->embed->forward(io.x)));
}

class BlstmNet : public nn::Module {
 public:
  BlstmNet(Dim in, Dim out) : Module("blstm_net") {
    blstm = register_module(
        "blstm", std::make_shared<nn::BLstm>(in, Dim::feature("fw", 4), Dim::feature("bw", 3)));
    out_ = register_module("out", std::make_shared<nn::Linear>(blstm->out_dim(), out));
  }
  std::shared_ptr<nn::BLstm> blstm;
  std::shared_ptr<nn::Linear> out_;
};

void build_blstm(Builder& b) {
  Io io(b);
  auto m = b.set_root(std::make_shared<BlstmNet>(io.in, io.classes));
  io.finish(m->out_->forward(m->blstm->forward(io.x, io.time)));
}

// reduce, softmax over time, log_softmax, normalize, concat, minimum and maximum in one net.
class OpsNet : public nn::Module {
 public:
  OpsNet(Dim in, Dim out) : Module("ops_net") {
    frame = register_module("frame", std::make_shared<nn::Linear>(in + in, out));
    pooled = register_module("pooled", std::make_shared<nn::Linear>(in, out));
  }
  std::shared_ptr<nn::Linear> frame, pooled;
};

void build_ops(Builder& b) {
  Io io(b);
  auto m = b.set_root(std::make_shared<OpsNet>(io.in, io.classes));
  Tensor weights = nn::softmax(io.x, io.time);                            // over time, masked
  Tensor summary = nn::reduce(nn::mul(io.x, weights), "sum", {io.time});  // [B, in]
  Tensor both = nn::concat(io.x, io.in, nn::normalize(io.x, {io.in}), io.in);
  Tensor logits = m->frame->forward(both) + m->pooled->forward(summary);
  nn::log_softmax(logits, io.classes).mark_as_output("log_probs");
  nn::reduce(logits, "max", {io.classes}).mark_as_output("max_logit");
  nn::minimum(io.x, nn::normalize(io.x, {io.in})).mark_as_output("min_xy");
  nn::maximum(io.x, nn::constant(b, 0.25)).mark_as_output("max_x");  // a scalar broadcasts
  io.finish(logits);
}

// logical and / or of comparison masks; argmax / argmin over the classes.
void build_logic(Builder& b) {
  Io io(b);
  auto lin = b.set_root(std::make_shared<nn::Linear>(io.in, io.classes));
  Tensor pos = nn::compare(io.x, nn::constant(b, 0.0), "greater");
  Tensor small = nn::compare(io.x, nn::constant(b, 0.5), "less");
  nn::cast(nn::logical_and(pos, small), ir::DType::kFloat32).mark_as_output("both");
  nn::cast(nn::logical_or(pos, small), ir::DType::kFloat32).mark_as_output("either");
  Tensor logits = lin->forward(io.x);
  nn::argmax(logits, io.classes).mark_as_output("best");
  nn::argmin(logits, io.classes).mark_as_output("worst");
  io.finish(logits);
}

// A self-attention tagger: the attention (options from the input dim), its
// output marked "attended", then a linear layer.
void build_attention_tagger(Builder& b, const char* name,
                            const std::function<nn::SelfAttentionOptions(Dim)>& options) {
  Io io(b);
  struct Net : nn::Module {
    Net(const char* name, const nn::SelfAttentionOptions& o, Dim in, Dim out) : Module(name) {
      att = register_module("att", std::make_shared<nn::SelfAttention>(o));
      out_ = register_module("out", std::make_shared<nn::Linear>(in, out));
    }
    std::shared_ptr<nn::SelfAttention> att;
    std::shared_ptr<nn::Linear> out_;
  };
  auto m = b.set_root(std::make_shared<Net>(name, options(io.in), io.in, io.classes));
  nn::Tensor h = m->att->forward(io.x, io.time);
  h.mark_as_output("attended");
  io.finish(m->out_->forward(h));
}

// Self-attention (plain or causal) with key dim 8, value dim 6, 2 heads.
template <bool kCausal>
void build_attention(Builder& b) {
  build_attention_tagger(b, "att_net", [](Dim in) {
    return nn::SelfAttentionOptions(in, Dim::feature("key", 8), Dim::feature("value", 6), 2)
        .causal(kCausal);
  });
}

// Causal self-attention with rotary positions (rf's RotaryPosCausalSelfAttention
// with with_bias=False: key and value 8, 2 heads, no biases), then a tagger.
void build_rotary_attention(Builder& b) {
  build_attention_tagger(b, "rotary_net", [](Dim in) {
    return nn::SelfAttentionOptions(in, Dim::feature("key", 8), Dim::feature("value", 8), 2)
        .causal(true)
        .rotary(true)
        .proj_bias(false);
  });
}

// A 2-layer Transformer encoder (model dim 8, ff 16, 2 heads) tagger.
void build_transformer(Builder& b) {
  Io io(b);
  struct Net : nn::Module {
    Net(Dim in, Dim out) : Module("transformer_net") {
      Dim model = Dim::feature("model", 8);
      in_proj = register_module("in_proj", std::make_shared<nn::Linear>(in, model));
      encoder = register_module(
          "encoder", std::make_shared<nn::TransformerEncoder>(
                         nn::TransformerOptions(model, Dim::feature("ff", 16), 2).num_layers(2)));
      out_ = register_module("out", std::make_shared<nn::Linear>(model, out));
    }
    std::shared_ptr<nn::Linear> in_proj, out_;
    std::shared_ptr<nn::TransformerEncoder> encoder;
  };
  auto m = b.set_root(std::make_shared<Net>(io.in, io.classes));
  io.finish(m->out_->forward(m->encoder->forward(m->in_proj->forward(io.x), io.time)));
}

// Conv1d (kernel 3, dilation 2) straight to the class logits.
void build_conv(Builder& b) {
  Io io(b);
  auto conv =
      b.set_root(std::make_shared<nn::Conv1d>(nn::Conv1dOptions(io.in, io.classes, 3).dilation(2)));
  nn::Tensor h = conv->forward(io.x, io.time);
  h.mark_as_output("conv_out");
  io.finish(h);
}

// Loss options: a tagger whose CE loss is plain, scaled by 0.5 or label
// smoothed (0.1), and a regression head with a mean squared error loss.
enum class LossVariant { kPlain, kScaled, kSmoothed, kMse, kCustom, kNormalized, kFocal };

template <LossVariant kVariant>
void build_loss(Builder& b) {
  Io io(b);
  auto lin = b.set_root(std::make_shared<nn::Linear>(io.in, io.classes));
  Tensor logits = lin->forward(io.x);
  logits.mark_as_output();
  if (kVariant == LossVariant::kMse) {
    Tensor target = b.extern_data("target", {Dim::batch(), io.time, io.classes});
    nn::mean_squared_error(logits, target).mark_as_loss("mse");
    return;
  }
  nn::LossOptions opts;
  if (kVariant == LossVariant::kCustom) {
    // The CE loss, plus a custom one (sum of squared logits, normalized by
    // frames, scale 0.1) and a custom error (max logit), reported only.
    nn::softmax_cross_entropy(logits, io.y).mark_as_loss("ce");
    Tensor sq = nn::reduce(logits * logits, "sum", {io.classes});
    nn::custom_loss(sq, {.scale = 0.1, .normalize = true}).mark_as_loss("sq");
    nn::custom_loss(nn::reduce(logits, "max", {io.classes}), {.as_error = true})
        .mark_as_loss("max_logit");
    return;
  }
  if (kVariant == LossVariant::kScaled) opts.scale = 0.5;
  if (kVariant == LossVariant::kNormalized) opts.normalize = true;
  if (kVariant == LossVariant::kSmoothed) opts.label_smoothing = 0.1;
  if (kVariant == LossVariant::kFocal) opts.focal_loss_factor = 2.0;
  nn::softmax_cross_entropy(logits, io.y, opts).mark_as_loss("ce");
}

// Features as a spatial axis with one channel: Conv2d 3x3 (4 channels),
// max pool 2 over the features (5 -> 3), merged back into a feature dim.
void build_conv2d(Builder& b) {
  Io io(b);
  struct Net : nn::Module {
    Dim feat = Dim::spatial("feat", 5), chan = Dim::feature("chan", 1);
    Dim ch4 = Dim::feature("ch4", 4);
    Dim pooled = nn::windowed_dim(feat, 2, 2), merged = Dim::feature("merged", 12);
    Net(Dim out) : Module("conv2d_net") {
      conv = register_module("conv",
                             std::make_shared<nn::Conv2d>(nn::Conv2dOptions(chan, ch4, {3, 3})));
      out_ = register_module("out", std::make_shared<nn::Linear>(merged, out));
    }
    std::shared_ptr<nn::Conv2d> conv;
    std::shared_ptr<nn::Linear> out_;
  };
  auto m = b.set_root(std::make_shared<Net>(io.classes));
  Tensor h = m->conv->forward(nn::split_dims(io.x, io.in, {m->feat, m->chan}), io.time, m->feat);
  h.mark_as_output("conv_out");
  h = nn::pool(h, "max", {m->feat}, {2}, {}, "same", {m->pooled});
  h.mark_as_output("pooled");
  io.finish(m->out_->forward(nn::merge_dims(h, {m->pooled, m->ch4}, m->merged)));
}

// Conv1d with time stride 2 and a depthwise Conv1d (groups = channels);
// the subsampled output is an output only (the loss reads the plain path).
void build_conv_stride(Builder& b) {
  Io io(b);
  struct Net : nn::Module {
    Net(Dim in, Dim out) : Module("stride_net") {
      Dim ch = Dim::feature("ch", 4);
      strided = register_module(
          "strided", std::make_shared<nn::Conv1d>(nn::Conv1dOptions(in, ch, 3).stride(2)));
      depthwise = register_module(
          "depthwise", std::make_shared<nn::Conv1d>(nn::Conv1dOptions(ch, ch, 5).groups(4)));
      out_ = register_module("out", std::make_shared<nn::Linear>(in, out));
    }
    std::shared_ptr<nn::Conv1d> strided, depthwise;
    std::shared_ptr<nn::Linear> out_;
  };
  auto m = b.set_root(std::make_shared<Net>(io.in, io.classes));
  Tensor h = m->strided->forward(io.x, io.time);
  h.mark_as_output("strided");
  m->depthwise->forward(h, m->strided->out_axis(io.time)).mark_as_output("depthwise");
  nn::pool(io.x, "avg", {io.time}, {2}, {2}, "valid").mark_as_output("avg_pooled");
  io.finish(m->out_->forward(io.x));
}

// Transposed convolutions: a strided conv (time -> time_s2, 4 channels) and
// back (kernel 2, stride 2: time_s2_t2), given x's time again (replace_dim)
// and added to x; and one with a kernel wider than its stride (3 > 2) and
// no bias over x's time ("wide", time_t2: 2n + 1 frames).
void build_transposed_conv(Builder& b) {
  Io io(b);
  struct Net : nn::Module {
    Net(Dim in, Dim out) : Module("tconv_net") {
      Dim ch = Dim::feature("ch", 4);
      down = register_module("down",
                             std::make_shared<nn::Conv1d>(nn::Conv1dOptions(in, ch, 3).stride(2)));
      up = register_module("up", std::make_shared<nn::TransposedConv1d>(
                                     nn::TransposedConv1dOptions(ch, in, 2).stride(2)));
      wide = register_module("wide",
                             std::make_shared<nn::TransposedConv1d>(
                                 nn::TransposedConv1dOptions(in, ch, 3).stride(2).bias(false)));
      out_ = register_module("out", std::make_shared<nn::Linear>(in, out));
    }
    std::shared_ptr<nn::Conv1d> down;
    std::shared_ptr<nn::TransposedConv1d> up, wide;
    std::shared_ptr<nn::Linear> out_;
  };
  auto m = b.set_root(std::make_shared<Net>(io.in, io.classes));
  const Dim sub = m->down->out_axis(io.time);
  Tensor up = m->up->forward(m->down->forward(io.x, io.time), sub);
  up.mark_as_output("up");
  Tensor back = nn::replace_dim(up, m->up->out_axis(sub), io.x, io.time);
  back.mark_as_output("back");
  m->wide->forward(io.x, io.time).mark_as_output("wide");
  io.finish(m->out_->forward(back + io.x));
}

// Array ops: cumsum over time, top 3 of the features (values and indices),
// logical_not, pad of the features (static: 1 left, 2 right, value -1) and
// of time (dynamic: 2 left, 1 right after each sequence's end, value 0.5).
// Dots plus a bias, which TF makes one linear layer: with a weight stored
// [out, in] ("linear_t"), of x and 2x stacked ("linear_stacked"), over the
// stacked dim, which is not the last ("linear_over_two"), and a dot with a
// second user, which stays a dot ("dot_plus_bias", "dot_twice").
void build_array_ops(Builder& b) {
  Io io(b);
  const Dim two = Dim::spatial("two", 2);
  struct Net : nn::Module {
    Net(Dim in, Dim out, Dim two) : Module("array_net") {
      lin = register_module("lin", std::make_shared<nn::Linear>(in, out));
      w_t = register_parameter("w_t", {out, in}, ir::ParamKind::kWeight);
      b_t = register_parameter("b_t", {out}, ir::ParamKind::kBias, ir::Initializer::normal(0, 1));
      w_two = register_parameter("w_two", {two, out}, ir::ParamKind::kWeight);
    }
    std::shared_ptr<nn::Linear> lin;
    nn::Parameter w_t, b_t, w_two;
  };
  auto net = b.set_root(std::make_shared<Net>(io.in, io.classes, two));
  auto& lin = net->lin;
  const Tensor w = b.param(lin->weight()), bias = b.param(lin->bias());
  (nn::dot(io.x, b.param(net->w_t), {io.in}) + b.param(net->b_t)).mark_as_output("linear_t");
  const Tensor stacked = nn::stack({io.x, io.x * nn::constant(b, 2.0)}, two);
  (nn::dot(stacked, w, {io.in}) + bias).mark_as_output("linear_stacked");
  (nn::dot(stacked, b.param(net->w_two), {two}) + b.param(net->b_t))
      .mark_as_output("linear_over_two");
  const Tensor shared = nn::dot(io.x, w, {io.in});
  (shared + bias).mark_as_output("dot_plus_bias");
  (shared * nn::constant(b, 2.0)).mark_as_output("dot_twice");
  nn::cumsum(io.x, io.time).mark_as_output("cumsum");
  auto [values, indices] = nn::top_k(io.x, io.in, Dim::feature("top3", 3));
  values.mark_as_output("top_values");
  indices.mark_as_output("top_indices");
  Tensor positive = nn::compare(io.x, nn::constant(b, 0.0), "greater");
  nn::cast(nn::logical_not(positive), ir::DType::kFloat32).mark_as_output("not_positive");
  nn::pad(io.x, io.in, 1, 2, -1.0).mark_as_output("pad_feature");
  nn::pad(io.x, io.time, 2, 1, 0.5).mark_as_output("pad_time");
  io.finish(lin->forward(io.x));
}

// Each frame 3 times (a scalar count) and 1 or 2 times (a count per frame:
// 2 where the frame's mean is positive); x plus a constant vector; the labels after a BOS label 0.
void build_repeat_const(Builder& b) {
  Io io(b);
  auto lin = b.set_root(std::make_shared<nn::Linear>(io.in, io.classes));
  Tensor h = lin->forward(io.x);
  nn::repeat(h, io.time, 3, Dim::spatial("thrice")).mark_as_output("repeat_3");
  Tensor above = nn::compare(nn::reduce(io.x, "mean", {io.in}), nn::constant(b, 0.0), "greater");
  Tensor reps =
      nn::cast(above, ir::DType::kInt32) + nn::cast(nn::constant(b, 1.0), ir::DType::kInt32);
  nn::repeat(h, io.time, reps, Dim::spatial("by_mean")).mark_as_output("repeat_by_mean");
  (io.x + nn::constant(b, {0.0, 0.5, 1.0, 1.5, 2.0}, io.in)).mark_as_output("plus_vector");
  nn::pad(io.y, io.time, 1, 0, 0.0).mark_as_output("bos_labels");
  io.finish(h);
}

// floor_div and mod (Python's // and %: rounded down, the remainder with the
// divisor's sign) on ints (the labels minus 5, by 3) and on floats (by 0.7);
// pow of floats ((|x| + 0.5) ** x: negative exponents too); a sparse
// constant (label 2 in every frame) as one-hot vectors.
void build_floor_mod(Builder& b) {
  Io io(b);
  auto lin = b.set_root(std::make_shared<nn::Linear>(io.in, io.classes));
  auto i32 = [&](double v) { return nn::cast(nn::constant(b, v), ir::DType::kInt32); };
  Tensor labels = nn::cast(io.y, ir::DType::kInt32) - i32(5.0);
  nn::floor_div(labels, i32(3.0)).mark_as_output("labels_div_3");
  nn::mod(labels, i32(3.0)).mark_as_output("labels_mod_3");
  nn::floor_div(io.x, nn::constant(b, 0.7)).mark_as_output("x_div");
  nn::mod(io.x, nn::constant(b, 0.7)).mark_as_output("x_mod");
  nn::pow(nn::add(nn::activation(io.x, "abs"), nn::constant(b, 0.5)), io.x).mark_as_output("x_pow");
  nn::one_hot(nn::sparse_constant(b, 2, io.classes, {Dim::batch(), io.time}, {io.x}))
      .mark_as_output("label_2");
  // Large magnitudes: a naive log(cumsum(exp(x))) overflows.
  nn::log_cumsum_exp(io.x * nn::constant(b, 100.0), io.time).mark_as_output("x_lcse_time");
  nn::log_cumsum_exp(io.x, io.in).mark_as_output("x_lcse_feat");
  io.finish(lin->forward(io.x));
}

// scatter: the frames into their class (the labels as indices over the
// classes): sum, max (fill -1), min, mean, logsumexp (of 30 x: large
// magnitudes) and argmax (fill -1) of x; the last and first frame of each
// class (ints, fill -1).
void build_scatter(Builder& b) {
  Io io(b);
  auto lin = b.set_root(std::make_shared<nn::Linear>(io.in, io.classes));
  for (const char* mode : {"sum", "min", "mean"})
    nn::scatter(io.x, io.y, io.time, mode).mark_as_output(absl::StrCat("x_", mode));
  nn::scatter(io.x, io.y, io.time, "max", -1.0).mark_as_output("x_max");
  const Tensor lse = nn::scatter(io.x * nn::constant(b, 30.0), io.y, io.time, "logsumexp");
  lse.mark_as_output("x_logsumexp");
  // A loss through the max, the mean and logsumexp: their gradients train the
  // projection (finite where a class has no frames too).
  const Tensor h = lin->forward(io.x);
  const Dim groups = Dim::feature("groups", 3);
  const Tensor group = nn::as_indices(nn::cast(io.y, ir::DType::kInt32), groups);
  const Tensor pooled = nn::scatter(h, group, io.time, "max") +
                        nn::scatter(h, group, io.time, "mean") +
                        nn::scatter(h, group, io.time, "logsumexp");
  nn::custom_loss(nn::reduce(nn::activation(pooled, "square"), "mean", {groups, io.classes}))
      .mark_as_loss("pooled");
  const Tensor t = nn::range_in_axis(io.x, io.time);
  nn::scatter(t, io.y, io.time, "max", -1.0).mark_as_output("last_frame");
  nn::scatter(t, io.y, io.time, "min", -1.0).mark_as_output("first_frame");
  nn::scatter(io.x, io.y, io.time, "argmax", -1.0).mark_as_output("x_argmax");
  // top_k over two axes together: x times (1, -2, 0.5) over [input, three], k = 4.
  const Dim three = Dim::feature("three", 3);
  const Dim k = Dim::feature("k", 4);
  auto [top, at] = nn::top_k(io.x * nn::constant(b, {1.0, -2.0, 0.5}, three), {io.in, three}, k);
  top.mark_as_output("joint_top");
  at[0].mark_as_output("joint_top_input");
  at[1].mark_as_output("joint_top_three");
  // Packed and unpacked: the frames of label 1 through tanh, the others 5.
  const Tensor label_1 = nn::compare(io.y, nn::sparse_constant(b, 1, io.classes), "equal");
  const Dim kept = Dim::spatial("kept");
  nn::masked_scatter(nn::tanh(nn::masked_select(io.x, label_1, io.time, kept)), label_1, kept,
                     io.time, 5.0)
      .mark_as_output("unpacked");
  io.finish(lin->forward(io.x));
}

// Dims from computed sizes: the time's and the input's size as tensors; a
// new dim of ceil(n / 2) frames per sequence, its positions, and x's even
// frames gathered at twice them.
void build_dims_from_sizes(Builder& b) {
  Io io(b);
  auto lin = b.set_root(std::make_shared<nn::Linear>(io.in, io.classes));
  auto i32 = [&](double v) { return nn::cast(nn::constant(b, v), ir::DType::kInt32); };
  nn::dim_value(io.x, io.time).mark_as_output("time_size");
  nn::dim_value(io.x, io.in).mark_as_output("input_size");
  const Dim halves = Dim::spatial("halves");
  const Tensor half = nn::floor_div(nn::length(io.x, io.time) + i32(1.0), i32(2.0));
  const Tensor pos = nn::range_of_lengths(half, halves);
  pos.mark_as_output("half_positions");
  nn::gather(io.x, nn::as_indices(pos * i32(2.0), io.time), io.time).mark_as_output("even_frames");
  io.finish(lin->forward(io.x));
}

// Reversed frames and labels (within each sequence); 4 frames from each
// sequence's length - 3 (the last 3, then 0); labels 1..3 from a start of 1.
void build_reverse_slice(Builder& b) {
  Io io(b);
  auto lin = b.set_root(std::make_shared<nn::Linear>(io.in, io.classes));
  Tensor h = lin->forward(io.x);
  nn::reverse(h, io.time).mark_as_output("reversed");
  nn::reverse(io.y, io.time).mark_as_output("reversed_labels");
  auto i32 = [&](double v) { return nn::cast(nn::constant(b, v), ir::DType::kInt32); };
  Tensor last3 = nn::length(io.x, io.time) - i32(3.0);
  nn::slice(h, io.time, last3, Dim::spatial("tail", 4)).mark_as_output("tail");
  Tensor ones = nn::cast(nn::constant(b, 1.0, {Dim::batch()}, {io.x}), ir::DType::kInt32);
  nn::slice(io.y, io.time, ones, Dim::spatial("labels_1_3", 3)).mark_as_output("labels_1_3");
  // Slices that cut the features into parts (one split layer on TF), that
  // leave a part out, and that overlap (slice layers).
  auto parts = nn::split(io.x, io.in, {Dim::feature("in_a", 2), Dim::feature("in_b", 3)});
  parts[0].mark_as_output("in_a");
  parts[1].mark_as_output("in_b");
  nn::slice(h, io.classes, 0, Dim::feature("class_0", 1)).mark_as_output("class_0");
  nn::slice(h, io.classes, 2, Dim::feature("class_2", 1)).mark_as_output("class_2");
  Tensor h2 = h * nn::constant(b, 2.0);
  nn::slice(h2, io.classes, 0, Dim::feature("h2_01", 2)).mark_as_output("h2_01");
  nn::slice(h2, io.classes, 1, Dim::feature("h2_12", 2)).mark_as_output("h2_12");
  io.finish(h);
}

// Stack (x, 2x, 3x), unstacked again; windows over time: 3 frames centered
// ("same"), 4 frames with stride 2 ("same", and back: inverse_window), 2
// frames "valid".
void build_stack_window(Builder& b) {
  Io io(b);
  auto lin = b.set_root(std::make_shared<nn::Linear>(io.in, io.classes));
  const Dim three = Dim::spatial("three", 3);
  Tensor stacked =
      nn::stack({io.x, io.x * nn::constant(b, 2.0), io.x * nn::constant(b, 3.0)}, three);
  stacked.mark_as_output("stacked");
  nn::unstack(stacked, three)[1].mark_as_output("unstacked_1");
  nn::window(io.x, io.time, Dim::spatial("win3", 3)).mark_as_output("window_same");
  const Dim win4 = Dim::spatial("win4", 4);
  Tensor strided = nn::window(io.x, io.time, win4, 2);
  strided.mark_as_output("window_strided");
  const Dim chunks = strided.dims()[ir::index_of(strided.dims(), win4) - 1];
  nn::inverse_window(strided, chunks, win4, io.x, io.time, 2).mark_as_output("inverse_strided");
  nn::window(io.x, io.time, Dim::spatial("win2", 2), 1, "valid").mark_as_output("window_valid");
  io.finish(lin->forward(io.x));
}

// Raw RETURNN layers: softsign (an activation retc lacks) and a mean over
// the features (the axis given as "$0").
void build_raw_layer(Builder& b) {
  Io io(b);
  auto lin = b.set_root(std::make_shared<nn::Linear>(io.in, io.classes));
  nn::raw_layer({io.x}, {.layer = R"({"class": "activation", "activation": "softsign"})",
                         .out_dims = io.x.dims()})
      .mark_as_output("softsign");
  nn::raw_layer({io.x}, {.layer = R"({"class": "reduce", "mode": "mean", "axes": "$0"})",
                         .layer_dims = {io.in},
                         .out_dims = {Dim::batch(), io.time}})
      .mark_as_output("feature_mean");
  io.finish(lin->forward(io.x));
}

// Relative-positional self-attention (clipping 2), key 8, value 6, 2 heads.
void build_rel_pos_attention(Builder& b) {
  Io io(b);
  struct Net : nn::Module {
    Net(Dim in, Dim out) : Module("att_net") {
      att = register_module("att", std::make_shared<nn::SelfAttention>(
                                       nn::SelfAttentionOptions(in, Dim::feature("key", 8),
                                                                Dim::feature("value", 6), 2)
                                           .rel_pos_clipping(2)
                                           .rel_pos_dropout(0.5)));
      out_ = register_module("out", std::make_shared<nn::Linear>(in, out));
    }
    std::shared_ptr<nn::SelfAttention> att;
    std::shared_ptr<nn::Linear> out_;
  };
  auto m = b.set_root(std::make_shared<Net>(io.in, io.classes));
  Tensor h = m->att->forward(io.x, io.time);
  h.mark_as_output("attended");
  io.finish(m->out_->forward(h));
}

// Sequential: Linear, relu, Dropout, Linear.
void build_sequential(Builder& b) {
  Io io(b);
  auto seq = std::make_shared<nn::Sequential>();
  Dim hidden = Dim::feature("hidden", 6);
  seq->append(std::make_shared<nn::Linear>(io.in, hidden));
  seq->append(nn::relu);
  seq->append(std::make_shared<nn::Dropout>(0.1));
  seq->append(std::make_shared<nn::Linear>(hidden, io.classes));
  b.set_root(seq);
  io.finish(seq->forward(io.x));
}

// A Sequential with named steps ("proj", "out") and a ParameterList of two
// per-feature scales applied to the input.
void build_named_sequential(Builder& b) {
  Io io(b);
  struct Net : nn::Module {
    Net(Dim in, Dim out) : Module("named_net") {
      seq = register_module("seq", std::make_shared<nn::Sequential>());
      Dim hidden = Dim::feature("hidden", 6);
      seq->append("proj", std::make_shared<nn::Linear>(in, hidden));
      seq->append(nn::tanh);
      seq->append("out", std::make_shared<nn::Linear>(hidden, out));
      scales = register_module("scales", std::make_shared<nn::ParameterList>());
      scales->append({in}, ir::ParamKind::kNormScale);
      scales->append({in}, ir::ParamKind::kNormScale);
    }
    std::shared_ptr<nn::Sequential> seq;
    std::shared_ptr<nn::ParameterList> scales;
  };
  auto m = b.set_root(std::make_shared<Net>(io.in, io.classes));
  Tensor x = io.x * b.param(m->scales->at(0)) * b.param(m->scales->at(1));
  io.finish(m->seq->forward(x));
}

// A Sequential of modules whose forward needs the time dim beside ones that
// do not: Linear, BLstm, relu, Lstm, Linear; forward(x, time) passes it on.
void build_sequential_time(Builder& b) {
  Io io(b);
  auto seq = std::make_shared<nn::Sequential>();
  Dim proj = Dim::feature("proj", 6), hidden = Dim::feature("hidden", 4);
  seq->append("proj", std::make_shared<nn::Linear>(io.in, proj));
  auto blstm = seq->append("blstm", std::make_shared<nn::BLstm>(proj, hidden, hidden));
  seq->append(nn::relu);
  seq->append("lstm", std::make_shared<nn::Lstm>(blstm->out_dim(), hidden));
  seq->append("out", std::make_shared<nn::Linear>(hidden, io.classes));
  b.set_root(seq);
  io.finish(seq->forward(io.x, io.time));
}

// A zoneout LSTM (cell 0.15, output 0.05) over time, its outputs projected.
void build_zoneout_lstm(Builder& b) {
  Io io(b);
  struct Net : nn::Module {
    Net(Dim in, Dim out) : Module("zoneout_net") {
      Dim hidden = Dim::feature("hidden", 4);
      lstm = register_module("lstm", std::make_shared<nn::ZoneoutLstm>(in, hidden));
      out_ = register_module("out", std::make_shared<nn::Linear>(hidden, out));
    }
    std::shared_ptr<nn::ZoneoutLstm> lstm;
    std::shared_ptr<nn::Linear> out_;
  };
  auto m = b.set_root(std::make_shared<Net>(io.in, io.classes));
  Tensor h = m->lstm->forward(io.x, io.time);
  h.mark_as_output("zoneout_h");
  // The state handed from one call to the next (x again, as a second chunk).
  auto [h1, state] = m->lstm->forward_with_state(io.x, io.time);
  auto [h2, final] = m->lstm->forward_with_state(io.x, io.time, state);
  state.h.mark_as_output("zoneout_state_h");
  state.c.mark_as_output("zoneout_state_c");
  h2.mark_as_output("zoneout_h2");
  io.finish(m->out_->forward(nn::add(h, nn::mul(h1, h2))));
}

// SelfAttention::forward_with_cache over chunks (x again as each next chunk,
// as build_zoneout_lstm): "rel" causal with relative positions (clipping 2)
// over three chunks, "rot" causal rotary and "chunk" non-causal with a QKV
// bias over two; key 8, value 8, 2 heads each. Outputs <name>_<chunk>.
void build_attention_cache(Builder& b) {
  Io io(b);
  struct Net : nn::Module {
    Net(Dim in, Dim out) : Module("attention_cache_net") {
      const auto opts = [in] {
        return nn::SelfAttentionOptions(in, Dim::feature("key", 8), Dim::feature("value", 8), 2);
      };
      rel = register_module(
          "rel", std::make_shared<nn::SelfAttention>(opts().causal(true).rel_pos_clipping(2)));
      rot = register_module("rot",
                            std::make_shared<nn::SelfAttention>(opts().causal(true).rotary(true)));
      chunk = register_module("chunk", std::make_shared<nn::SelfAttention>(opts().qkv_bias(true)));
      out_ = register_module("out", std::make_shared<nn::Linear>(in, out));
    }
    std::shared_ptr<nn::SelfAttention> rel, rot, chunk;
    std::shared_ptr<nn::Linear> out_;
  };
  auto m = b.set_root(std::make_shared<Net>(io.in, io.classes));
  Tensor sum;
  const auto chunks = [&](const nn::SelfAttention& att, const char* name, int n) {
    nn::AttentionCache cache;
    for (int i = 1; i <= n; ++i) {
      auto [y, next] = att.forward_with_cache(io.x, io.time, cache);
      y.mark_as_output(absl::StrCat(name, "_", i));
      sum = sum.defined() ? nn::add(sum, y) : y;
      cache = next;
    }
  };
  chunks(*m->rel, "rel", 3);
  chunks(*m->rot, "rot", 2);
  chunks(*m->chunk, "chunk", 2);
  io.finish(m->out_->forward(sum));
}

// Transformer-XL-style relative-positional self-attention: a Linear to 6
// dims, then RelPosSelfAttention (key 6, value 4, 2 heads) over time.
void build_rel_pos_xl(Builder& b, double rel_pos_dropout) {
  Io io(b);
  struct Net : nn::Module {
    Net(Dim in, Dim out, double rel_pos_dropout) : Module("xl_net") {
      Dim model = Dim::feature("model", 6);
      in_ = register_module("in", std::make_shared<nn::Linear>(in, model));
      att = register_module("att", std::make_shared<nn::RelPosSelfAttention>(
                                       nn::RelPosSelfAttentionOptions(model, Dim::feature("key", 6),
                                                                      Dim::feature("value", 4), 2)
                                           .rel_pos_dropout(rel_pos_dropout)));
      out_ = register_module("out", std::make_shared<nn::Linear>(model, out));
    }
    std::shared_ptr<nn::Linear> in_, out_;
    std::shared_ptr<nn::RelPosSelfAttention> att;
  };
  auto m = b.set_root(std::make_shared<Net>(io.in, io.classes, rel_pos_dropout));
  Tensor h = m->in_->forward(io.x);
  h.mark_as_output("att_in");
  Tensor y = m->att->forward(h, io.time);
  y.mark_as_output("att");
  io.finish(m->out_->forward(y));
}

// Losses as values and on computed targets: the cross-entropy per frame,
// marked as a loss and summed over time as an output; a cross-entropy
// against the targets shifted by one frame (a computed target); CTC against
// extra labels, marked and as an output per sequence; the edit distance of
// the extra labels and the classes.
void build_loss_values(Builder& b) {
  Io io(b);
  const Dim label_time = Dim::spatial("label_time");
  Tensor labels =
      b.extern_data("labels", {Dim::batch(), label_time}, ir::DType::kInt32, io.classes);
  struct Net : nn::Module {
    Net(Dim in, Dim classes) : Module("loss_net") {
      out_ = register_module("out", std::make_shared<nn::Linear>(in, classes));
      ctc = register_module("ctc",
                            std::make_shared<nn::Linear>(in, classes + Dim::feature("blank", 1)));
    }
    std::shared_ptr<nn::Linear> out_, ctc;
  };
  auto m = b.set_root(std::make_shared<Net>(io.in, io.classes));
  Tensor logits = m->out_->forward(io.x);
  logits.mark_as_output();
  Tensor ce = nn::softmax_cross_entropy(logits, io.y);
  ce.mark_as_loss("ce");
  nn::reduce(ce, "sum", {io.time}).mark_as_output("ce_sum");
  nn::softmax_cross_entropy(logits, nn::shift_right(io.y, io.time)).mark_as_loss("ce_shifted");
  Tensor ctc = nn::ctc_loss(m->ctc->forward(io.x), labels, io.time);
  ctc.mark_as_loss("ctc");
  (ctc * nn::constant(b, 1.0)).mark_as_output("ctc_value");
  nn::edit_distance(labels, label_time, io.y, io.time).mark_as_output("edit_distance");
}

// A small transducer: an encoder (linear, [B, time, 8]), a prediction
// network (an embedding of BOS + the labels, [B, pred_time, 8]) and a joint
// network (tanh of their sum, then a linear layer to the 3 labels + blank);
// the RNN-T loss (trained) and the monotonic (RNA) one, each also as an
// output per sequence, and the logits.
void build_transducer(Builder& b) {
  Io io(b);
  const Dim label_time = Dim::spatial("label_time"), hidden = Dim::feature("hidden", 8);
  const Dim with_bos = io.classes + Dim::feature("bos", 1);
  Tensor labels =
      b.extern_data("labels", {Dim::batch(), label_time}, ir::DType::kInt32, io.classes);
  struct Net : nn::Module {
    Net(Dim in, Dim hidden, Dim vocab, Dim classes) : Module("transducer_net") {
      enc = register_module("enc", std::make_shared<nn::Linear>(in, hidden));
      pred = register_module("pred", std::make_shared<nn::Embedding>(vocab, hidden));
      joint = register_module(
          "joint", std::make_shared<nn::Linear>(hidden, classes + Dim::feature("blank", 1)));
    }
    std::shared_ptr<nn::Linear> enc, joint;
    std::shared_ptr<nn::Embedding> pred;
  };
  auto m = b.set_root(std::make_shared<Net>(io.in, hidden, with_bos, io.classes));
  Tensor pred_in = nn::pad(nn::as_indices(labels, with_bos), label_time, 1, 0,
                           static_cast<double>(*io.classes.size()));
  const Dim pred_time = pred_in.dims()[1];
  Tensor logits = m->joint->forward(nn::tanh(m->enc->forward(io.x) + m->pred->forward(pred_in)));
  logits.mark_as_output("logits");
  Tensor rnnt = nn::transducer_loss(logits, labels, io.time, label_time, pred_time);
  nn::custom_loss(rnnt).mark_as_loss("rnnt");
  (rnnt * nn::constant(b, 1.0)).mark_as_output("rnnt_value");
  nn::transducer_loss(logits, labels, io.time, label_time, pred_time, {.monotonic = true})
      .mark_as_output("rna_value");
}

// Attention dropout (0.5) in SelfAttention (fused, rel-pos, projection
// without bias), RelPosSelfAttention and CrossAttention over time.
void build_att_dropout(Builder& b) {
  Io io(b);
  struct Net : nn::Module {
    Net(Dim in, Dim out) : Module("att_dropout_net") {
      Dim model = Dim::feature("model", 4);
      in_ = register_module("in", std::make_shared<nn::Linear>(in, model));
      self_att = register_module("self_att", std::make_shared<nn::SelfAttention>(
                                                 nn::SelfAttentionOptions(model, model, model, 2)
                                                     .rel_pos_clipping(2)
                                                     .att_dropout(0.5)
                                                     .proj_bias(false)));
      xl = register_module(
          "xl", std::make_shared<nn::RelPosSelfAttention>(
                    nn::RelPosSelfAttentionOptions(model, model, model, 2).att_dropout(0.5)));
      cross = register_module(
          "cross", std::make_shared<nn::CrossAttention>(model, model, model, model, 2, 0.5));
      out_ = register_module("out", std::make_shared<nn::Linear>(model, out));
    }
    std::shared_ptr<nn::Linear> in_, out_;
    std::shared_ptr<nn::SelfAttention> self_att;
    std::shared_ptr<nn::RelPosSelfAttention> xl;
    std::shared_ptr<nn::CrossAttention> cross;
  };
  auto m = b.set_root(std::make_shared<Net>(io.in, io.classes));
  Tensor h = m->in_->forward(io.x);
  Tensor a = m->self_att->forward(h, io.time);
  a.mark_as_output("self_att");
  Tensor x = m->xl->forward(h, io.time);
  x.mark_as_output("xl");
  // Cross-attention of the mean frame over the sequence.
  Tensor c = m->cross->forward(nn::reduce(h, "mean", {io.time}), h, io.time);
  c.mark_as_output("cross");
  io.finish(m->out_->forward(a + x + c));
}

// slice, split, split_dims, merge_dims, shift_right and mask_padding, with
// their results as outputs for the numeric test.
void build_shape_ops(Builder& b) {
  Io io(b);
  struct Net : nn::Module {
    Net(Dim in, Dim out) : Module("shape_net") {
      out_ = register_module("out", std::make_shared<nn::Linear>(in, out));
    }
    std::shared_ptr<nn::Linear> out_;
  };
  auto m = b.set_root(std::make_shared<Net>(io.in, io.classes));
  Dim two = Dim::feature("two", 2), three = Dim::feature("three", 3);
  nn::slice(io.x, io.in, 1, three).mark_as_output("sliced");
  std::vector<Tensor> parts = nn::split(io.x, io.in, {two, three});
  parts[1].mark_as_output("split_b");
  // [three] -> [th(3), un(1)] -> back into a new dim of 3.
  Dim th = Dim::feature("th", 3), un = Dim::feature("un", 1);
  Tensor split = nn::split_dims(parts[1], three, {th, un});
  split.mark_as_output("split_dims");
  nn::merge_dims(split, {th, un}, Dim::feature("merged", 3)).mark_as_output("merged");
  nn::shift_right(io.x, io.time).mark_as_output("shifted");
  nn::mask_padding(io.x, io.time, -1.0).mark_as_output("masked");
  io.finish(m->out_->forward(io.x));
}

// The extern data of the CTC test models: features [B, time, input] and
// label sequences [B, label_time] over labels(3); finish: the logits over
// labels + blank are the output and the CTC loss "ctc" along `axis`.
struct CtcIo {
  Dim time = Dim::spatial("time"), in;
  Dim label_time = Dim::spatial("label_time"), labels = Dim::feature("labels", 3);
  Dim with_blank = labels + Dim::feature("blank", 1);
  Tensor x, y;
  CtcIo(Builder& b, int64_t features) : in(Dim::feature("input", features)) {
    x = b.extern_data("data", {Dim::batch(), time, in});
    y = b.extern_data("classes", {Dim::batch(), label_time}, ir::DType::kInt32, labels);
  }
  void finish(const Tensor& logits, const Dim& axis) const {
    logits.mark_as_output();
    nn::ctc_loss(logits, y, axis).mark_as_loss("ctc");
  }
};

// A 1-block Conformer (frontend with time stride 2, model 8, ff 16, 2
// heads, conv kernel 3, clipping 2) with CTC over its own label sequences.
void build_conformer_ctc(Builder& b) {
  CtcIo io(b, 5);
  struct Net : nn::Module {
    Net(Dim in, Dim out) : Module("conformer_ctc") {
      Dim model = Dim::feature("model", 8);
      const auto opts = nn::ConformerOptions()
                            .num_layers(1)
                            .num_heads(2)
                            .conv_kernel(3)
                            .rel_pos_clipping(2)
                            .frontend_channels1(4)
                            .frontend_channels2(6);
      encoder = register_module("encoder", std::make_shared<nn::ConformerEncoder>(
                                               in, model, Dim::feature("ff", 16), opts));
      out_ = register_module("out", std::make_shared<nn::Linear>(model, out));
    }
    std::shared_ptr<nn::ConformerEncoder> encoder;
    std::shared_ptr<nn::Linear> out_;
  };
  auto m = b.set_root(std::make_shared<Net>(io.in, io.with_blank));
  io.finish(m->out_->forward(m->encoder->forward(io.x, io.time)), m->encoder->out_axis(io.time));
}

// CTC's best path with durations (#26): logits of a Linear over labels +
// blank at each frame; the path's labels and each one's frames, and the
// greedy decoding (the same labels).
void build_ctc_durations(Builder& b) {
  CtcIo io(b, 5);
  auto m = b.set_root(std::make_shared<nn::Linear>(io.in, io.with_blank));
  Tensor logits = m->forward(io.x);
  logits.mark_as_output("logits");
  const Dim path = Dim::spatial("path");
  auto [labels, frames] = nn::ctc_best_path_durations(logits, io.time, path);
  labels.mark_as_output("path_labels");
  frames.mark_as_output("path_frames");
  nn::ctc_greedy_decode(logits, io.time, Dim::spatial("greedy")).mark_as_output("greedy");
  nn::ctc_loss(logits, io.y, io.time).mark_as_loss("ctc");
}

// Configurable Conformer blocks (#26), on features of the model dim 8:
// "block" is one ConformerBlock in another order, {"mhsa", "ff", "conv"}
// (no macaron) with scales {1, 0.5, 1}, plain self-attention with a QKV bias
// and per-module dropouts (test_modules.py compares it with i6_models'
// ConformerBlockV2 of that order); the encoder under the CTC loss has the
// "linear" frontend and the convolution first, {"ff", "conv", "mhsa", "ff"}.
void build_conformer_order(Builder& b) {
  CtcIo io(b, 8);
  struct Net : nn::Module {
    Net(Dim in, Dim out) : Module("conformer_order") {
      Dim model = Dim::feature("model", 8), ff = Dim::feature("ff", 16);
      const auto opts = nn::ConformerOptions()
                            .num_layers(1)
                            .num_heads(2)
                            .conv_kernel(3)
                            .rel_pos_clipping(0)
                            .att_qkv_bias(true)
                            .ff_dropout(0.2)
                            .mhsa_dropout(0.05)
                            .conv_dropout(0.0);
      block = register_module(
          "block", std::make_shared<nn::ConformerBlock>(in, ff,
                                                        nn::ConformerOptions(opts)
                                                            .block_modules({"mhsa", "ff", "conv"})
                                                            .block_scales({1.0, 0.5, 1.0})));
      encoder = register_module("encoder",
                                std::make_shared<nn::ConformerEncoder>(
                                    in, model, ff,
                                    nn::ConformerOptions(opts).frontend("linear").block_modules(
                                        {"ff", "conv", "mhsa", "ff"})));
      out_ = register_module("out", std::make_shared<nn::Linear>(model, out));
    }
    std::shared_ptr<nn::ConformerBlock> block;
    std::shared_ptr<nn::ConformerEncoder> encoder;
    std::shared_ptr<nn::Linear> out_;
  };
  auto m = b.set_root(std::make_shared<Net>(io.in, io.with_blank));
  m->block->forward(io.x, io.time).mark_as_output("block");
  io.finish(m->out_->forward(m->encoder->forward(io.x, io.time)), m->encoder->out_axis(io.time));
}

// E-Branchformer (#26), on features of the model dim 8: "block" is one
// EBranchformerBlock as rf's EBranchformerLayer (Transformer-XL relative
// positions with a QKV bias, ff 16, cgMLP 12, kernels 3; test_modules.py
// compares it with rf's own layer); the encoder under the CTC loss has the
// "conv1d" frontend (kernel 3, time stride 2) and one E-Branchformer block.
void build_e_branchformer(Builder& b) {
  CtcIo io(b, 8);
  struct Net : nn::Module {
    Net(Dim in, Dim out) : Module("e_branchformer") {
      Dim model = Dim::feature("model", 8), ff = Dim::feature("ff", 16);
      Dim cgmlp = Dim::feature("cgmlp", 12);
      const auto opts = nn::ConformerOptions()
                            .num_layers(1)
                            .num_heads(2)
                            .conv_kernel(3)
                            .rel_pos_xl(true)
                            .att_qkv_bias(true);
      block =
          register_module("block", std::make_shared<nn::EBranchformerBlock>(in, ff, cgmlp, opts));
      encoder = register_module(
          "encoder", std::make_shared<nn::ConformerEncoder>(
                         in, model, ff,
                         nn::ConformerOptions(opts).frontend("conv1d").frontend_kernel(3), cgmlp));
      out_ = register_module("out", std::make_shared<nn::Linear>(model, out));
    }
    std::shared_ptr<nn::EBranchformerBlock> block;
    std::shared_ptr<nn::ConformerEncoder> encoder;
    std::shared_ptr<nn::Linear> out_;
  };
  auto m = b.set_root(std::make_shared<Net>(io.in, io.with_blank));
  m->block->forward(io.x, io.time).mark_as_output("block");
  io.finish(m->out_->forward(m->encoder->forward(io.x, io.time)), m->encoder->out_axis(io.time));
}

// i6_models' ConformerEncoderV1 in retc (#27): the "conv1d" frontend
// (WindowConvolutionFrontendV1: kernel 3, stride 1, swish), two blocks of ff,
// mhsa (plain, with a QKV bias: torch's MultiheadAttention), conv, ff; model 8,
// ff 16, 2 heads, kernel 3; its output the encoder's, no loss.
// configs/maps/i6_conformer_v1.map loads an i6_models state dict into it
// (test_import.py).
void build_i6_conformer(Builder& b) {
  CtcIo io(b, 5);
  struct Net : nn::Module {
    Net(Dim in, Dim out) : Module("i6_conformer") {
      Dim model = Dim::feature("model", 8), ff = Dim::feature("ff", 16);
      encoder =
          register_module("encoder", std::make_shared<nn::ConformerEncoder>(in, model, ff,
                                                                            nn::ConformerOptions()
                                                                                .num_layers(2)
                                                                                .num_heads(2)
                                                                                .conv_kernel(3)
                                                                                .rel_pos_clipping(0)
                                                                                .att_qkv_bias(true)
                                                                                .frontend("conv1d")
                                                                                .frontend_kernel(3)
                                                                                .time_stride(1)));
    }
    std::shared_ptr<nn::ConformerEncoder> encoder;
  };
  auto m = b.set_root(std::make_shared<Net>(io.in, io.with_blank));
  m->encoder->forward(io.x, io.time).mark_as_output();
}

// The Conformer with RETURNN frontend's ConformerEncoder defaults (Transformer-XL
// relative positions with a QKV bias, depthwise kernel 32, ff 4 x model,
// swish; its frontend two 3x3 convs of 8 channels, features pooled by 2, time
// stride 2, a projection without bias) and relu_square feed-forward modules
// without bias, frame-level CTC on top; test_modules.py compares the
// encoder's params with rf's own ConformerEncoder's.
void build_conformer_rf(Builder& b) {
  CtcIo io(b, 40);
  struct Net : nn::Module {
    Net(Dim in, Dim out) : Module("conformer_rf") {
      Dim model = Dim::feature("model", 16);
      const auto opts = nn::ConformerOptions()
                            .num_layers(2)
                            .num_heads(2)
                            .conv_kernel(32)
                            .rel_pos_xl(true)
                            .att_qkv_bias(true)
                            .frontend_channels1(8)
                            .frontend_channels2(8)
                            .frontend_linear_bias(false)
                            .conv_norm_epsilon(1e-3)
                            .conv_norm_masked(false);  // rf's BatchNorm before behavior version 29
      encoder = register_module("encoder", std::make_shared<nn::ConformerEncoder>(
                                               in, model, Dim::feature("ff", 64), opts));
      auto other = nn::ConformerOptions(opts).ff_activation("relu_square").ff_bias(false);
      ff = register_module(
          "ff", std::make_shared<nn::ConformerFeedForward>(model, Dim::feature("ff", 64), other));
      out_ = register_module("out", std::make_shared<nn::Linear>(model, out));
    }
    std::shared_ptr<nn::ConformerEncoder> encoder;
    std::shared_ptr<nn::ConformerFeedForward> ff;
    std::shared_ptr<nn::Linear> out_;
  };
  auto m = b.set_root(std::make_shared<Net>(io.in, io.with_blank));
  Tensor h = m->encoder->forward(io.x, io.time);
  io.finish(m->out_->forward(nn::add(h, m->ff->forward(h))), m->encoder->out_axis(io.time));
}

// A Transformer encoder-decoder on sparse source and target sequences over
// vocab(6), teacher forced: embeddings of model(8), a TransformerEncoder and
// a TransformerDecoder with `opts` (from the model dim), the logits from a
// Linear "out" or, `tied`, from the target embedding (Embedding::unembed);
// the logits are the output, "ce" the loss.
void build_encoder_decoder(Builder& b, const char* name,
                           const std::function<nn::TransformerOptions(Dim)>& opts, bool tied) {
  Dim src_time = Dim::spatial("src_time"), tgt_time = Dim::spatial("tgt_time");
  Dim vocab = Dim::feature("vocab", 6);
  Tensor src = b.extern_data("data", {Dim::batch(), src_time}, ir::DType::kInt32, vocab);
  Tensor tgt = b.extern_data("classes", {Dim::batch(), tgt_time}, ir::DType::kInt32, vocab);
  struct Net : nn::Module {
    Net(const char* name, Dim vocab, const nn::TransformerOptions& o, bool tied) : Module(name) {
      src_embed =
          register_module("src_embed", std::make_shared<nn::Embedding>(vocab, o.model_dim()));
      tgt_embed =
          register_module("tgt_embed", std::make_shared<nn::Embedding>(vocab, o.model_dim()));
      encoder = register_module("encoder", std::make_shared<nn::TransformerEncoder>(o));
      decoder = register_module("decoder", std::make_shared<nn::TransformerDecoder>(o));
      if (!tied) out_ = register_module("out", std::make_shared<nn::Linear>(o.model_dim(), vocab));
    }
    std::shared_ptr<nn::Embedding> src_embed, tgt_embed;
    std::shared_ptr<nn::TransformerEncoder> encoder;
    std::shared_ptr<nn::TransformerDecoder> decoder;
    std::shared_ptr<nn::Linear> out_;
  };
  auto m = b.set_root(std::make_shared<Net>(name, vocab, opts(Dim::feature("model", 8)), tied));
  Tensor memory = m->encoder->forward(m->src_embed->forward(src), src_time);
  Tensor dec_in = nn::shift_right(m->tgt_embed->forward(tgt), tgt_time);
  Tensor h = m->decoder->forward(dec_in, tgt_time, memory, src_time);
  Tensor logits = m->out_ ? m->out_->forward(h) : m->tgt_embed->unembed(h);
  logits.mark_as_output();
  nn::softmax_cross_entropy(logits, tgt).mark_as_loss("ce");
}

// 1 layer each, ff 16, 2 heads, the plain layers.
void build_seq2seq(Builder& b) {
  build_encoder_decoder(
      b, "seq2seq",
      [](Dim model) {
        return nn::TransformerOptions(model, Dim::feature("ff", 16), 2).num_layers(1);
      },
      false);
}

// GroupNorm of 6 channels in 3 groups: over each group's channels and the
// time axis (per sequence, within its length; "gn_time") and per frame
// ("gn_frame"), on h = a linear layer's output ("h").
void build_group_norm(Builder& b) {
  Io io(b);
  struct Net : nn::Module {
    Dim channels = Dim::feature("channels", 6);
    Net(Dim in, Dim out) : Module("group_norm_net") {
      in_ = register_module("in", std::make_shared<nn::Linear>(in, channels));
      over_time = register_module("over_time", std::make_shared<nn::GroupNorm>(channels, 3));
      per_frame = register_module("per_frame", std::make_shared<nn::GroupNorm>(channels, 3));
      out_ = register_module("out", std::make_shared<nn::Linear>(channels, out));
    }
    std::shared_ptr<nn::Linear> in_, out_;
    std::shared_ptr<nn::GroupNorm> over_time, per_frame;
  };
  auto m = b.set_root(std::make_shared<Net>(io.in, io.classes));
  Tensor h = m->in_->forward(io.x);
  h.mark_as_output("h");
  Tensor over_time = m->over_time->forward(h, {io.time});
  over_time.mark_as_output("gn_time");
  Tensor per_frame = m->per_frame->forward(h);
  per_frame.mark_as_output("gn_frame");
  io.finish(m->out_->forward(nn::add(over_time, per_frame)));
}

// Log-mel features of raw 16 kHz audio [B, samples, 1] inside the model
// (80 filters, 25 ms windows every 10 ms, 512-point FFT: rf's defaults), its
// power spectrum marked too; then a linear layer and CTC on the frames.
void build_log_mel(Builder& b) {
  const Dim samples = Dim::spatial("samples"), label_time = Dim::spatial("label_time");
  const Dim mel = Dim::feature("mel", 80), labels = Dim::feature("labels", 3);
  Tensor audio = b.extern_data("data", {Dim::batch(), samples, Dim::feature("raw", 1)});
  Tensor y = b.extern_data("classes", {Dim::batch(), label_time}, ir::DType::kInt32, labels);
  auto out = b.set_root(std::make_shared<nn::Linear>(mel, labels + Dim::feature("blank", 1)));
  nn::LogMel f = nn::log_mel_filterbank_from_raw(audio, samples, mel);
  f.features.mark_as_output("log_mel");
  nn::Spectrum s =
      nn::stft(nn::reduce(audio, "sum", {audio.dims().back()}), samples, 400, 160, 512);
  nn::power_spectrum(s).mark_as_output("power");
  Tensor logits = out->forward(f.features);
  logits.mark_as_output();
  nn::ctc_loss(logits, y, f.frames).mark_as_loss("ctc");
}

// Encoder-decoders (2 layers each, ff 32, 2 heads) with the layers'
// options: kRf, RETURNN frontend's TransformerEncoder/TransformerDecoder
// defaults (biases everywhere, attention and activation dropout,
// feature-broadcast dropout, a fused cross-attention kv, the logits tied to
// the target embedding: share_embedding); kRfNoBias, the same without any
// bias in the attention and feed-forward blocks (rf's with_bias=False);
// kLlama: also RMS norms and a gated (SwiGLU) feed-forward (rf's
// norm=rf.RMSNorm, ff=FeedForwardGated); kPostNorm: post-norm, no final
// norm, relu_square. test_modules.py compares the first three with rf's own
// modules' params.
enum class TransformerVariant { kRf, kRfNoBias, kLlama, kPostNorm };
template <TransformerVariant V>
void build_transformer_options(Builder& b) {
  auto opts = [](Dim model) {
    auto o = nn::TransformerOptions(model, Dim::feature("ff", 32), 2).num_layers(2);
    if (V == TransformerVariant::kPostNorm)
      return o.norm_first(false).final_norm(false).ff_activation("relu_square");
    const bool bias = V == TransformerVariant::kRf;
    o.att_dropout(0.1)
        .act_dropout(0.1)
        .dropout_broadcast(true)
        .qkv_bias(bias)
        .proj_bias(bias)
        .ff_bias(bias)
        .cross_att_fused_kv(true);
    if (V == TransformerVariant::kLlama) o.rms_norm(true).ff_gated(true).ff_activation("swish");
    return o;
  };
  build_encoder_decoder(b, "transformer_options", opts, true);
}

// A loop over time: an Elman RNN h_t = tanh(W x_t + U h_{t-1} + b) and a
// running sum c_t = c_{t-1} + x_t, both stacked; the tagger reads h.
void build_loop(Builder& b) {
  Io io(b);
  struct Net : nn::Module {
    Dim hidden = Dim::feature("hidden", 4);
    Net(Dim in, Dim out) : Module("loop_net") {
      in_ = register_module("in", std::make_shared<nn::Linear>(in, hidden));
      rec = register_module("rec", std::make_shared<nn::Linear>(hidden, hidden, false));
      out_ = register_module("out", std::make_shared<nn::Linear>(hidden, out));
    }
    std::shared_ptr<nn::Linear> in_, rec, out_;
  };
  auto m = b.set_root(std::make_shared<Net>(io.in, io.classes));
  nn::Loop loop(b, io.time);
  Tensor h = loop.state(nn::constant(b, 0.0, {m->hidden}), {Dim::batch(), m->hidden});
  Tensor c = loop.state(nn::constant(b, 0.0, {io.in}), {Dim::batch(), io.in});
  Tensor x_t = loop.unstack(io.x);
  Tensor h_new = nn::tanh(m->in_->forward(x_t) + m->rec->forward(h));
  Tensor c_new = c + x_t;
  loop.next(h, h_new);
  loop.next(c, c_new);
  loop.end();
  Tensor hs = loop.stack(h_new);
  hs.mark_as_output("rnn");
  loop.stack(c_new).mark_as_output("cumsum");
  loop.last(h_new).mark_as_output("rnn_last");
  loop.last(c_new).mark_as_output("sum");
  io.finish(m->out_->forward(hs));
}

// one_hot, train-flag where, range, and a masked loop update: a running
// sum over the frames whose first feature is positive.
void build_select(Builder& b) {
  Dim vocab = Dim::feature("vocab", 7);
  Io io(b);
  Dim feat = io.in;
  Tensor x = io.x;
  Tensor ids = b.extern_data("ids", {Dim::batch(), io.time}, ir::DType::kInt32, vocab);
  auto lin = b.set_root(std::make_shared<nn::Linear>(vocab, io.classes));
  Tensor oh = nn::one_hot(ids);
  oh.mark_as_output("one_hot");
  nn::where(nn::train_flag(b), x, x * nn::constant(b, 2.0)).mark_as_output("by_flag");
  nn::cast(nn::range_in_axis(x, io.time), ir::DType::kFloat32).mark_as_output("positions");
  nn::Loop loop(b, io.time);
  Tensor s = loop.state(nn::constant(b, 0.0, {feat}), {Dim::batch(), feat});
  Tensor x_t = loop.unstack(x);
  Tensor first = nn::slice(x_t, feat, 0, Dim::feature("first", 1));
  Tensor mask =
      nn::compare(nn::reduce(first, "sum", {first.dims().back()}), nn::constant(b, 0.0), "greater");
  Tensor s_new = nn::where(mask, s + x_t, s);
  loop.next(s, s_new);
  loop.end();
  loop.stack(s_new).mark_as_output("masked_sum");
  io.finish(lin->forward(oh));
}

// The Transformer decoder over a whole sequence (causal self-attention) and
// step by step in a loop over its frames (SelfAttention::step: the keys and
// values of the frames so far cached with cum_concat): the same outputs.
enum class DecoderVariant { kFused, kRf, kLlama, kRelPos };

template <DecoderVariant kVariant>
void build_stepwise_decoder(Builder& b) {
  const Dim tgt_time = Dim::spatial("tgt_time"), src_time = Dim::spatial("src_time");
  const Dim model = Dim::feature("model", 16);
  Tensor dec_in = b.extern_data("data", {Dim::batch(), tgt_time, model});
  Tensor memory = b.extern_data("memory", {Dim::batch(), src_time, model});
  auto opts = nn::TransformerOptions(model, Dim::feature("ff", 32), 4).num_layers(2).dropout(0.0);
  // rf's layers: a QKV bias (the full decoder's causal attention from
  // primitive ops), a fused cross-attention kv.
  if (kVariant == DecoderVariant::kRf)
    opts.qkv_bias(true).cross_att_fused_kv(true).att_dropout(0.1);
  // Llama's: rotary positions (no positional encoding on the input), RMS
  // norms, SwiGLU, no biases.
  // Learned relative positions (Shaw's, clipped at 3: the table's edge
  // reached within the test's lengths), causal, no positional encoding.
  if (kVariant == DecoderVariant::kRelPos) opts.rel_pos_clipping(3);
  const bool llama = kVariant == DecoderVariant::kLlama || kVariant == DecoderVariant::kRelPos;
  if (kVariant == DecoderVariant::kLlama) {
    opts.rotary(true).rms_norm(true).ff_gated(true).ff_activation("swish").proj_bias(false).ff_bias(
        false);
  }
  auto dec = b.set_root(std::make_shared<nn::TransformerDecoder>(opts));
  dec->forward(llama ? dec_in : nn::add_positional_encoding(dec_in, tgt_time), tgt_time, memory,
               src_time)
      .mark_as_output("full");
  nn::Loop loop(b, tgt_time);
  Tensor frame = loop.unstack(dec_in);
  Tensor h = dec->step(llama ? frame : loop.add_positional_encoding(frame), loop, memory, src_time);
  loop.end();
  loop.stack(h).mark_as_output("stepwise");
}

// nn::cond on the train flag: in training the first branch (a), else the
// second (tanh(b)), each computed only when taken; the same values outside
// (then_check, else_check) for the test.
class CondNet : public nn::Module {
 public:
  CondNet(Dim in, Dim out) : Module("cond_net") {
    a = register_module("a", std::make_shared<nn::Linear>(in, out));
    b = register_module("b", std::make_shared<nn::Linear>(in, out));
  }
  std::shared_ptr<nn::Linear> a, b;
};

void build_cond(Builder& b) {
  Io io(b);
  auto m = b.set_root(std::make_shared<CondNet>(io.in, io.classes));
  Tensor y = nn::cond(
      nn::train_flag(b), [&] { return m->a->forward(io.x); },
      [&] { return nn::tanh(m->b->forward(io.x)); });
  m->a->forward(io.x).mark_as_output("then_check");
  nn::tanh(m->b->forward(io.x)).mark_as_output("else_check");
  io.finish(y);
}

// LSTM states: lstm1's final state (h1, c1) is lstm2's initial state; lstm1
// step by step in a loop (Lstm::step) gives lstm1's outputs (y1_steps = y1).
class LstmStateNet : public nn::Module {
 public:
  LstmStateNet(Dim in, Dim hidden, Dim out) : Module("lstm_state_net") {
    lstm1 = register_module("lstm1", std::make_shared<nn::Lstm>(in, hidden));
    lstm2 = register_module("lstm2", std::make_shared<nn::Lstm>(in, hidden));
    out_ = register_module("out", std::make_shared<nn::Linear>(hidden, out));
  }
  std::shared_ptr<nn::Lstm> lstm1, lstm2;
  std::shared_ptr<nn::Linear> out_;
};

void build_lstm_state(Builder& b) {
  Io io(b);
  const Dim hidden = Dim::feature("hidden", 6);
  auto m = b.set_root(std::make_shared<LstmStateNet>(io.in, hidden, io.classes));
  auto [y1, s1] = m->lstm1->forward_with_state(io.x, io.time);
  auto [y2, s2] = m->lstm2->forward_with_state(io.x, io.time, s1);
  y1.mark_as_output("y1");
  s1.h.mark_as_output("h1");
  s1.c.mark_as_output("c1");
  s2.h.mark_as_output("h2");
  nn::Loop loop(b, io.time);
  nn::LstmState state{loop.state(nn::constant(b, 0.0), {Dim::batch(), hidden}),
                      loop.state(nn::constant(b, 0.0), {Dim::batch(), hidden})};
  nn::LstmState next = m->lstm1->step(loop.unstack(io.x), state);
  loop.next(state.h, next.h);
  loop.next(state.c, next.c);
  loop.end();
  loop.stack(next.h).mark_as_output("y1_steps");
  io.finish(m->out_->forward(y2));
}

}  // namespace

std::vector<ModelDef> module_test_models() {
  auto def = [](std::string name, void (*build)(Builder&)) {
    return ModelDef{std::move(name), "module library test model", build, small_training()};
  };
  return {
      def("mod-layer-norm", build_normed<nn::LayerNorm>),
      def("mod-batch-norm-options", build_batch_norm_options),
      def("op-param-assign", build_param_assign),
      def("mod-rel-pos-encoding", build_rel_pos_encoding),
      def("mod-rms-norm", build_normed<nn::RmsNorm>),
      def("mod-embedding", build_embedding),
      def("mod-blstm", build_blstm),
      def("op-functional", build_ops),
      def("op-logic", build_logic),
      def("mod-self-attention", build_attention<false>),
      def("mod-causal-attention", build_attention<true>),
      def("mod-rotary-attention", build_rotary_attention),
      def("mod-attention-cache", build_attention_cache),
      def("mod-transformer", build_transformer),
      def("mod-conv1d", build_conv),
      def("mod-conv2d", build_conv2d),
      def("mod-conv-stride", build_conv_stride),
      def("mod-transposed-conv", build_transposed_conv),
      def("op-array", build_array_ops),
      def("op-stack-window", build_stack_window),
      def("op-repeat-const", build_repeat_const),
      def("op-reverse-slice", build_reverse_slice),
      def("op-floor-mod", build_floor_mod),
      def("op-scatter", build_scatter),
      def("op-dims-from-sizes", build_dims_from_sizes),
      def("op-raw-layer", build_raw_layer),
      def("mod-batch-norm", build_normed<nn::BatchNorm>),
      def("mod-rel-pos-attention", build_rel_pos_attention),
      def("mod-sequential", build_sequential),
      def("mod-named-sequential", build_named_sequential),
      def("mod-sequential-time", build_sequential_time),
      def("mod-zoneout-lstm", build_zoneout_lstm),
      def("mod-rel-pos-xl", [](Builder& b) { build_rel_pos_xl(b, 0.0); }),
      // The same with dropout on the encodings (their table over the offsets).
      def("mod-rel-pos-xl-dropout", [](Builder& b) { build_rel_pos_xl(b, 0.3); }),
      def("loss-values", build_loss_values),
      def("mod-att-dropout", build_att_dropout),
      def("op-shapes", build_shape_ops),
      def("mod-conformer-ctc", build_conformer_ctc),
      def("mod-seq2seq", build_seq2seq),
      def("mod-group-norm", build_group_norm),
      def("mod-log-mel", build_log_mel),
      def("loss-transducer", build_transducer),
      def("mod-conformer-rf", build_conformer_rf),
      def("mod-i6-conformer", build_i6_conformer),
      def("mod-conformer-order", build_conformer_order),
      def("op-ctc-durations", build_ctc_durations),
      def("mod-e-branchformer", build_e_branchformer),
      def("mod-transformer-rf", build_transformer_options<TransformerVariant::kRf>),
      def("mod-transformer-rf-nobias", build_transformer_options<TransformerVariant::kRfNoBias>),
      def("mod-transformer-llama", build_transformer_options<TransformerVariant::kLlama>),
      def("mod-transformer-postnorm", build_transformer_options<TransformerVariant::kPostNorm>),
      def("mod-stepwise-decoder", build_stepwise_decoder<DecoderVariant::kFused>),
      def("mod-stepwise-decoder-rf", build_stepwise_decoder<DecoderVariant::kRf>),
      def("mod-stepwise-decoder-llama", build_stepwise_decoder<DecoderVariant::kLlama>),
      def("mod-stepwise-decoder-rel-pos", build_stepwise_decoder<DecoderVariant::kRelPos>),
      def("mod-lstm-state", build_lstm_state),
      def("op-cond", build_cond),
      def("mod-loop", build_loop),
      def("op-select", build_select),
      def("loss-plain", build_loss<LossVariant::kPlain>),
      def("loss-scaled", build_loss<LossVariant::kScaled>),
      def("loss-smoothed", build_loss<LossVariant::kSmoothed>),
      def("loss-mse", build_loss<LossVariant::kMse>),
      def("loss-custom", build_loss<LossVariant::kCustom>),
      def("loss-normalized", build_loss<LossVariant::kNormalized>),
      def("loss-focal", build_loss<LossVariant::kFocal>),
  };
}

}  // namespace retc::testing
