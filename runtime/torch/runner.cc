#include "runtime/torch/runner.h"

namespace retc::runtime::torch {

const Runner& runner() {
  // The state_dict keys are the params' module paths.
  static const Runner kRunner{
      check_torch_config,
      train_config,
      [](const ir::Param& p) { return p.path; },
      train_distributed_config,
  };
  return kRunner;
}

}  // namespace retc::runtime::torch
