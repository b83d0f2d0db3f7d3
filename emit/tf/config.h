// The complete RETURNN-TF config: header, backend, Dim definitions,
// extern_data, network and the training setup. Byte-stable: the same graph
// and options always give the same bytes.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "emit/config.h"
#include "ir/graph.h"

namespace retc::emit::tf {

/// Requires: a graph after pipeline(tf::target()).
absl::StatusOr<std::string> write_config(const ir::Graph& g, const ConfigOptions& opts);

}  // namespace retc::emit::tf
