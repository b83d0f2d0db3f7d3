#include "ir/node_kind.h"

namespace retc::ir {

absl::string_view node_kind_name(NodeKind k) { return kind_facts(k).name; }

std::optional<NodeKind> parse_node_kind(absl::string_view s) {
#define RETC_X(E, S, F) \
  if (s == S) return NodeKind::k##E;
  RETC_FOR_EACH_NODE_KIND(RETC_X)
#undef RETC_X
  return std::nullopt;
}

const KindFacts& kind_facts(NodeKind k) {
  static constexpr KindFacts kFacts[] = {
#define RETC_X(E, S, F) F.named(S),
      RETC_FOR_EACH_NODE_KIND(RETC_X)
#undef RETC_X
  };
  return kFacts[static_cast<int>(k)];
}

std::optional<BinaryOp> binary_op(NodeKind k) {
  switch (k) {
#define RETC_X(E, S, F) \
  case NodeKind::k##E:  \
    return BinaryOp::k##E;
    RETC_FOR_EACH_BINARY_KIND(RETC_X)
#undef RETC_X
#define RETC_X(E, S, F) case NodeKind::k##E:
    RETC_FOR_EACH_NONBINARY_KIND(RETC_X)
#undef RETC_X
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace retc::ir
