// DimTable: every dim a graph uses, in order of first appearance, each with a
// unique identifier. Shared by the IR printer and the config emitter so both
// name dims the same way, independently of pointer values.
#pragma once

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "ir/graph.h"

namespace retc::ir {

class DimTable {
 public:
  /// Collects dims from params, node types and attributes, in that order;
  /// operands of derived dims come before the derived dim. Excludes batch.
  /// With a `base` (the table of another graph of the same model, e.g. the
  /// last pretraining stage's): a dim equal to one of base's in kind, name
  /// and size (derived: in op, factor and operands), the n-th such dim here
  /// matching base's n-th, takes base's identifier; other dims get
  /// identifiers base does not use. (`base` must outlive this table.)
  explicit DimTable(const Graph& g, const DimTable* base = nullptr);

  const std::vector<Dim>& dims() const { return dims_; }
  /// The identifier for `d` (`time`, `hidden_2`, ...); "batch" for batch.
  const std::string& id(const Dim& d) const;
  /// Whether the i-th dim has base's identifier (its definition is base's).
  bool from_base(size_t i) const { return from_base_[i]; }

 private:
  void add(const Dim& d);
  int find(const Dim& d) const;
  // What base matching compares (see above), with operands by identifier.
  std::string key(const Dim& d) const;

  const DimTable* base_ = nullptr;
  std::vector<Dim> dims_;
  std::vector<std::string> ids_;
  std::vector<std::string> keys_;
  std::vector<bool> from_base_;
  absl::flat_hash_set<std::string> taken_;
  absl::flat_hash_map<const void*, int> by_identity_;
};

}  // namespace retc::ir
