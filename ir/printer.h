// IR text form. Canonical form (for goldens) prints kinds, inputs, attributes,
// types, stages, module paths and names; debug form adds source locations.
#pragma once

#include <string>

#include "ir/graph.h"

namespace retc::ir {

enum class PrintMode { kCanonical, kDebug };

/// Which nodes to print: all, or only one stage (params and dims always).
struct PrintOptions {
  PrintMode mode = PrintMode::kCanonical;
  std::optional<Stage> only_stage;
};

std::string print(const Graph& g, const PrintOptions& opts = {});

}  // namespace retc::ir
