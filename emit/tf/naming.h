// RETURNN-TF names: layer names for nodes and loops, TF variable names for
// params.
//
// The pass `tf-naming` gives every node its layer name. Terms: data nodes are
// `data:<key>`; param nodes are their dotted param path (`lstm.ff_weight`);
// a marked node takes the name of its first mark (`output`, or a loss name);
// a param's initial value is `<path>.init`; any other node is
// `<module path>.<kind>` (just `<kind>` at top level), with `_2`, `_3`, ...
// appended on clashes, in node order. Names already set are kept.
//
// Requires: a verified graph; mark names match [A-Za-z0-9_.-]+.
// Ensures: every node has a unique, non-empty name that holds no '/' or ':'
//   (except the `data:` prefix); a relative-positional self-attention's
//   `<name>_rel_pos` is free for its encoding layer. Returns whether it named
//   any node. A name wanted twice (an output named like a param) is the
//   user's error, at the later one's line.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/loops.h"

namespace retc::emit::tf {

absl::StatusOr<bool> naming(ir::Graph& g);

/// The rec layer name of each loop (by loop id): `loop`, or `<module>.loop`
/// of the module whose call opened it, with `_2`, ... on clashes with node
/// names and earlier loops. Requires: naming ran.
std::vector<std::string> loop_layer_names(const ir::Graph& g, const ir::LoopAnalysis& loops);

/// The name of the relative-positional encoding layer of a self-attention node.
std::string rel_pos_layer_name(const ir::Node& attention);

/// A param's TF name scope: its path with '/' for '.' (`encoder/layers/0/ff/weight`).
std::string scope_of(const ir::Param& p);

/// The TF variable RETURNN makes for a param: its scope, then `/param`
/// (`encoder/layers/0/ff/weight/param`; `:0` is the tensor).
std::string variable_name(const ir::Param& p);

}  // namespace retc::emit::tf
