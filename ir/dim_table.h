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
  explicit DimTable(const Graph& g);

  const std::vector<Dim>& dims() const { return dims_; }
  /// The identifier for `d` (`time`, `hidden_2`, ...); "batch" for batch.
  const std::string& id(const Dim& d) const;

 private:
  void add(const Dim& d);
  int find(const Dim& d) const;

  std::vector<Dim> dims_;
  std::vector<std::string> ids_;
  absl::flat_hash_set<std::string> taken_;
  absl::flat_hash_map<const void*, int> by_identity_;
};

}  // namespace retc::ir
