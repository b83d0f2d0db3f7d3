// The 12ax model, shared by the 12ax and 12ax-wn configs.
#pragma once

#include <functional>
#include <memory>

#include "compiler/nn/builder.h"
#include "compiler/nn/modules.h"

namespace retc::configs {

class Model12ax : public nn::Module {
 public:
  Model12ax(ir::Dim in, ir::Dim hidden, ir::Dim classes);
  /// Logits per frame.
  nn::Tensor forward(const nn::Tensor& x, const ir::Dim& time) const;

  std::shared_ptr<nn::Lstm> lstm;
  std::shared_ptr<nn::Linear> out;
};

/// Declares the data, constructs the model, lets `customize` change it after
/// construction (before set_root), runs it and marks output and loss.
void build_12ax(nn::Builder& b, const std::function<void(Model12ax&)>& customize = {});

}  // namespace retc::configs
