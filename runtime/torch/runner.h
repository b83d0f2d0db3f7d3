// The runner of the RETURNN-PyTorch target: RETURNN's PyTorch engine in this
// process (runtime/returnn_session.h): check by the config's get_model and
// one train_step, train by RETURNN's training task.
#pragma once

#include "runtime/backends.h"

namespace retc::runtime::torch {

const Runner& runner();

}  // namespace retc::runtime::torch
