// torch-legalize: every node's kind is one this target lowers, and params use
// no option but what RETURNN's torch engine gives; else the user's error at
// their line, naming the target (the tf target's way, if it has one).
//
// Requires: the neutral pipeline ran (weight_norm is expanded).
// Ensures: changes nothing (returns false), or an error.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"

namespace retc::emit::torch {

absl::StatusOr<bool> legalize(ir::Graph& g);

/// Whether `g` (a forward graph) exports to ONNX as traced (`retc export`):
/// no loop over a dynamic axis or until an end condition (the torch target's
/// Python loop would be traced unrolled at the example's length), no cond on
/// a computed predicate (traced, one branch would be baked in); else the
/// user's error at the op's line, naming it.
absl::Status check_exportable(const ir::Graph& g);

/// The rf function of an activation; empty: not lowered.
absl::string_view rf_activation(absl::string_view func);

}  // namespace retc::emit::torch
