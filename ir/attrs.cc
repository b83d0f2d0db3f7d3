#include "ir/attrs.h"

#include <cstdio>
#include <cstdlib>

namespace retc::ir {
namespace {

struct KeyInfo {
  absl::string_view name;
  size_t type_index;
};

// The index of T among AttrValue's alternatives.
template <class T, class... Ts>
constexpr size_t index_in(const std::variant<Ts...>*) {
  constexpr bool same[] = {std::is_same_v<T, Ts>...};
  for (size_t i = 0; i < sizeof...(Ts); ++i) {
    if (same[i]) return i;
  }
  return sizeof...(Ts);
}
template <class T>
constexpr size_t type_index = index_in<T>(static_cast<const AttrValue*>(nullptr));

const KeyInfo& info(AttrKey k) {
  static const KeyInfo kInfo[] = {
#define RETC_X(T, K, Ty) {K, type_index<Ty>},
      RETC_FOR_EACH_ATTR(RETC_X)
#undef RETC_X
  };
  return kInfo[static_cast<int>(k)];
}

}  // namespace

absl::string_view attr_key_name(AttrKey k) { return info(k).name; }

std::optional<AttrKey> parse_attr_key(absl::string_view s) {
#define RETC_X(T, K, Ty) \
  if (s == K) return AttrKey::k##T;
  RETC_FOR_EACH_ATTR(RETC_X)
#undef RETC_X
  return std::nullopt;
}

size_t attr_type_index(AttrKey k) { return info(k).type_index; }

absl::string_view attr_type_name(AttrKey k) {
  static constexpr absl::string_view kNames[] = {"a bool", "an int",     "a number",   "a string",
                                                 "a dim",  "a dim list", "an int list"};
  return kNames[attr_type_index(k)];
}

void missing_attr(AttrKey k) {
  std::fprintf(stderr, "retc: internal error: a node lacks its required attribute '%s'\n",
               std::string(attr_key_name(k)).c_str());
  std::abort();
}

void Attrs::set(AttrKey key, AttrValue v) {
  for (auto& [k, old] : items_) {
    if (k == key) {
      old = std::move(v);
      return;
    }
  }
  items_.emplace_back(key, std::move(v));
}

const AttrValue* Attrs::find(AttrKey key) const {
  for (const auto& [k, v] : items_) {
    if (k == key) return &v;
  }
  return nullptr;
}

}  // namespace retc::ir
