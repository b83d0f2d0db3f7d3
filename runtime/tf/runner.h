// The runner of the RETURNN-TF target: RETURNN's TF engine in this process
// (runtime/returnn_session.h), check by TFNetwork.construct_from_dict.
#pragma once

#include "runtime/backends.h"

namespace retc::runtime::tf {

const Runner& runner();

}  // namespace retc::runtime::tf
