#include "compiler/nn/conformer.h"

#include "absl/strings/str_cat.h"
#include "compiler/nn/builder.h"
#include "compiler/nn/error.h"

namespace retc::nn {
namespace {

// Dropout elementwise, or with the mask shared over all but the feature dims.
Tensor drop(const Tensor& x, double rate, bool broadcast, std::source_location loc) {
  std::vector<ir::Dim> axes;
  if (broadcast) {
    for (const ir::Dim& d : x.dims()) {
      if (d.is_feature_like()) axes.push_back(d);
    }
  }
  return dropout(x, rate, std::move(axes), loc);
}

// x + k·dropout(branch)
Tensor residual(const Tensor& x, const Tensor& branch, double rate, bool broadcast, double k,
                std::source_location loc) {
  Tensor h = drop(branch, rate, broadcast, loc);
  if (k != 1.0) h = mul(h, constant(x.builder(), k, {}, loc), loc);
  return add(x, h, loc);
}

}  // namespace

ConformerFeedForward::ConformerFeedForward(ir::Dim model_dim, ir::Dim ff_dim,
                                           const ConformerOptions& opts)
    : Module("conformer_ff"),
      dropout_(opts.dropout()),
      dropout_broadcast_(opts.dropout_broadcast()),
      activation_(opts.ff_activation()) {
  if (!is_named_activation(activation_))
    reject(absl::StrCat(describe(), ": ff_activation \"", activation_, "\" is not an activation"));
  linear_ff =
      register_module("linear_ff", std::make_shared<Linear>(model_dim, ff_dim, opts.ff_bias()));
  linear_out =
      register_module("linear_out", std::make_shared<Linear>(ff_dim, model_dim, opts.ff_bias()));
}

Tensor ConformerFeedForward::forward(const Tensor& input, std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    Tensor h = named_activation(linear_ff->forward(x, loc), activation_, loc);
    return linear_out->forward(drop(h, dropout_, dropout_broadcast_, loc), loc);
  });
}

ConformerConvModule::ConformerConvModule(ir::Dim model_dim, int64_t kernel_size,
                                         double norm_epsilon)
    : ConformerConvModule(model_dim, kernel_size, BatchNormOptions().epsilon(norm_epsilon)) {}

ConformerConvModule::ConformerConvModule(ir::Dim model_dim, int64_t kernel_size,
                                         const BatchNormOptions& norm_opts)
    : Module("conformer_conv"), model_dim_(model_dim), glu_dim_(2 * model_dim) {
  pointwise_conv1 =
      register_module("pointwise_conv1", std::make_shared<Linear>(model_dim, glu_dim_));
  depthwise_conv = register_module(
      "depthwise_conv",
      std::make_shared<Conv1d>(
          Conv1dOptions(model_dim, model_dim, kernel_size).groups(model_dim.size().value_or(1))));
  norm = register_module("norm", std::make_shared<BatchNorm>(model_dim, norm_opts));
  pointwise_conv2 =
      register_module("pointwise_conv2", std::make_shared<Linear>(model_dim, model_dim));
}

Tensor ConformerConvModule::forward(const Tensor& input, const ir::Dim& axis,
                                    std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    // GLU: the first half gated by the sigmoid of the second, both over model_dim.
    std::vector<Tensor> halves =
        split(pointwise_conv1->forward(x, loc), glu_dim_, {model_dim_, model_dim_}, loc);
    Tensor h = mul(halves[0], sigmoid(halves[1], loc), loc);
    h = swish(norm->forward(depthwise_conv->forward(h, axis, loc), loc), loc);
    return pointwise_conv2->forward(h, loc);
  });
}

ConformerBlock::ConformerBlock(ir::Dim model_dim, ir::Dim ff_dim, const ConformerOptions& opts)
    : Module("conformer_block"),
      dropout_(opts.dropout()),
      dropout_broadcast_(opts.dropout_broadcast()) {
  ff1_norm = register_module("ff1_norm", std::make_shared<LayerNorm>(model_dim));
  ff1 = register_module("ff1", std::make_shared<ConformerFeedForward>(model_dim, ff_dim, opts));
  att_norm = register_module("att_norm", std::make_shared<LayerNorm>(model_dim));
  if (opts.rel_pos_xl()) {
    rel_pos_att = register_module(
        "self_att",
        std::make_shared<RelPosSelfAttention>(
            RelPosSelfAttentionOptions(model_dim, model_dim, model_dim, opts.num_heads())
                .att_dropout(opts.att_dropout())
                .qkv_bias(opts.att_qkv_bias())
                .proj_bias(opts.att_proj_bias())));
  } else {
    self_att = register_module(
        "self_att", std::make_shared<SelfAttention>(
                        SelfAttentionOptions(model_dim, model_dim, model_dim, opts.num_heads())
                            .rel_pos_clipping(opts.rel_pos_clipping())
                            .att_dropout(opts.att_dropout())
                            .qkv_bias(opts.att_qkv_bias())
                            .proj_bias(opts.att_proj_bias())));
  }
  conv_norm = register_module("conv_norm", std::make_shared<LayerNorm>(model_dim));
  conv = register_module(
      "conv", std::make_shared<ConformerConvModule>(model_dim, opts.conv_kernel(),
                                                    BatchNormOptions()
                                                        .epsilon(opts.conv_norm_epsilon())
                                                        .affine(opts.conv_norm_affine())
                                                        .masked(opts.conv_norm_masked())));
  ff2_norm = register_module("ff2_norm", std::make_shared<LayerNorm>(model_dim));
  ff2 = register_module("ff2", std::make_shared<ConformerFeedForward>(model_dim, ff_dim, opts));
  final_norm = register_module("final_norm", std::make_shared<LayerNorm>(model_dim));
}

Tensor ConformerBlock::forward(const Tensor& input, const ir::Dim& axis,
                               std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    Tensor h = residual(x, ff1->forward(ff1_norm->forward(x, loc), loc), dropout_,
                        dropout_broadcast_, 0.5, loc);
    const Tensor att_in = att_norm->forward(h, loc);
    h = residual(h,
                 rel_pos_att ? rel_pos_att->forward(att_in, axis, loc)
                             : self_att->forward(att_in, axis, loc),
                 dropout_, dropout_broadcast_, 1.0, loc);
    h = residual(h, conv->forward(conv_norm->forward(h, loc), axis, loc), dropout_,
                 dropout_broadcast_, 1.0, loc);
    h = residual(h, ff2->forward(ff2_norm->forward(h, loc), loc), dropout_, dropout_broadcast_, 0.5,
                 loc);
    return final_norm->forward(h, loc);
  });
}

ConformerFrontend::ConformerFrontend(ir::Dim in_dim, ir::Dim model_dim,
                                     const ConformerOptions& opts)
    : Module("conformer_frontend"),
      in_dim_(in_dim),
      feat_(ir::Dim::spatial(in_dim.name() + "_spatial", in_dim.size().value_or(1))),
      chan0_(ir::Dim::feature("in_channels", 1)),
      pooled_(windowed_dim(feat_, 2, 2)),
      merged_(ir::Dim::feature("frontend_out",
                               pooled_.size().value_or(1) * opts.frontend_channels2())) {
  ir::Dim c1 = ir::Dim::feature("channels1", opts.frontend_channels1());
  ir::Dim c2 = ir::Dim::feature("channels2", opts.frontend_channels2());
  conv1 = register_module("conv1", std::make_shared<Conv2d>(Conv2dOptions(chan0_, c1, {3, 3})));
  conv2 = register_module(
      "conv2",
      std::make_shared<Conv2d>(Conv2dOptions(c1, c2, {3, 3}).stride({opts.time_stride(), 1})));
  linear = register_module(
      "linear", std::make_shared<Linear>(merged_, model_dim, opts.frontend_linear_bias()));
}

Tensor ConformerFrontend::forward(const Tensor& input, const ir::Dim& time,
                                  std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    check_input_dim(*this, x, in_dim_, "in_dim", ir::SourceLoc::from(loc));
    Tensor h = split_dims(x, in_dim_, {feat_, chan0_}, loc);
    h = swish(conv1->forward(h, time, feat_, loc), loc);
    h = pool(h, "max", {feat_}, {2}, {2}, "same", {pooled_}, loc);
    h = swish(conv2->forward(h, time, pooled_, loc), loc);
    h = merge_dims(h, {pooled_, conv2->out_dim()}, merged_, loc);
    return linear->forward(h, loc);
  });
}

ConformerEncoder::ConformerEncoder(ir::Dim in_dim, ir::Dim model_dim, ir::Dim ff_dim,
                                   const ConformerOptions& opts)
    : Module("conformer_encoder"),
      dropout_(opts.dropout()),
      dropout_broadcast_(opts.dropout_broadcast()) {
  frontend =
      register_module("frontend", std::make_shared<ConformerFrontend>(in_dim, model_dim, opts));
  layers = register_module("layers", std::make_shared<ModuleList>());
  for (int64_t i = 0; i < opts.num_layers(); ++i) {
    auto block = std::make_shared<ConformerBlock>(model_dim, ff_dim, opts);
    if (opts.gradient_checkpoint()) checkpoint(*block);
    layers->append(block);
  }
}

Tensor ConformerEncoder::forward(const Tensor& input, const ir::Dim& time,
                                 std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    Tensor h = drop(frontend->forward(x, time, loc), dropout_, dropout_broadcast_, loc);
    const ir::Dim t = out_axis(time);
    for (size_t i = 0; i < layers->size(); ++i)
      h = layers->at<ConformerBlock>(i)->forward(h, t, loc);
    return h;
  });
}

}  // namespace retc::nn
