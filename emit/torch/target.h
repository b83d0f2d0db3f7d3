// The RETURNN-PyTorch target (`--backend torch`): a config for RETURNN's
// PyTorch engine, lowered onto returnn.frontend (rf) with its torch backend,
// so dims, sequence lengths and masking mean what they mean in the TF layers.
//
// The config is generated, readable Python: `get_model` builds an rf.Module
// whose params sit at their module paths (the state_dict keys are the paths,
// as the TF variable names are) and runs the param-init stage once, there
// (initial values); `train_step` runs the step stage at every step. Chosen
// over a runtime that interprets the IR as data: the config is self-contained
// (`python -m returnn` runs it with nothing of retc installed), a user can
// read and debug it, and its bytes are stable.
//
// Not lowered yet (a build-time error naming the target, tf-legalize's
// counterpart torch-legalize): the kinds that the first models do not need,
// and param options but initial values.
#pragma once

#include "emit/target.h"

namespace retc::emit::torch {

/// Its passes: torch-legalize (what this target lowers, at the user's
/// line), torch-naming (Python names); its emitter: write_config.
const Target& target();

}  // namespace retc::emit::torch
