// naming: gives every node its RETURNN layer name.
//
// Terms: data nodes are `data:<key>`; param nodes are their dotted param path
// (`lstm.ff_weight`); a marked node takes the name of its first mark
// (`output`, or a loss name); a param's initial value is `<path>.init`; any other node is `<module
// path>.<kind>` (just
// `<kind>` at top level), with `_2`, `_3`, ... appended on clashes, in node
// order. Names already set are kept.
//
// Requires: a verified graph; mark names match [A-Za-z0-9_.-]+.
// Ensures: every node has a unique, non-empty name that holds no '/' or ':'
//   (except the `data:` prefix). Returns whether it named any node.
#pragma once

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace retc::passes {

struct NamingOptions {};

absl::StatusOr<bool> naming(ir::Graph& g, const NamingOptions& opts = {});

}  // namespace retc::passes
