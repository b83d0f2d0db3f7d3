#include "runtime/backends.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "emit/tf/target.h"
#include "emit/torch/target.h"
#include "runtime/tf/runner.h"
#include "runtime/torch/runner.h"

namespace retc::runtime {

const std::vector<Backend>& backends() {
  static const std::vector<Backend> kBackends = {
      {emit::tf::target(), tf::runner()},
      {emit::torch::target(), torch::runner()},
  };
  return kBackends;
}

absl::StatusOr<const Backend*> find_backend(absl::string_view name) {
  std::vector<std::string> names;
  for (const Backend& b : backends()) {
    if (b.target.name == name) return &b;
    names.emplace_back(b.target.name);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown backend '", name, "'; backends: ", absl::StrJoin(names, ", ")));
}

}  // namespace retc::runtime
