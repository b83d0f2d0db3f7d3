// The RETURNN-TF target (`--backend tf`, the default): TF net dicts for
// RETURNN's `tensorflow-net-dict` backend.
#pragma once

#include "emit/target.h"

namespace retc::emit::tf {

/// Its passes: tf-legalize (RETURNN's rules, at the user's line), tf-naming
/// (layer names); its emitter: write_config (emit/tf/config.h).
const Target& target();

}  // namespace retc::emit::tf
