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

/// Pretraining stages: `network` is the last stage's, `network_stage<k>` the
/// earlier ones', and `get_network(epoch)` (the config's only function,
/// besides _stage_of) returns the one that trains the epoch. RETURNN copies
/// the params by name when the network changes.
absl::StatusOr<std::string> write_config(const std::vector<StageGraph>& stages,
                                         const ConfigOptions& opts);

}  // namespace retc::emit::tf
