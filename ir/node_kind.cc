#include "ir/node_kind.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"

namespace retc::ir {

absl::string_view node_kind_name(NodeKind k) { return kind_facts(k).name; }

std::optional<NodeKind> parse_node_kind(absl::string_view s) {
#define RETC_X(E, S, F, ...) \
  if (s == S) return NodeKind::k##E;
  RETC_FOR_EACH_NODE_KIND(RETC_X)
#undef RETC_X
  return std::nullopt;
}

const KindFacts& kind_facts(NodeKind k) {
  static constexpr KindFacts kFacts[] = {
#define RETC_X(E, S, F, ...) F.named(S),
      RETC_FOR_EACH_NODE_KIND(RETC_X)
#undef RETC_X
  };
  return kFacts[static_cast<int>(k)];
}

namespace {
// R(Tag), O(Tag): the entries of a kind's attribute table.
#define R(T) AttrDecl{AttrKey::k##T, true},
#define O(T) AttrDecl{AttrKey::k##T, false},
#define RETC_X(E, S, F, ...) \
  constexpr AttrDecl k##E##Attrs[] = {__VA_ARGS__ AttrDecl{AttrKey::kCond, false}};
RETC_FOR_EACH_NODE_KIND(RETC_X)
#undef RETC_X
#undef R
#undef O
}  // namespace

absl::Span<const AttrDecl> kind_attrs(NodeKind k) {
  switch (k) {
#define RETC_X(E, S, F, ...) \
  case NodeKind::k##E:       \
    return absl::MakeConstSpan(k##E##Attrs, std::size(k##E##Attrs) - 1);
    RETC_FOR_EACH_NODE_KIND(RETC_X)
#undef RETC_X
  }
  return {};
}

absl::Status check_attrs(NodeKind k, const Attrs& attrs) {
  const absl::Span<const AttrDecl> decls = kind_attrs(k);
  for (const auto& item : attrs.items()) {
    const AttrKey key = item.first;  // not a structured binding: the lambda captures it
    const AttrValue& value = item.second;
    const bool common = key == AttrKey::kCond || key == AttrKey::kBranch;
    const bool declared = common || std::any_of(decls.begin(), decls.end(),
                                                [&](const AttrDecl& d) { return d.key == key; });
    if (!declared) {
      return absl::InvalidArgumentError(
          absl::StrCat(node_kind_name(k), " takes no attribute '", attr_key_name(key), "'"));
    }
    if (value.index() != attr_type_index(key)) {
      return absl::InvalidArgumentError(absl::StrCat(node_kind_name(k), ": attribute '",
                                                     attr_key_name(key), "' must be ",
                                                     attr_type_name(key)));
    }
  }
  for (const AttrDecl& d : decls) {
    if (d.required && !attrs.find(d.key)) {
      return absl::InvalidArgumentError(absl::StrCat(node_kind_name(k), " needs attribute '",
                                                     attr_key_name(d.key), "' (",
                                                     attr_type_name(d.key), ")"));
    }
  }
  return absl::OkStatus();
}

std::optional<BinaryOp> binary_op(NodeKind k) {
  switch (k) {
#define RETC_X(E, S, F, ...) \
  case NodeKind::k##E:       \
    return BinaryOp::k##E;
    RETC_FOR_EACH_BINARY_KIND(RETC_X)
#undef RETC_X
#define RETC_X(E, S, F, ...) case NodeKind::k##E:
    RETC_FOR_EACH_NONBINARY_KIND(RETC_X)
#undef RETC_X
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace retc::ir
