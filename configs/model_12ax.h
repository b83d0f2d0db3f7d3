// The 12ax model, shared by the 12ax and 12ax-wn configs.
#pragma once

#include <functional>
#include <memory>

#include "compiler/nn/builder.h"
#include "compiler/nn/modules.h"
#include "emit/model.h"

namespace retc::configs {

class Model12ax : public nn::Module {
 public:
  Model12ax(ir::Dim in, ir::Dim hidden, ir::Dim classes, double dropout = 0.1);
  /// Logits per frame.
  nn::Tensor forward(const nn::Tensor& x, const ir::Dim& time) const;

  std::shared_ptr<nn::Lstm> lstm;
  std::shared_ptr<nn::Linear> out;

 private:
  double dropout_;
};

/// Declares the data, constructs the model (`hidden` LSTM units), lets
/// `customize` change it after construction (before set_root), runs it and
/// marks output and loss.
void build_12ax(nn::Builder& b, int64_t hidden, double dropout,
                const std::function<void(Model12ax&)>& customize = {});

/// The 12ax model's options (hidden, dropout, the training setup's) and the
/// setup they apply to; `customize` as for build_12ax, made from the values.
ModelDef model_12ax_with(
    std::function<std::function<void(Model12ax&)>(const OptionValues&)> customize = {},
    std::vector<ModelOption> more_options = {});

}  // namespace retc::configs
