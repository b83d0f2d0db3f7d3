// Graphviz dot of a graph: modules as nested clusters, the stage of each
// node as its colour (param-init: amber, step: blue), params as ellipses,
// initial-value references as dashed edges.
#pragma once

#include <string>

#include "ir/graph.h"

namespace retc::ir {

std::string to_dot(const Graph& g);

}  // namespace retc::ir
