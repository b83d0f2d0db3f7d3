#include "compiler/nn/attention.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "compiler/nn/builder.h"
#include "compiler/nn/error.h"

namespace retc::nn {

SelfAttention::SelfAttention(const SelfAttentionOptions& o)
    : Module("self_attention"),
      in_dim_(o.in_dim()),
      key_dim_(o.key_dim()),
      value_dim_(o.value_dim()),
      num_heads_(o.num_heads()),
      causal_(o.causal()),
      clipping_(o.rel_pos_clipping()),
      att_dropout_(o.att_dropout()),
      heads_(ir::Dim::feature("heads", o.num_heads())),
      key_per_head_(ir::Dim::feature(
          "key_per_head", o.key_dim().size().value_or(0) / std::max<int64_t>(o.num_heads(), 1))),
      value_per_head_(ir::Dim::feature("value_per_head", o.value_dim().size().value_or(0) /
                                                             std::max<int64_t>(o.num_heads(), 1))),
      qkv_per_head_(ir::Dim::feature(
          "qkv_per_head", (2 * o.key_dim().size().value_or(0) + o.value_dim().size().value_or(0)) /
                              std::max<int64_t>(o.num_heads(), 1))),
      cached_(ir::Dim::spatial("cached_frames")) {
  const ir::Dim& in_dim = in_dim_;
  const ir::Dim& key_dim = key_dim_;
  const ir::Dim& value_dim = value_dim_;
  const int64_t num_heads = num_heads_;
  qkv_ = register_parameter("qkv", {in_dim, 2 * key_dim + value_dim}, ir::ParamKind::kWeight);
  if (clipping_ > 0) {
    rel_pos_ =
        register_parameter("rel_pos",
                           {ir::Dim::spatial("rel_offsets", 2 * clipping_ + 1),
                            ir::Dim::feature("key_per_head", key_dim.size().value_or(0) /
                                                                 std::max<int64_t>(num_heads, 1))},
                           ir::ParamKind::kWeight);
  }
  proj = register_module(
      "proj", std::make_shared<Linear>(value_dim, o.out_dim().value_or(in_dim), o.proj_bias()));
}

Tensor SelfAttention::forward(const Tensor& input, const ir::Dim& axis,
                              std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    ir::SourceLoc l = ir::SourceLoc::from(loc);
    check_input_dim(*this, x, in_dim_, "in_dim", l);
    Builder& b = x.builder();
    Tensor rel_pos;
    if (clipping_ > 0) rel_pos = b.param(rel_pos_);
    Tensor att = fused_self_attention(
        x, b.param(qkv_), clipping_ > 0 ? &rel_pos : nullptr, axis,
        {num_heads_, key_dim_, value_dim_, causal_, clipping_, att_dropout_}, loc);
    return proj->forward(att, loc);
  });
}

Tensor SelfAttention::step(const Tensor& input, Loop& loop, std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    ir::SourceLoc l = ir::SourceLoc::from(loc);
    check_input_dim(*this, x, in_dim_, "in_dim", l);
    if (clipping_ > 0) {
      fail(l, absl::StrCat(describe(),
                           ".step: relative positions (rel_pos_clipping) are not stepwise yet"));
    }
    Builder& b = x.builder();
    const int64_t kph = *key_per_head_.size();
    Tensor qkv = dot(x, b.param(qkv_), {in_dim_}, loc);
    qkv = split_dims(qkv, qkv_.dims()[1], {heads_, qkv_per_head_}, loc);
    const double scale = 1.0 / std::sqrt(static_cast<double>(kph));
    Tensor q =
        mul(slice(qkv, qkv_per_head_, 0, key_per_head_, loc), constant(b, scale, {}, loc), loc);
    Tensor k = loop.cum_concat(slice(qkv, qkv_per_head_, kph, key_per_head_, loc), cached_, loc);
    Tensor v =
        loop.cum_concat(slice(qkv, qkv_per_head_, 2 * kph, value_per_head_, loc), cached_, loc);
    Tensor weights = softmax(dot(q, k, {key_per_head_}, loc), cached_, loc);
    if (att_dropout_ != 0.0) weights = dropout(weights, att_dropout_, {}, loc);
    Tensor att = dot(weights, v, {cached_}, loc);
    return proj->forward(merge_dims(att, {heads_, value_per_head_}, value_dim_, loc), loc);
  });
}

CrossAttention::CrossAttention(ir::Dim query_dim, ir::Dim memory_dim, ir::Dim key_dim,
                               ir::Dim value_dim, int64_t num_heads, double att_dropout)
    : Module("cross_attention"),
      key_dim_(key_dim),
      value_dim_(value_dim),
      heads_(ir::Dim::feature("heads", num_heads)),
      key_per_head_(ir::Dim::feature("key_per_head", key_dim.size().value_or(0) / num_heads)),
      value_per_head_(ir::Dim::feature("value_per_head", value_dim.size().value_or(0) / num_heads)),
      att_dropout_(att_dropout) {
  query = register_module("query", std::make_shared<Linear>(query_dim, key_dim, false));
  key = register_module("key", std::make_shared<Linear>(memory_dim, key_dim, false));
  value = register_module("value", std::make_shared<Linear>(memory_dim, value_dim, false));
  proj = register_module("proj", std::make_shared<Linear>(value_dim, query_dim));
}

Tensor CrossAttention::forward(const Tensor& input, const Tensor& memory,
                               const ir::Dim& memory_axis, std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    ir::SourceLoc l = ir::SourceLoc::from(loc);
    if (!memory_axis.is_dynamic() || ir::index_of(memory.dims(), memory_axis) < 0) {
      fail(l, absl::StrCat(describe(), ": the memory axis ", memory_axis.describe(),
                           " must be a dynamic axis of the memory ", ir::describe(memory.dims())));
    }
    if (ir::index_of(x.dims(), memory_axis) >= 0) {
      fail(l, absl::StrCat(describe(), ": the queries ", ir::describe(x.dims()),
                           " must not have the memory axis ", memory_axis.describe()));
    }
    Builder& b = x.builder();
    const double scale = 1.0 / std::sqrt(static_cast<double>(*key_per_head_.size()));
    Tensor q = split_dims(query->forward(x, loc), key_dim_, {heads_, key_per_head_}, loc);
    q = mul(q, constant(b, scale, {}, loc), loc);
    Tensor k = split_dims(key->forward(memory, loc), key_dim_, {heads_, key_per_head_}, loc);
    Tensor v = split_dims(value->forward(memory, loc), value_dim_, {heads_, value_per_head_}, loc);
    Tensor weights = softmax(dot(q, k, {key_per_head_}, loc), memory_axis, loc);
    if (att_dropout_ != 0.0) weights = dropout(weights, att_dropout_, {}, loc);
    Tensor att = dot(weights, v, {memory_axis}, loc);
    return proj->forward(merge_dims(att, {heads_, value_per_head_}, value_dim_, loc), loc);
  });
}

}  // namespace retc::nn
