// Diagnostics: how a user error (a mistake in model code or in an IR file) is
// worded and recognized, in one place. User errors are InvalidArgument
// statuses whose message starts `file:line:col: error: ` (MLIR and clang's
// form); compiler bugs are Internal errors naming the pass (verifier.h).
//
//   return ir::user_error(n, "the result must be marked as a loss");
//   // model.cc:42:7: error: softmax_ce in 'decoder': the result must be ...
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"
#include "ir/source_loc.h"

namespace retc::ir {

/// `<loc>: error: <what>` (the text of a user error).
std::string user_error_text(const SourceLoc& loc, absl::string_view what);
/// InvalidArgument `<loc>: error: <what>`.
absl::Status user_error(const SourceLoc& loc, absl::string_view what);
/// InvalidArgument `<n.loc>: error: <kind>[ in '<module>']: <what>`: a
/// mistake at the user's line that made node `n`.
absl::Status user_error(const Node& n, absl::string_view what);
/// Whether `message` is already a located user error (so a caller prints it
/// as it is, not behind `retc: error: `).
bool is_user_error_text(absl::string_view message);

}  // namespace retc::ir
