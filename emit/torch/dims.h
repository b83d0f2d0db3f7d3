// The torch target's dims in Python: rf `Dim` variables named by the dim
// table, and the names of a dim's repeated occurrences (a square weight
// [h, h]: rf wants each dim of a tensor once).
#pragma once

#include <string>
#include <vector>

#include "emit/py_value.h"
#include "ir/dim_table.h"
#include "ir/graph.h"

namespace retc::emit::torch {

PyValue dim_ref(const ir::DimTable& t, const ir::Dim& d);
/// The k-th occurrence (k >= 2) of a dim in one list is a dim of its own,
/// `h_dim__k`; results whose IR type has it once are renamed back (_unprime).
std::string occurrence_id(const ir::DimTable& t, const ir::Dim& d, int k);
/// The name of a weight's dim at position `i` as dims_value gives it (a
/// square conv's out dim: its second occurrence).
std::string weight_dim_id(const ir::DimTable& t, const std::vector<ir::Dim>& dims, size_t i);
bool has_repeated_dim(const std::vector<ir::Dim>& dims);
/// `[batch_dim, time_dim, h_dim, h_dim__2]`.
PyValue dims_value(const ir::DimTable& t, const std::vector<ir::Dim>& dims);
/// `Dim(None, name="time")`, `4 * hidden_dim`, ...
PyValue dim_definition(const ir::DimTable& t, const ir::Dim& d);

/// The one feature dim of `type` (pos_encoding's channels).
const ir::Dim& feature_dim(const ir::TensorType& type);
/// The classes-plus-blank dim of a CTC loss's logits: neither batch nor the axis.
const ir::Dim& class_dim(const ir::Graph& g, const ir::Node& ctc);
/// The sequence axis of sparse targets: their dynamic dim.
const ir::Dim& targets_axis(const ir::TensorType& type);

}  // namespace retc::emit::torch
