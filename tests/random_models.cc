// Test models for fresh random numbers and SpecAugment; checked in RETURNN by
// tests/integration/test_random.py on both targets.
#include "compiler/nn/loop.h"
#include "compiler/nn/modules.h"
#include "tests/tagging_io.h"
#include "tests/test_models.h"

namespace retc::testing {
namespace {

using ir::Dim;
using nn::Builder;
using nn::Tensor;

// Fresh random numbers over [B, time, 2] (per step), [2] (per step, static
// shape) and, in a loop over time, [B, 2] per frame (stacked).
void build_fresh_random(Builder& b) {
  TaggingIo io(b);
  const Dim two = Dim::feature("two", 2);
  auto out = b.set_root(std::make_shared<nn::Linear>(io.in, io.classes));
  nn::random_uniform(b, {Dim::batch(), io.time, two}, 0.0, 1.0, {io.x}).mark_as_output("uniform");
  nn::random_normal(b, {two}, 1.0, 2.0).mark_as_output("normal");
  nn::Loop loop(b, io.time);
  Tensor frame = loop.unstack(io.x);
  Tensor r = nn::random_normal(b, {Dim::batch(), two}, 0.0, 1.0, {frame});
  loop.end();
  loop.stack(r).mark_as_output("per_frame");
  io.finish(out->forward(io.x));
}

// SpecAugment at full strength (steps {0, 0, 0}): its masks, the masked
// input, and specaugment() itself (the input unchanged in evaluation).
void build_specaugment(Builder& b) {
  const Dim time = Dim::spatial("time");
  const Dim feat = Dim::feature("feature", 40);
  const Dim classes = Dim::feature("classes", 3);
  Tensor x = b.extern_data("data", {Dim::batch(), time, feat});
  Tensor y = b.extern_data("classes", {Dim::batch(), time}, ir::DType::kInt32, classes);
  auto out = b.set_root(std::make_shared<nn::Linear>(feat, classes));
  nn::SpecAugmentOptions opts;
  opts.max_time_mask_width = 5;
  opts.frames_per_time_mask = 10;
  opts.max_time_masks = 8;
  opts.steps = {0, 0, 0};
  nn::SpecAugmentMasks m = nn::specaugment_masks(x, time, feat, opts);
  m.time.num.mark_as_output("time_num");
  m.time.start.mark_as_output("time_start");
  m.time.width.mark_as_output("time_width");
  m.time.mask.mark_as_output("time_mask");
  m.feature.num.mark_as_output("feature_num");
  m.feature.start.mark_as_output("feature_start");
  m.feature.width.mark_as_output("feature_width");
  m.feature.mask.mark_as_output("feature_mask");
  nn::apply_masks(x, m).mark_as_output("masked");
  Tensor augmented = nn::specaugment(x, time, feat, opts);
  augmented.mark_as_output("augmented");
  // The default schedule at step 0: milder (at most 2 time and 2 feature masks).
  nn::SpecAugmentMasks mild = nn::specaugment_masks(x, time, feat, {});
  mild.time.num.mark_as_output("mild_time_num");
  mild.feature.num.mark_as_output("mild_feature_num");
  Tensor logits = out->forward(augmented);
  logits.mark_as_output();
  nn::softmax_cross_entropy(logits, y).mark_as_loss("ce");
}

}  // namespace

std::vector<ModelDef> random_test_models() {
  return {
      ModelDef{"op-fresh-random", "fresh random numbers per step and per frame", build_fresh_random,
               small_training()},
      ModelDef{"op-specaugment", "SpecAugment's masks", build_specaugment, small_training()},
  };
}

}  // namespace retc::testing
