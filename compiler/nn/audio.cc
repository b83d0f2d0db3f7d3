#include "compiler/nn/audio.h"

#include "absl/strings/str_cat.h"
#include "compiler/nn/builder.h"
#include "compiler/nn/error.h"

namespace retc::nn {
namespace {

using ir::Dim;

// Whole numbers: floor of a non-negative float (a cast truncates).
Tensor floor_nonneg(const Tensor& x, std::source_location loc) {
  return cast(cast(x, ir::DType::kInt32, loc), ir::DType::kFloat32, loc);
}

Tensor c(Builder& b, double v, std::source_location loc) { return constant(b, v, {}, loc); }

// Masks along `axis` of size `len` ([B] float, or a scalar): per sequence
// between min_num and max_num ([B] or scalars, whole numbers; max_num at
// most |slots|) of them, each 1 to max_width wide, starting uniformly within
// the length. `positions`: 0, 1, ... along the axis (float32).
RandomMasks random_masks(Builder& b, const Tensor& like, const Tensor& len, const Tensor& positions,
                         const Dim& slots, const Tensor& min_num, const Tensor& max_num,
                         int64_t max_width, std::source_location loc) {
  RandomMasks m;
  const Dim batch = Dim::batch();
  Tensor u = random_uniform(b, {batch}, 0.0, 1.0, {like}, loc);
  m.num = floor_nonneg(min_num + u * (max_num - min_num + c(b, 1.0, loc)), loc);
  m.start = floor_nonneg(random_uniform(b, {batch, slots}, 0.0, 1.0, {like}, loc) * len, loc);
  m.width = floor_nonneg(random_uniform(b, {batch, slots}, 0.0, 1.0, {like}, loc) *
                             c(b, static_cast<double>(max_width), loc),
                         loc) +
            c(b, 1.0, loc);
  Tensor slot = cast(range(b, slots, loc), ir::DType::kFloat32, loc);
  Tensor in_slot = logical_and(logical_and(compare(positions, m.start, "greater_equal", loc),
                                           compare(positions, m.start + m.width, "less", loc), loc),
                               compare(slot, m.num, "less", loc), loc);
  Tensor covered = reduce(cast(in_slot, ir::DType::kFloat32, loc), "max", {slots}, loc);
  m.mask = compare(covered, c(b, 0.5, loc), "greater", loc);
  return m;
}

}  // namespace

SpecAugmentMasks specaugment_masks(const Tensor& x, const Dim& time, const Dim& feature,
                                   const SpecAugmentOptions& opts, std::source_location loc) {
  Builder& b = x.builder();
  const std::optional<int64_t> n_features = feature.size();
  if (!n_features)
    fail(ir::SourceLoc::from(loc),
         absl::StrCat("specaugment: the feature dim ", feature.describe(), " must be static"));
  const int64_t feature_width =
      opts.max_feature_mask_width > 0 ? opts.max_feature_mask_width : *n_features / 5;
  if (opts.max_time_mask_width < 1 || opts.frames_per_time_mask < 1 || opts.max_time_masks < 1 ||
      feature_width < 1) {
    fail(ir::SourceLoc::from(loc),
         absl::StrCat("specaugment: mask widths, frames_per_time_mask and max_time_masks "
                      "must be at least 1 (feature mask width ",
                      feature_width, " for ", feature.describe(), ")"));
  }
  // The schedule's flags f0, f1, f2 (float32 scalars 0 or 1).
  Tensor f[3];
  Tensor step = cast(global_train_step(b, loc), ir::DType::kFloat32, loc);
  for (int i = 0; i < 3; ++i) {
    f[i] = opts.step_dependent ? cast(compare(step, c(b, static_cast<double>(opts.steps[i]), loc),
                                              "greater_equal", loc),
                                      ir::DType::kFloat32, loc)
                               : c(b, 1.0, loc);
  }
  SpecAugmentMasks out;
  {
    Tensor len = cast(length(x, time, loc), ir::DType::kFloat32, loc);
    const Dim slots = Dim::spatial("specaug_time_slots", opts.max_time_masks);
    Tensor bound = c(b, static_cast<double>(opts.max_time_masks), loc);
    Tensor per_len =
        maximum(floor_nonneg(len / c(b, static_cast<double>(opts.frames_per_time_mask), loc), loc),
                c(b, 2.0, loc), loc);
    Tensor min_num = minimum(minimum(f[1] + f[2], len, loc), bound, loc);
    Tensor max_num =
        minimum(minimum(per_len * (f[0] + f[1] + f[2] * c(b, 2.0, loc)), len, loc), bound, loc);
    Tensor positions = cast(range_in_axis(x, time, loc), ir::DType::kFloat32, loc);
    out.time =
        random_masks(b, x, len, positions, slots, min_num, max_num, opts.max_time_mask_width, loc);
  }
  {
    const Dim slots = Dim::spatial("specaug_feature_slots", 5);
    Tensor len = c(b, static_cast<double>(*n_features), loc);
    Tensor positions = cast(range(b, feature, loc), ir::DType::kFloat32, loc);
    Tensor min_num = f[1] + f[2];
    Tensor max_num = f[0] * c(b, 2.0, loc) + f[1] + f[2] * c(b, 2.0, loc);
    out.feature = random_masks(b, x, len, positions, slots, min_num, max_num, feature_width, loc);
  }
  return out;
}

Tensor apply_masks(const Tensor& x, const SpecAugmentMasks& masks, std::source_location loc) {
  Tensor zero = constant(x.builder(), 0.0, {}, loc);
  return where(logical_or(masks.time.mask, masks.feature.mask, loc), zero, x, loc);
}

Tensor specaugment(const Tensor& x, const Dim& time, const Dim& feature,
                   const SpecAugmentOptions& opts, std::source_location loc) {
  auto masked = [&] { return apply_masks(x, specaugment_masks(x, time, feature, opts, loc), loc); };
  if (!opts.only_in_training) return masked();
  return cond(
      train_flag(x.builder(), loc), masked, [&] { return x; }, loc);
}

}  // namespace retc::nn
