// Reads the IR text form back: parse(print(g)) is equivalent to g.
//
// Accepts the canonical and the debug form (with `loc=` fields); `#` starts
// a comment line. Nodes and params without `loc=` are located at their line
// in the IR file, so verifier errors point into it. Node types are recomputed by the checking
// factory and must equal the printed ones, so a hand-edited file cannot lie about types.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"

namespace retc::ir {

/// Errors: InvalidArgument `<file>:<line>:<col>: error: ...`.
absl::StatusOr<Graph> parse(absl::string_view text, absl::string_view file = "<input>");

/// Decodes a string literal as ir::quote writes it (with the quotes).
absl::StatusOr<std::string> unquote(absl::string_view literal);

/// Whether two graphs are the same up to dim identity and source locations:
/// their canonical texts, which hold every other field, are equal.
bool equivalent(const Graph& a, const Graph& b);

}  // namespace retc::ir
