// retc's counterparts of returnn_common's model tests (models.cc).
#pragma once

#include <vector>

#include "tests/test_models.h"

namespace retc::testing {

/// The models of tests/returnn_common/models.cc, named "rc-<file>-<test>".
std::vector<ModelDef> returnn_common_models();

}  // namespace retc::testing
