#include "ir/node_kind.h"

namespace retc::ir {

absl::string_view node_kind_name(NodeKind k) {
  switch (k) {
#define RETC_X(E, S)   \
  case NodeKind::k##E: \
    return S;
    RETC_FOR_EACH_NODE_KIND(RETC_X)
#undef RETC_X
  }
  return "?";
}

std::optional<NodeKind> parse_node_kind(absl::string_view s) {
#define RETC_X(E, S) \
  if (s == S) return NodeKind::k##E;
  RETC_FOR_EACH_NODE_KIND(RETC_X)
#undef RETC_X
  return std::nullopt;
}

}  // namespace retc::ir
