// ModelError: how a mistake in model code leaves the model API.
//
// Model code reads like PyTorch (`y = lin->forward(x) + b`), so the model API
// reports user errors by throwing ModelError, which carries an absl::Status
// with `file:line:col: error: ...`. `build_model` (emit/model.h) is the
// boundary: it catches ModelError and returns the status, so nothing outside
// compiler/nn ever sees an exception.
#pragma once

#include <exception>
#include <source_location>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "ir/dim.h"
#include "ir/source_loc.h"

namespace retc::nn {

class ModelError : public std::exception {
 public:
  explicit ModelError(absl::Status status) : status_(std::move(status)) {}
  const absl::Status& status() const { return status_; }
  const char* what() const noexcept override { return status_.message().data(); }

 private:
  absl::Status status_;
};

/// Throws ModelError: `<loc>: error: <message>`.
[[noreturn]] void fail(const ir::SourceLoc& loc, absl::string_view message);

/// Whether `loc` is inside retc's model API sources (a Linear's own
/// register_parameter call), not the user's code.
bool is_library_loc(const ir::SourceLoc& loc);

/// Fails at `loc` if a static dim of `dims` has a size below 1 (RETURNN would
/// fail later, far from the user's line). `what()` names the use (made only
/// on failure).
void check_dim_sizes(const std::vector<ir::Dim>& dims, absl::FunctionRef<std::string()> what,
                     const ir::SourceLoc& loc);

}  // namespace retc::nn
