// The extern data and loss of the small test taggers: data [B, time, input(5)]
// (or sparse ids over a vocab), classes [B, time] over classes(3), and a
// cross-entropy loss "ce" on the logits, which are also the output.
#pragma once

#include <optional>

#include "compiler/nn/builder.h"

namespace retc::testing {

struct TaggingIo {
  ir::Dim time = ir::Dim::spatial("time");
  ir::Dim in = ir::Dim::feature("input", 5);
  ir::Dim classes = ir::Dim::feature("classes", 3);
  nn::Tensor x, y;

  explicit TaggingIo(nn::Builder& b, std::optional<ir::Dim> vocab = std::nullopt) {
    if (vocab) {
      x = b.extern_data("data", {ir::Dim::batch(), time}, ir::DType::kInt32, *vocab);
    } else {
      x = b.extern_data("data", {ir::Dim::batch(), time, in});
    }
    y = b.extern_data("classes", {ir::Dim::batch(), time}, ir::DType::kInt32, classes);
  }
  void finish(const nn::Tensor& logits) const {
    logits.mark_as_output();
    nn::softmax_cross_entropy(logits, y).mark_as_loss("ce");
  }
};

}  // namespace retc::testing
