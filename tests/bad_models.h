// Test-only models: a tiny good one, ones with mistakes (each mistake's line
// is recorded so tests can check the reported file:line), and one with
// hostile names.
#pragma once

#include <vector>

#include "compiler/model.h"

namespace retc::testing {

/// The source line of the mistake in model `name`, or 0.
int mistake_line(const std::string& name);

std::vector<ModelDef> test_models();

}  // namespace retc::testing
