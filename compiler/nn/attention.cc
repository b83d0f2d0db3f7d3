#include "compiler/nn/attention.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "compiler/nn/builder.h"
#include "compiler/nn/error.h"

namespace retc::nn {
namespace {

// Heads that split the key and value dims evenly, and a dropout rate in
// [0, 1): else the module is rejected (Module::reject), at the user's line.
void check_heads(Module& m, int64_t heads, const ir::Dim& key, const ir::Dim& value,
                 double att_dropout) {
  if (heads < 1) {
    m.reject(absl::StrCat(m.describe(), ": num_heads must be at least 1, got ", heads));
    return;
  }
  for (const ir::Dim* d : {&key, &value}) {
    if (d->size() && *d->size() % heads != 0) {
      m.reject(absl::StrCat(m.describe(), ": ", heads, " heads do not divide the ",
                            d == &key ? "key" : "value", " dim ", d->describe()));
    }
  }
  if (!(att_dropout >= 0 && att_dropout < 1))
    m.reject(absl::StrCat(m.describe(), ": att_dropout must be in [0, 1), got ", att_dropout));
}

// A dim of `total` / `heads` (0 while either is unknown or invalid: the
// module rejects those in check_heads).
ir::Dim per_head(const char* name, const ir::Dim& total, int64_t heads) {
  return ir::Dim::feature(name, total.size().value_or(0) / std::max<int64_t>(heads, 1));
}

// The rows of a learned relative-position table [2*clipping + 1, dim] for
// the (float) offsets j - i, clipped to +-clipping: row offset + clipping.
Tensor table_rows(const Tensor& table, int64_t clipping, const Tensor& offset,
                  std::source_location loc) {
  Builder& b = table.builder();
  const ir::Dim& offsets = table.dims()[0];
  const double c = static_cast<double>(clipping);
  Tensor clipped =
      minimum(maximum(offset, constant(b, -c, {}, loc), loc), constant(b, c, {}, loc), loc);
  Tensor index = as_indices(
      cast(add(clipped, constant(b, c, {}, loc), loc), ir::DType::kInt32, loc), offsets, loc);
  return gather(table, index, offsets, loc);
}

// Multi-head attention of queries q [..., heads, key/heads] over keys k and
// values v [..., keys, heads, .../heads] along `keys`: q scaled by
// 1/sqrt(key/heads), softmax of q . k over `keys` (within its lengths; with
// `causal_axis`, q's axis, keys after the query's frame masked too), dropout
// on the weights, the values' mix with its heads merged into `value_dim`.
// `key_shift` [..., keys, key/heads]: added to the keys in the energies (the
// relative positions of RETURNN's fused layer, its key_shift).
Tensor attend(const Tensor& q, const Tensor& k, const Tensor& v, const ir::Dim& keys,
              const ir::Dim& key_per_head, const ir::Dim& heads, const ir::Dim& value_per_head,
              const ir::Dim& value_dim, double att_dropout, const ir::Dim* causal_axis,
              std::source_location loc, const Tensor* key_shift = nullptr) {
  Builder& b = q.builder();
  const double scale = 1.0 / std::sqrt(static_cast<double>(*key_per_head.size()));
  Tensor scaled = mul(q, constant(b, scale, {}, loc), loc);
  Tensor energies = dot(scaled, k, {key_per_head}, loc);
  if (key_shift) energies = add(energies, dot(scaled, *key_shift, {key_per_head}, loc), loc);
  if (causal_axis) {
    Tensor future =
        compare(range_in_axis(k, keys, loc), range_in_axis(q, *causal_axis, loc), "greater", loc);
    energies = where(future, constant(b, -1e30, {}, loc), energies, loc);
  }
  Tensor weights = softmax(energies, keys, loc);
  if (att_dropout != 0.0) weights = dropout(weights, att_dropout, {}, loc);
  return merge_dims(dot(weights, v, {keys}, loc), {heads, value_per_head}, value_dim, loc);
}

}  // namespace

SelfAttention::SelfAttention(const SelfAttentionOptions& o)
    : Module("self_attention"),
      in_dim_(o.in_dim()),
      key_dim_(o.key_dim()),
      value_dim_(o.value_dim()),
      num_heads_(o.num_heads()),
      causal_(o.causal()),
      rotary_(o.rotary()),
      clipping_(o.rel_pos_clipping()),
      att_dropout_(o.att_dropout()),
      heads_(ir::Dim::feature("heads", o.num_heads())),
      key_per_head_(per_head("key_per_head", o.key_dim(), o.num_heads())),
      value_per_head_(per_head("value_per_head", o.value_dim(), o.num_heads())),
      qkv_per_head_(ir::Dim::feature(
          "qkv_per_head", (2 * o.key_dim().size().value_or(0) + o.value_dim().size().value_or(0)) /
                              std::max<int64_t>(o.num_heads(), 1))),
      keys_(ir::Dim::spatial("keys")),
      cached_(ir::Dim::spatial("cached_frames")),
      rel_pos_dropout_(o.rel_pos_dropout()) {
  check_heads(*this, o.num_heads(), o.key_dim(), o.value_dim(), o.att_dropout());
  if (rel_pos_dropout_ != 0.0 && o.rel_pos_clipping() == 0)
    reject(absl::StrCat(describe(), ": rel_pos_dropout without rel_pos_clipping (no table)"));
  if (o.rel_pos_clipping() < 0) {
    reject(absl::StrCat(describe(), ": rel_pos_clipping must be at least 0, got ",
                        o.rel_pos_clipping()));
  }
  const ir::Dim& in_dim = in_dim_;
  const ir::Dim& key_dim = key_dim_;
  const ir::Dim& value_dim = value_dim_;
  const int64_t num_heads = num_heads_;
  qkv_ = register_parameter("qkv", {in_dim, 2 * key_dim + value_dim}, ir::ParamKind::kWeight);
  if (o.qkv_bias()) {
    if (clipping_ > 0)
      reject(absl::StrCat(describe(),
                          ": qkv_bias with rel_pos_clipping (RETURNN's fused layer "
                          "has no QKV bias; RelPosSelfAttention has one)"));
    qkv_bias_ = register_parameter("qkv_bias", {qkv_.dims()[1]}, ir::ParamKind::kBias);
  }
  if (rotary_ && (clipping_ > 0 || key_per_head_.size().value_or(1) % 2 != 0))
    reject(absl::StrCat(describe(), ": rotary positions need an even key dim per head (got ",
                        key_per_head_.size().value_or(0),
                        ") and no rel_pos_clipping (one kind of positions)"));
  if (clipping_ > 0) {
    rel_pos_ = register_parameter("rel_pos",
                                  {ir::Dim::spatial("rel_offsets", 2 * clipping_ + 1),
                                   per_head("key_per_head", key_dim, num_heads)},
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
    if (qkv_bias_.defined() || rotary_) {  // from primitive ops: the fused layer has neither
      if (!axis.is_dynamic() || ir::index_of(x.dims(), axis) < 0)
        fail(l, absl::StrCat(describe(), ": the axis ", axis.describe(),
                             " must be a dynamic axis of ", ir::describe(x.dims())));
      const int64_t kph = *key_per_head_.size();
      Tensor h = project_qkv(x, loc);
      Tensor q = slice(h, qkv_per_head_, 0, key_per_head_, loc);
      Tensor k = slice(h, qkv_per_head_, kph, key_per_head_, loc);
      if (rotary_) {
        Tensor pos = cast(range_in_axis(x, axis, loc), ir::DType::kFloat32, loc);
        q = rotate(q, pos, loc);
        k = rotate(k, pos, loc);
      }
      k = replace_dim(k, axis, keys_, loc);
      Tensor v =
          replace_dim(slice(h, qkv_per_head_, 2 * kph, value_per_head_, loc), axis, keys_, loc);
      return proj->forward(attend(q, k, v, keys_, key_per_head_, heads_, value_per_head_,
                                  value_dim_, att_dropout_, causal_ ? &axis : nullptr, loc),
                           loc);
    }
    Builder& b = x.builder();
    Tensor rel_pos;
    if (clipping_ > 0) rel_pos = rel_pos_table(b, loc);
    Tensor att = fused_self_attention(
        x, b.param(qkv_), clipping_ > 0 ? &rel_pos : nullptr, axis,
        {num_heads_, key_dim_, value_dim_, causal_, clipping_, att_dropout_}, loc);
    return proj->forward(att, loc);
  });
}

Tensor SelfAttention::rel_pos_table(Builder& b, std::source_location loc) const {
  Tensor table = b.param(rel_pos_);
  return rel_pos_dropout_ != 0.0 ? dropout(table, rel_pos_dropout_, {}, loc) : table;
}

Tensor SelfAttention::step(const Tensor& input, Loop& loop, std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    ir::SourceLoc l = ir::SourceLoc::from(loc);
    check_input_dim(*this, x, in_dim_, "in_dim", l);
    const int64_t kph = *key_per_head_.size();
    Builder& b = x.builder();
    Tensor qkv = project_qkv(x, loc);
    Tensor q = slice(qkv, qkv_per_head_, 0, key_per_head_, loc);
    Tensor k = slice(qkv, qkv_per_head_, kph, key_per_head_, loc);
    // The frame's position (rotary or relative positions): a counter state of the loop.
    Tensor frame;
    if (rotary_ || clipping_ > 0) {
      frame = loop.state(constant(b, 0.0, {}, loc), {}, loc);
      loop.next(frame, add(frame, constant(b, 1.0, {}, loc), loc), loc);
    }
    if (rotary_) {
      q = rotate(q, frame, loc);
      k = rotate(k, frame, loc);
    }
    k = loop.cum_concat(k, cached_, loc);
    Tensor v =
        loop.cum_concat(slice(qkv, qkv_per_head_, 2 * kph, value_per_head_, loc), cached_, loc);
    Tensor key_shift;
    if (clipping_ > 0) {
      // Each cached key's offset to this frame, j - t (at most 0), clipped
      // to -clipping: its row of the learned table, as the whole-sequence
      // layer's relative_positional_encoding gives it.
      // (Clipped at +clipping too: on TF, the loop's cum_concat moved out of
      // the loop runs over all frames, those after the query masked later.)
      Tensor offset =
          sub(cast(range_in_axis(k, cached_, loc), ir::DType::kFloat32, loc), frame, loc);
      key_shift = replace_dim(table_rows(rel_pos_table(b, loc), clipping_, offset, loc),
                              rel_pos_.dims()[1], key_per_head_, loc);
    }
    return proj->forward(
        attend(q, k, v, cached_, key_per_head_, heads_, value_per_head_, value_dim_, att_dropout_,
               nullptr, loc, clipping_ > 0 ? &key_shift : nullptr),
        loc);
  });
}

std::pair<Tensor, AttentionCache> SelfAttention::forward_with_cache(
    const Tensor& input, const ir::Dim& axis, const AttentionCache& cache,
    std::source_location loc) const {
  AttentionCache next = cache;
  Tensor y = call(input, loc, [&](const Tensor& x) {
    ir::SourceLoc l = ir::SourceLoc::from(loc);
    check_input_dim(*this, x, in_dim_, "in_dim", l);
    if (!axis.is_dynamic() || ir::index_of(x.dims(), axis) < 0)
      fail(l, absl::StrCat(describe(), ": the axis ", axis.describe(),
                           " must be a dynamic axis of ", ir::describe(x.dims())));
    Builder& b = x.builder();
    const int64_t kph = *key_per_head_.size();
    const Tensor zero = constant(b, 0.0, {}, loc);
    // Positions: this call's frames follow the cached ones in each sequence.
    const Tensor start = cache.frames.defined() ? cache.frames : zero;
    Tensor pos = add(cast(range_in_axis(x, axis, loc), ir::DType::kFloat32, loc), start, loc);
    Tensor h = project_qkv(x, loc);
    Tensor q = slice(h, qkv_per_head_, 0, key_per_head_, loc);
    Tensor k = slice(h, qkv_per_head_, kph, key_per_head_, loc);
    if (rotary_) {
      q = rotate(q, pos, loc);
      k = rotate(k, pos, loc);
    }
    // This call's keys and values as the cache's newest segment, over a dim
    // of its own (the queries keep `axis`, which an earlier call may share).
    const ir::Dim frames = ir::Dim::spatial("cached_frames");
    next.segments.push_back(
        {replace_dim(k, axis, frames, loc),
         replace_dim(slice(h, qkv_per_head_, 2 * kph, value_per_head_, loc), axis, frames, loc),
         frames, start});
    next.frames = add(start, cast(length(x, axis, loc), ir::DType::kFloat32, loc), loc);
    // One softmax over every segment's keys: each segment's energies, masked
    // past its lengths (and, in this call's, after the query with causal),
    // exp(e - m) with m the largest over all, each segment's share of the
    // normalizer and of the values' mix summed.
    const double scale = 1.0 / std::sqrt(static_cast<double>(kph));
    const Tensor scaled = mul(q, constant(b, scale, {}, loc), loc);
    const Tensor masked_value = constant(b, -1e30, {}, loc);
    std::vector<Tensor> energies;
    for (const AttentionCache::Segment& s : next.segments) {
      Tensor e = dot(scaled, s.keys, {key_per_head_}, loc);
      const Tensor j = range_in_axis(s.keys, s.frames, loc);
      if (clipping_ > 0) {
        // The key's position minus the query's, clipped: its table row added to the key.
        Tensor offset = sub(add(cast(j, ir::DType::kFloat32, loc), s.start, loc), pos, loc);
        Tensor shift = replace_dim(table_rows(rel_pos_table(b, loc), clipping_, offset, loc),
                                   rel_pos_.dims()[1], key_per_head_, loc);
        e = add(e, dot(scaled, shift, {key_per_head_}, loc), loc);
      }
      Tensor hidden = compare(j, length(s.keys, s.frames, loc), "greater_equal", loc);
      if (causal_ && s.frames == frames)
        hidden = logical_or(hidden, compare(j, range_in_axis(x, axis, loc), "greater", loc), loc);
      energies.push_back(where(hidden, masked_value, e, loc));
    }
    // (From the masked value up: a padded query of an empty sequence stays finite.)
    Tensor m = masked_value;
    for (size_t i = 0; i < energies.size(); ++i)
      m = maximum(m, reduce(energies[i], "max", {next.segments[i].frames}, loc), loc);
    m = stop_gradient(m, loc);
    Tensor norm, mix;
    for (size_t i = 0; i < energies.size(); ++i) {
      const AttentionCache::Segment& s = next.segments[i];
      Tensor w = activation(sub(energies[i], m, loc), "exp", loc);
      Tensor z = reduce(w, "sum", {s.frames}, loc);
      norm = norm.defined() ? add(norm, z, loc) : z;
      if (att_dropout_ != 0.0) w = dropout(w, att_dropout_, {}, loc);
      Tensor part = dot(w, s.values, {s.frames}, loc);
      mix = mix.defined() ? add(mix, part, loc) : part;
    }
    return proj->forward(
        merge_dims(div(mix, norm, loc), {heads_, value_per_head_}, value_dim_, loc), loc);
  });
  return {y, next};
}

Tensor SelfAttention::rotate(const Tensor& x, const Tensor& pos, std::source_location loc) const {
  Builder& b = x.builder();
  const int64_t kph = *key_per_head_.size();
  const ir::Dim half = ir::Dim::feature("rope_half", kph / 2),
                pair = ir::Dim::feature("rope_pair", 2);
  std::vector<Tensor> parts = unstack(split_dims(x, key_per_head_, {half, pair}, loc), pair, loc);
  // The angle of pair i: pos * 10000^(-2i / kph).
  Tensor freq = activation(
      mul(cast(range(b, half, loc), ir::DType::kFloat32, loc),
          constant(b, -2.0 * std::log(10000.0) / static_cast<double>(kph), {}, loc), loc),
      "exp", loc);
  Tensor angle = mul(pos, freq, loc);
  Tensor cos = activation(angle, "cos", loc), sin = activation(angle, "sin", loc);
  Tensor re = sub(mul(parts[0], cos, loc), mul(parts[1], sin, loc), loc);
  Tensor im = add(mul(parts[0], sin, loc), mul(parts[1], cos, loc), loc);
  return merge_dims(stack({re, im}, pair, loc), {half, pair}, key_per_head_, loc);
}

Tensor SelfAttention::project_qkv(const Tensor& x, std::source_location loc) const {
  Builder& b = x.builder();
  Tensor qkv = dot(x, b.param(qkv_), {in_dim_}, loc);
  if (qkv_bias_.defined()) qkv = add(qkv, b.param(qkv_bias_), loc);
  return split_dims(qkv, qkv_.dims()[1], {heads_, qkv_per_head_}, loc);
}

RelPosEncoding::RelPosEncoding(ir::Dim dim, int64_t clipping)
    : Module("rel_pos_encoding"), dim_(dim), clipping_(clipping) {
  if (clipping < 1)
    reject(absl::StrCat(describe(), ": clipping must be at least 1, got ", clipping));
  table_ = register_parameter(
      "table", {ir::Dim::spatial("rel_offsets", 2 * std::max<int64_t>(clipping, 1) + 1), dim},
      ir::ParamKind::kWeight);
}

Tensor RelPosEncoding::forward(const Tensor& query, const ir::Dim& query_axis, const Tensor& keys,
                               const ir::Dim& key_axis, std::source_location loc) const {
  Builder& b = query.builder();
  // j - i (exact in float32).
  Tensor offset = sub(cast(range_in_axis(keys, key_axis, loc), ir::DType::kFloat32, loc),
                      cast(range_in_axis(query, query_axis, loc), ir::DType::kFloat32, loc), loc);
  return table_rows(b.param(table_), clipping_, offset, loc);
}

Tensor sinusoidal_rel_pos_encoding(const Tensor& query, const ir::Dim& query_axis,
                                   const Tensor& keys, const ir::Dim& key_axis, const ir::Dim& dim,
                                   std::source_location loc) {
  Builder& b = query.builder();
  if (!dim.is_feature_like() || !dim.size() || *dim.size() % 2 != 0 || *dim.size() <= 0) {
    fail(ir::SourceLoc::from(loc),
         absl::StrCat("sinusoidal_rel_pos_encoding: the dim ", dim.describe(),
                      " must be a static feature dim of even size (sines, then cosines)"));
  }
  const int64_t half = *dim.size() / 2;
  const ir::Dim h = ir::Dim::feature(dim.name() + "_half", half);
  const ir::Dim h_sin = ir::Dim::feature(dim.name() + "_sin", half);
  const ir::Dim h_cos = ir::Dim::feature(dim.name() + "_cos", half);
  const double step = -2.0 * std::log(1e4) / static_cast<double>(*dim.size());
  Tensor freq = activation(
      mul(cast(range(b, h, loc), ir::DType::kFloat32, loc), constant(b, step, {}, loc), loc), "exp",
      loc);
  Tensor offset = sub(cast(range_in_axis(keys, key_axis, loc), ir::DType::kFloat32, loc),
                      cast(range_in_axis(query, query_axis, loc), ir::DType::kFloat32, loc), loc);
  Tensor angle = mul(offset, freq, loc);  // [query, key, half]
  Tensor enc = concat(replace_dim(activation(angle, "sin", loc), h, h_sin, loc), h_sin,
                      replace_dim(activation(angle, "cos", loc), h, h_cos, loc), h_cos, loc);
  return replace_dim(enc, h_sin + h_cos, dim, loc);
}

RelPosSelfAttention::RelPosSelfAttention(const RelPosSelfAttentionOptions& o)
    : Module("rel_pos_self_attention"),
      in_dim_(o.in_dim()),
      key_dim_(o.key_dim()),
      value_dim_(o.value_dim()),
      heads_(ir::Dim::feature("heads", o.num_heads())),
      key_per_head_(per_head("key_per_head", o.key_dim(), o.num_heads())),
      key_per_head_k_(ir::Dim::feature("key_per_head_k", *key_per_head_.size())),
      value_per_head_(per_head("value_per_head", o.value_dim(), o.num_heads())),
      qkv_per_head_(
          ir::Dim::feature("qkv_per_head", 2 * *key_per_head_.size() + *value_per_head_.size())),
      keys_(ir::Dim::spatial("keys")),
      pos_emb_(ir::Dim::feature("pos_emb", o.in_dim().size().value_or(0))),
      half_(ir::Dim::feature("pos_half", o.in_dim().size().value_or(0) / 2)),
      half_s_(ir::Dim::feature("pos_half_sin", *half_.size())),
      half_c_(ir::Dim::feature("pos_half_cos", *half_.size())),
      att_dropout_(o.att_dropout()),
      rel_pos_dropout_(o.rel_pos_dropout()) {
  check_heads(*this, o.num_heads(), o.key_dim(), o.value_dim(), o.att_dropout());
  if (rel_pos_dropout_ < 0.0 || rel_pos_dropout_ >= 1.0)
    reject(absl::StrCat(describe(), ": rel_pos_dropout ", rel_pos_dropout_,
                        " is not a dropout rate in [0, 1)"));
  qkv = register_module("qkv",
                        std::make_shared<Linear>(in_dim_, 2 * key_dim_ + value_dim_, o.qkv_bias()));
  // The encoding's own feature dim (of in_dim's size), so that the weight's
  // two axes stay apart when key_dim is in_dim (as in a Conformer).
  linear_pos = register_module("linear_pos", std::make_shared<Linear>(pos_emb_, key_dim_, false));
  pos_bias_u_ = register_parameter("pos_bias_u", {heads_, key_per_head_}, ir::ParamKind::kWeight);
  pos_bias_v_ = register_parameter("pos_bias_v", {heads_, key_per_head_}, ir::ParamKind::kWeight);
  proj = register_module(
      "proj", std::make_shared<Linear>(value_dim_, o.out_dim().value_or(in_dim_), o.proj_bias()));
}

Tensor RelPosSelfAttention::forward(const Tensor& input, const ir::Dim& axis,
                                    std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    ir::SourceLoc l = ir::SourceLoc::from(loc);
    check_input_dim(*this, x, in_dim_, "in_dim", l);
    if (!axis.is_dynamic() || ir::index_of(x.dims(), axis) < 0)
      fail(l, absl::StrCat(describe(), ": the axis ", axis.describe(),
                           " must be a dynamic axis of ", ir::describe(x.dims())));
    if (*in_dim_.size() % 2 != 0)
      fail(l, absl::StrCat(describe(), ": the in dim ", in_dim_.describe(),
                           " must be even (the sinusoidal encoding's halves)"));
    Builder& b = x.builder();
    Tensor h = split_dims(qkv->forward(x, loc), qkv->out_dim(), {heads_, qkv_per_head_}, loc);
    std::vector<Tensor> qkv_parts =
        split(h, qkv_per_head_, {key_per_head_, key_per_head_k_, value_per_head_}, loc);
    const Tensor& q = qkv_parts[0];
    // The keys and values along their own axis (the same lengths).
    Tensor k = replace_dim(replace_dim(qkv_parts[1], key_per_head_k_, key_per_head_, loc), axis,
                           keys_, loc);
    Tensor v = replace_dim(qkv_parts[2], axis, keys_, loc);
    Tensor content = dot(add(q, b.param(pos_bias_u_), loc), k, {key_per_head_}, loc);
    const double step = -2.0 * std::log(1e4) / static_cast<double>(*in_dim_.size());
    Tensor freq = activation(
        mul(cast(range(b, half_, loc), ir::DType::kFloat32, loc), constant(b, step, {}, loc), loc),
        "exp", loc);
    Tensor qv = add(q, b.param(pos_bias_v_), loc);
    Tensor position;
    if (rel_pos_dropout_ != 0.0) {
      // A table over each sequence's offsets -(n-1) .. n-1 (n = its length):
      // emb(r) = [sin(r w), cos(r w)], dropout, linear_pos; then the entry of
      // offset j - i for query i and key j (clamped for the padding frames,
      // which the softmax and the lengths mask).
      auto i32 = [&](double v) { return cast(constant(b, v, {}, loc), ir::DType::kInt32, loc); };
      const ir::Dim rel = ir::Dim::spatial("rel_pos");
      const Tensor n = length(k, keys_, loc);  // [B]
      const Tensor last = sub(n, i32(1.0), loc);
      const Tensor at = range_of_lengths(  // 2n - 1 offsets (none for an empty sequence)
          maximum(sub(mul(n, i32(2.0), loc), i32(1.0), loc), i32(0.0), loc), rel, loc);
      const Tensor offset = cast(sub(at, last, loc), ir::DType::kFloat32, loc);  // [B, rel]
      const Tensor ang = mul(offset, freq, loc);
      Tensor table = replace_dim(
          concat(replace_dim(activation(ang, "sin", loc), half_, half_s_, loc), half_s_,
                 replace_dim(activation(ang, "cos", loc), half_, half_c_, loc), half_c_, loc),
          half_s_ + half_c_, pos_emb_, loc);
      table = dropout(table, rel_pos_dropout_, {}, loc);
      const Tensor p =
          split_dims(linear_pos->forward(table, loc), key_dim_, {heads_, key_per_head_},
                     loc);                                 // [B, rel, heads, kph]
      const Tensor qp = dot(qv, p, {key_per_head_}, loc);  // [B, T, heads, rel]
      Tensor idx = add(sub(range_in_axis(k, keys_, loc), range_in_axis(x, axis, loc), loc), last,
                       loc);  // [B, keys, T]: j - i + n - 1
      idx = maximum(minimum(idx, mul(last, i32(2.0), loc), loc), i32(0.0), loc);
      position = gather(qp, as_indices(idx, rel, loc), rel, loc);
    } else {
      // linear_pos folded into the query, then
      // emb(j - i) . qw_i = sum_f sin(j w) A_i + cos(j w) B_i with
      // A = cos(i w) qw_sin + sin(i w) qw_cos, B = cos(i w) qw_cos - sin(i w) qw_sin.
      Tensor w = split_dims(b.param(linear_pos->weight()), key_dim_, {heads_, key_per_head_}, loc);
      Tensor qw = dot(qv, w, {key_per_head_}, loc);  // [.., heads, in]
      std::vector<Tensor> halves = split(qw, pos_emb_, {half_s_, half_c_}, loc);
      Tensor qw_s = replace_dim(halves[0], half_s_, half_, loc);
      Tensor qw_c = replace_dim(halves[1], half_c_, half_, loc);
      auto angle = [&](const Tensor& t, const ir::Dim& d) {
        return mul(cast(range_in_axis(t, d, loc), ir::DType::kFloat32, loc), freq, loc);
      };
      Tensor ang_q = angle(x, axis), ang_k = angle(k, keys_);
      Tensor sin_q = activation(ang_q, "sin", loc), cos_q = activation(ang_q, "cos", loc);
      Tensor a = add(mul(cos_q, qw_s, loc), mul(sin_q, qw_c, loc), loc);
      Tensor bm = sub(mul(cos_q, qw_c, loc), mul(sin_q, qw_s, loc), loc);
      position = add(dot(a, activation(ang_k, "sin", loc), {half_}, loc),
                     dot(bm, activation(ang_k, "cos", loc), {half_}, loc), loc);
    }
    const double scale = 1.0 / std::sqrt(static_cast<double>(*key_per_head_.size()));
    Tensor weights =
        softmax(mul(add(content, position, loc), constant(b, scale, {}, loc), loc), keys_, loc);
    if (att_dropout_ != 0.0) weights = dropout(weights, att_dropout_, {}, loc);
    Tensor att = dot(weights, v, {keys_}, loc);
    return proj->forward(merge_dims(att, {heads_, value_per_head_}, value_dim_, loc), loc);
  });
}

CrossAttention::CrossAttention(ir::Dim query_dim, ir::Dim memory_dim, ir::Dim key_dim,
                               ir::Dim value_dim, int64_t num_heads, double att_dropout)
    : CrossAttention(CrossAttentionOptions(query_dim, memory_dim, key_dim, value_dim, num_heads)
                         .att_dropout(att_dropout)) {}

CrossAttention::CrossAttention(const CrossAttentionOptions& o)
    : Module("cross_attention"),
      key_dim_(o.key_dim()),
      value_dim_(o.value_dim()),
      heads_(ir::Dim::feature("heads", o.num_heads())),
      key_per_head_(per_head("key_per_head", o.key_dim(), o.num_heads())),
      value_per_head_(per_head("value_per_head", o.value_dim(), o.num_heads())),
      kv_per_head_(
          ir::Dim::feature("kv_per_head", *key_per_head_.size() + *value_per_head_.size())),
      att_dropout_(o.att_dropout()) {
  check_heads(*this, o.num_heads(), o.key_dim(), o.value_dim(), o.att_dropout());
  query = register_module("query", std::make_shared<Linear>(o.query_dim(), key_dim_, o.qkv_bias()));
  if (o.fused_kv()) {
    kv = register_module(
        "kv", std::make_shared<Linear>(o.memory_dim(), key_dim_ + value_dim_, o.qkv_bias()));
  } else {
    key = register_module("key", std::make_shared<Linear>(o.memory_dim(), key_dim_, o.qkv_bias()));
    value = register_module("value",
                            std::make_shared<Linear>(o.memory_dim(), value_dim_, o.qkv_bias()));
  }
  proj =
      register_module("proj", std::make_shared<Linear>(value_dim_, o.query_dim(), o.proj_bias()));
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
    Tensor q = split_dims(query->forward(x, loc), key_dim_, {heads_, key_per_head_}, loc);
    Tensor k, v;
    if (kv) {
      Tensor h = split_dims(kv->forward(memory, loc), kv->out_dim(), {heads_, kv_per_head_}, loc);
      k = slice(h, kv_per_head_, 0, key_per_head_, loc);
      v = slice(h, kv_per_head_, *key_per_head_.size(), value_per_head_, loc);
    } else {
      k = split_dims(key->forward(memory, loc), key_dim_, {heads_, key_per_head_}, loc);
      v = split_dims(value->forward(memory, loc), value_dim_, {heads_, value_per_head_}, loc);
    }
    return proj->forward(attend(q, k, v, memory_axis, key_per_head_, heads_, value_per_head_,
                                value_dim_, att_dropout_, nullptr, loc),
                         loc);
  });
}

}  // namespace retc::nn
