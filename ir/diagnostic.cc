#include "ir/diagnostic.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace retc::ir {
namespace {
constexpr absl::string_view kMarker = ": error: ";
}  // namespace

std::string user_error_text(const SourceLoc& loc, absl::string_view what) {
  return absl::StrCat(loc.str(), kMarker, what);
}

absl::Status user_error(const SourceLoc& loc, absl::string_view what) {
  return absl::InvalidArgumentError(user_error_text(loc, what));
}

absl::Status user_error(const Node& n, absl::string_view what) {
  return user_error(
      n.loc, absl::StrCat(node_kind_name(n.kind),
                          n.module_path.empty() ? "" : " in '" + n.module_path + "'", ": ", what));
}

bool is_user_error_text(absl::string_view message) { return absl::StrContains(message, kMarker); }

}  // namespace retc::ir
