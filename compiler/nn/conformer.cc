#include "compiler/nn/conformer.h"

#include <algorithm>

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

namespace {

// The block's self-attention: SelfAttention (Shaw's relative positions up to
// rel_pos_clipping, or none) or, with rel_pos_xl, RelPosSelfAttention.
void make_self_attention(Module& m, const std::string& name, const ir::Dim& model_dim,
                         const ConformerOptions& opts, std::shared_ptr<SelfAttention>& att,
                         std::shared_ptr<RelPosSelfAttention>& rel_pos_att) {
  if (opts.rel_pos_xl()) {
    rel_pos_att = m.register_module(
        name, std::make_shared<RelPosSelfAttention>(
                  RelPosSelfAttentionOptions(model_dim, model_dim, model_dim, opts.num_heads())
                      .att_dropout(opts.att_dropout())
                      .rel_pos_dropout(opts.rel_pos_dropout())
                      .qkv_bias(opts.att_qkv_bias())
                      .proj_bias(opts.att_proj_bias())));
  } else {
    att = m.register_module(
        name, std::make_shared<SelfAttention>(
                  SelfAttentionOptions(model_dim, model_dim, model_dim, opts.num_heads())
                      .rel_pos_clipping(opts.rel_pos_clipping())
                      .rel_pos_dropout(opts.rel_pos_dropout())
                      .att_dropout(opts.att_dropout())
                      .qkv_bias(opts.att_qkv_bias())
                      .proj_bias(opts.att_proj_bias())));
  }
}

Tensor attend(const std::shared_ptr<SelfAttention>& att,
              const std::shared_ptr<RelPosSelfAttention>& rel_pos_att, const Tensor& x,
              const ir::Dim& axis, std::source_location loc) {
  return rel_pos_att ? rel_pos_att->forward(x, axis, loc) : att->forward(x, axis, loc);
}

// The feed-forward modules' options: their dropout ff_dropout where set.
ConformerOptions ff_options(const ConformerOptions& opts) {
  return ConformerOptions(opts).dropout(opts.ff_dropout().value_or(opts.dropout()));
}

}  // namespace

ConformerBlock::ConformerBlock(ir::Dim model_dim, ir::Dim ff_dim, const ConformerOptions& opts)
    : Module("conformer_block"), dropout_broadcast_(opts.dropout_broadcast()) {
  const std::vector<std::string>& kinds = opts.block_modules();
  const int64_t num_ff = std::count(kinds.begin(), kinds.end(), "ff");
  if (kinds.empty()) reject(absl::StrCat(describe(), ": block_modules is empty"));
  if (!opts.block_scales().empty() && opts.block_scales().size() != kinds.size()) {
    reject(absl::StrCat(describe(), ": block_scales has ", opts.block_scales().size(),
                        " entries for ", kinds.size(), " block_modules"));
  }
  int count[3] = {0, 0, 0};  // ff, mhsa, conv so far
  for (size_t i = 0; i < kinds.size(); ++i) {
    const std::string& kind = kinds[i];
    Branch br;
    br.scale = opts.block_scales().size() == kinds.size()
                   ? opts.block_scales()[i]
                   : (kind == "ff" && num_ff >= 2 ? 0.5 : 1.0);
    if (kind == "ff") {
      const std::string n = absl::StrCat("ff", ++count[0]);
      br.norm = register_module(n + "_norm", std::make_shared<LayerNorm>(model_dim));
      br.ff = register_module(
          n, std::make_shared<ConformerFeedForward>(model_dim, ff_dim, ff_options(opts)));
      br.dropout = opts.ff_dropout().value_or(opts.dropout());
      if (count[0] == 1) ff1_norm = br.norm, ff1 = br.ff;
      if (count[0] == 2) ff2_norm = br.norm, ff2 = br.ff;
    } else if (kind == "mhsa") {
      const std::string k = ++count[1] == 1 ? "" : absl::StrCat(count[1]);
      br.norm =
          register_module(absl::StrCat("att", k, "_norm"), std::make_shared<LayerNorm>(model_dim));
      make_self_attention(*this, "self_att" + k, model_dim, opts, br.att, br.rel_pos_att);
      br.dropout = opts.mhsa_dropout().value_or(opts.dropout());
      if (count[1] == 1) att_norm = br.norm, self_att = br.att, rel_pos_att = br.rel_pos_att;
    } else if (kind == "conv") {
      const std::string k = ++count[2] == 1 ? "" : absl::StrCat(count[2]);
      br.norm =
          register_module(absl::StrCat("conv", k, "_norm"), std::make_shared<LayerNorm>(model_dim));
      br.conv = register_module(
          "conv" + k, std::make_shared<ConformerConvModule>(model_dim, opts.conv_kernel(),
                                                            BatchNormOptions()
                                                                .epsilon(opts.conv_norm_epsilon())
                                                                .momentum(opts.conv_norm_momentum())
                                                                .affine(opts.conv_norm_affine())
                                                                .masked(opts.conv_norm_masked())));
      br.dropout = opts.conv_dropout().value_or(opts.dropout());
      if (count[2] == 1) conv_norm = br.norm, conv = br.conv;
    } else {
      reject(absl::StrCat(describe(), ": block_modules entry \"", kind,
                          "\" is not \"ff\", \"mhsa\" or \"conv\""));
      continue;
    }
    branches_.push_back(std::move(br));
  }
  final_norm = register_module("final_norm", std::make_shared<LayerNorm>(model_dim));
}

Tensor ConformerBlock::forward(const Tensor& input, const ir::Dim& axis,
                               std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    Tensor h = x;
    for (const Branch& br : branches_) {
      const Tensor in = br.norm->forward(h, loc);
      const Tensor out = br.ff     ? br.ff->forward(in, loc)
                         : br.conv ? br.conv->forward(in, axis, loc)
                                   : attend(br.att, br.rel_pos_att, in, axis, loc);
      h = residual(h, out, br.dropout, dropout_broadcast_, br.scale, loc);
    }
    return final_norm->forward(h, loc);
  });
}

ConvGatedFeedForward::ConvGatedFeedForward(ir::Dim model_dim, ir::Dim ff_dim, int64_t kernel_size,
                                           const ConformerOptions& opts)
    : Module("conv_gated_ff"),
      ff_dim_(ff_dim),
      gated_dim_(2 * ff_dim),
      dropout_(opts.dropout()),
      dropout_broadcast_(opts.dropout_broadcast()) {
  linear_ff = register_module("linear_ff", std::make_shared<Linear>(model_dim, gated_dim_));
  norm = register_module("norm", std::make_shared<LayerNorm>(ff_dim));
  conv = register_module(
      "conv", std::make_shared<Conv1d>(
                  Conv1dOptions(ff_dim, ff_dim, kernel_size).groups(ff_dim.size().value_or(1))));
  linear_out = register_module("linear_out", std::make_shared<Linear>(ff_dim, model_dim));
}

Tensor ConvGatedFeedForward::forward(const Tensor& input, const ir::Dim& axis,
                                     std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    Tensor h = activation(linear_ff->forward(x, loc), "gelu", loc);
    std::vector<Tensor> halves = split(h, gated_dim_, {ff_dim_, ff_dim_}, loc);
    Tensor gate = conv->forward(norm->forward(halves[0], loc), axis, loc);
    h = drop(mul(gate, halves[1], loc), dropout_, dropout_broadcast_, loc);
    return linear_out->forward(h, loc);
  });
}

BranchMerge::BranchMerge(ir::Dim model_dim, int64_t kernel_size)
    : Module("branch_merge"), model_dim_(model_dim), concat_dim_(model_dim + model_dim) {
  depthwise_conv =
      register_module("depthwise_conv",
                      std::make_shared<Conv1d>(Conv1dOptions(concat_dim_, concat_dim_, kernel_size)
                                                   .groups(concat_dim_.size().value_or(1))));
  proj = register_module("proj", std::make_shared<Linear>(concat_dim_, model_dim));
}

Tensor BranchMerge::forward(const Tensor& a, const Tensor& b, const ir::Dim& axis,
                            std::source_location loc) const {
  const Tensor c = concat(a, model_dim_, b, model_dim_, loc);  // over concat_dim_
  return proj->forward(add(c, depthwise_conv->forward(c, axis, loc), loc), loc);
}

EBranchformerBlock::EBranchformerBlock(ir::Dim model_dim, ir::Dim ff_dim, ir::Dim cgmlp_dim,
                                       const ConformerOptions& opts)
    : Module("e_branchformer_block"),
      dropout_(opts.dropout()),
      dropout_broadcast_(opts.dropout_broadcast()) {
  ff1_norm = register_module("ff1_norm", std::make_shared<LayerNorm>(model_dim));
  ff1 = register_module("ff1", std::make_shared<ConformerFeedForward>(model_dim, ff_dim, opts));
  att_norm = register_module("att_norm", std::make_shared<LayerNorm>(model_dim));
  make_self_attention(*this, "self_att", model_dim, opts, self_att, rel_pos_att);
  cgmlp_norm = register_module("cgmlp_norm", std::make_shared<LayerNorm>(model_dim));
  cgmlp = register_module("cgmlp", std::make_shared<ConvGatedFeedForward>(
                                       model_dim, cgmlp_dim, opts.conv_kernel(), opts));
  merge = register_module("merge", std::make_shared<BranchMerge>(model_dim, opts.merge_kernel()));
  ff2_norm = register_module("ff2_norm", std::make_shared<LayerNorm>(model_dim));
  ff2 = register_module("ff2", std::make_shared<ConformerFeedForward>(model_dim, ff_dim, opts));
  final_norm = register_module("final_norm", std::make_shared<LayerNorm>(model_dim));
}

Tensor EBranchformerBlock::forward(const Tensor& input, const ir::Dim& axis,
                                   std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    Tensor h = residual(x, ff1->forward(ff1_norm->forward(x, loc), loc), dropout_,
                        dropout_broadcast_, 0.5, loc);
    Tensor a = drop(attend(self_att, rel_pos_att, att_norm->forward(h, loc), axis, loc), dropout_,
                    dropout_broadcast_, loc);
    Tensor b = drop(cgmlp->forward(cgmlp_norm->forward(h, loc), axis, loc), dropout_,
                    dropout_broadcast_, loc);
    h = residual(h, merge->forward(a, b, axis, loc), dropout_, dropout_broadcast_, 1.0, loc);
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
  if (opts.frontend() == "conv1d") {
    conv = register_module(
        "conv",
        std::make_shared<Conv1d>(
            Conv1dOptions(in_dim, model_dim, opts.frontend_kernel()).stride(opts.time_stride())));
    return;
  }
  if (opts.frontend() == "linear") {
    linear = register_module(
        "linear", std::make_shared<Linear>(in_dim, model_dim, opts.frontend_linear_bias()));
    return;
  }
  if (opts.frontend() != "vgg") {
    reject(absl::StrCat(describe(), ": frontend \"", opts.frontend(),
                        "\" is not \"vgg\", \"conv1d\" or \"linear\""));
  }
  ir::Dim c1 = ir::Dim::feature("channels1", opts.frontend_channels1());
  ir::Dim c2 = ir::Dim::feature("channels2", opts.frontend_channels2());
  conv1 = register_module("conv1", std::make_shared<Conv2d>(Conv2dOptions(chan0_, c1, {3, 3})));
  conv2 = register_module(
      "conv2",
      std::make_shared<Conv2d>(Conv2dOptions(c1, c2, {3, 3}).stride({opts.time_stride(), 1})));
  linear = register_module(
      "linear", std::make_shared<Linear>(merged_, model_dim, opts.frontend_linear_bias()));
}

ir::Dim ConformerFrontend::out_axis(const ir::Dim& time) const {
  if (conv) return conv->out_axis(time);
  return conv2 ? conv2->out_axis(time, 0) : time;
}

Tensor ConformerFrontend::forward(const Tensor& input, const ir::Dim& time,
                                  std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    check_input_dim(*this, x, in_dim_, "in_dim", ir::SourceLoc::from(loc));
    if (conv) return swish(conv->forward(x, time, loc), loc);
    if (!conv2) return linear->forward(x, loc);
    Tensor h = split_dims(x, in_dim_, {feat_, chan0_}, loc);
    h = swish(conv1->forward(h, time, feat_, loc), loc);
    h = pool(h, "max", {feat_}, {2}, {2}, "same", {pooled_}, loc);
    h = swish(conv2->forward(h, time, pooled_, loc), loc);
    h = merge_dims(h, {pooled_, conv2->out_dim()}, merged_, loc);
    return linear->forward(h, loc);
  });
}

ConformerEncoder::ConformerEncoder(ir::Dim in_dim, ir::Dim model_dim, ir::Dim ff_dim,
                                   const ConformerOptions& opts, std::optional<ir::Dim> cgmlp_dim)
    : Module("conformer_encoder"),
      dropout_(opts.dropout()),
      dropout_broadcast_(opts.dropout_broadcast()),
      e_branchformer_(cgmlp_dim.has_value()) {
  frontend =
      register_module("frontend", std::make_shared<ConformerFrontend>(in_dim, model_dim, opts));
  layers = register_module("layers", std::make_shared<ModuleList>());
  for (int64_t i = 0; i < opts.num_layers(); ++i) {
    std::shared_ptr<Module> block;
    if (cgmlp_dim) {
      block = std::make_shared<EBranchformerBlock>(model_dim, ff_dim, *cgmlp_dim, opts);
    } else {
      block = std::make_shared<ConformerBlock>(model_dim, ff_dim, opts);
    }
    if (opts.gradient_checkpoint()) checkpoint(*block);
    layers->append(block);
  }
}

Tensor ConformerEncoder::forward(const Tensor& input, const ir::Dim& time,
                                 std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    Tensor h = drop(frontend->forward(x, time, loc), dropout_, dropout_broadcast_, loc);
    const ir::Dim t = out_axis(time);
    for (size_t i = 0; i < layers->size(); ++i) {
      if (e_branchformer_) {
        h = layers->at<EBranchformerBlock>(i)->forward(h, t, loc);
      } else {
        h = layers->at<ConformerBlock>(i)->forward(h, t, loc);
      }
    }
    return h;
  });
}

}  // namespace retc::nn
