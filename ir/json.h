// JSON dump of a graph for tools: dims, params and nodes with every field,
// including each node's stage and source location.
#pragma once

#include "ir/graph.h"
#include "nlohmann/json.hpp"

namespace retc::ir {

nlohmann::ordered_json to_json(const Graph& g);

}  // namespace retc::ir
