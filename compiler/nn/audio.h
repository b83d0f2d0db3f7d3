// Audio front-end functions: SpecAugment (https://arxiv.org/abs/1904.08779)
// as RETURNN's own frontend has it (returnn/frontend/audio/specaugment.py) and
// the 2019 published RETURNN setups used it, composed of ordinary ops (fresh
// random numbers, comparisons against a range, where, the global train step).
//
//   nn::Tensor x = b.extern_data("data", {Dim::batch(), time, features});
//   x = nn::specaugment(x, time, features);   // masked in training only
//
// Each sequence gets a random number of time masks (blocks of frames set to
// 0) and of feature masks (blocks of feature channels set to 0). A schedule
// over the global train step makes them milder in the first steps: with
// steps {s0, s1, s2} and the flags f0 = (step >= s0), f1, f2,
//   time masks:    between min(f1 + f2, T) and
//                  min(max(T / frames_per_time_mask, 2) * (f0 + f1 + 2 f2), T)
//                  (T: the sequence's length), each 1 to max_time_mask_width frames;
//   feature masks: between f1 + f2 and 2 f0 + f1 + 2 f2,
//                  each 1 to max_feature_mask_width channels.
// Mask starts are drawn uniformly within the sequence (RETURNN draws distinct
// starts with top_k; here two masks may start at one frame, which matters
// only when a sequence has fewer frames than masks). The number of time
// masks has a static bound, max_time_masks.
#pragma once

#include <array>
#include <cstdint>
#include <source_location>

#include "compiler/nn/tensor.h"

namespace retc::nn {

struct SpecAugmentOptions {
  /// The most frames one time mask covers (RETURNN: max_consecutive_spatial_dims).
  int64_t max_time_mask_width = 20;
  /// At full strength up to max(T / this, 2) time masks (RETURNN: num_spatial_mask_factor).
  int64_t frames_per_time_mask = 100;
  /// A static bound on the time masks of one sequence.
  int64_t max_time_masks = 50;
  /// The most channels one feature mask covers; 0: a fifth of the feature
  /// dim (RETURNN's default, max_consecutive_feature_dims).
  int64_t max_feature_mask_width = 0;
  /// The schedule over the global train step (see above).
  std::array<int64_t, 3> steps = {0, 1000, 2000};
  /// false: full strength from the first step (f0 = f1 = f2 = 1).
  bool step_dependent = true;
  /// false: masks in evaluation too.
  bool only_in_training = true;
};

/// Random masks along one axis: how many per sequence, and each slot's start
/// and width (slots at and past `num` are unused).
struct RandomMasks {
  Tensor num;    ///< [B] (float32, whole numbers)
  Tensor start;  ///< [B, slots] (float32, whole numbers)
  Tensor width;  ///< [B, slots] (float32, whole numbers >= 1)
  Tensor mask;   ///< [B, axis] bool: covered by some used slot
};

struct SpecAugmentMasks {
  RandomMasks time;
  RandomMasks feature;
};

/// The masks specaugment draws for `x` [B, time, feature] (fresh at every
/// step), in training and in evaluation alike.
SpecAugmentMasks specaugment_masks(const Tensor& x, const ir::Dim& time, const ir::Dim& feature,
                                   const SpecAugmentOptions& opts = {},
                                   std::source_location loc = std::source_location::current());
/// `x` with the masked frames and channels set to 0.
Tensor apply_masks(const Tensor& x, const SpecAugmentMasks& masks,
                   std::source_location loc = std::source_location::current());
/// SpecAugment: apply_masks(x, specaugment_masks(x, ...)) in training (only
/// that branch computes them), `x` unchanged in evaluation.
Tensor specaugment(const Tensor& x, const ir::Dim& time, const ir::Dim& feature,
                   const SpecAugmentOptions& opts = {},
                   std::source_location loc = std::source_location::current());

}  // namespace retc::nn
