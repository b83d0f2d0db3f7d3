// Node attributes: every attribute key with its C++ type, listed once, as
// MLIR's ODS declares an op's arguments; which kinds take which (required or
// optional) is declared with each kind in the kind list (node_kind.h).
//
// Code reads and writes attributes through the typed tags, never by string:
//
//   b.add(NodeKind::kSlice, {x}, {attr::Axis{a}, attr::Start{0}, attr::OutDim{o}}, loc);
//   const Dim& axis = n.attrs.get<attr::Axis>();          // required: always there
//   if (const int64_t* c = n.attrs.find<attr::Clipping>()) ...   // optional
//   double scale = n.attrs.get<attr::Scale>();             // defaulted: 1.0 if absent
//
// The key strings appear here and in the IR text format (printer, parser,
// JSON) only. The verifier checks every node's attributes against its
// kind's declaration (check_attrs): presence, types, no undeclared key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/string_view.h"
#include "ir/dim.h"

namespace retc::ir {

/// Ints lists (strides, window sizes) print as `(2, 1)`; dim lists as `[...]`.
using AttrValue =
    std::variant<bool, int64_t, double, std::string, Dim, std::vector<Dim>, std::vector<int64_t>>;

using Dims = std::vector<Dim>;
using Ints = std::vector<int64_t>;

// Every attribute: X(Tag, "text key", C++ type). The meaning of each is with
// the kinds that take it (node_kind.h).
// clang-format off
#define RETC_FOR_EACH_ATTR(X)                       \
  X(Amount, "amount", int64_t)                      \
  X(AsError, "as_error", bool)                      \
  X(AttDropout, "att_dropout", double)              \
  X(Axes, "axes", Dims)                             \
  X(Axis, "axis", Dim)                              \
  X(AxisA, "axis_a", Dim)                           \
  X(AxisB, "axis_b", Dim)                           \
  X(Branch, "branch", int64_t)                      \
  X(Causal, "causal", bool)                         \
  X(Clipping, "clipping", int64_t)                  \
  X(Cond, "cond", int64_t)                          \
  X(Dilation, "dilation", int64_t)                  \
  X(DimAttr, "dim", Dim)                            \
  X(DimsAttr, "dims", Dims)                         \
  X(Direction, "direction", int64_t)                \
  X(Distribution, "distribution", std::string)      \
  X(DType, "dtype", std::string)                    \
  X(Epsilon, "epsilon", double)                     \
  X(FocalLossFactor, "focal_loss_factor", double)   \
  X(Func, "func", std::string)                      \
  X(Groups, "groups", int64_t)                      \
  X(Indices, "indices", bool)                       \
  X(KDim, "k_dim", Dim)                             \
  X(Key, "key", std::string)                        \
  X(KeyDim, "key_dim", Dim)                         \
  X(LabelSmoothing, "label_smoothing", double)      \
  X(Layer, "layer", std::string)                    \
  X(LayerDims, "layer_dims", Dims)                  \
  X(Left, "left", int64_t)                          \
  X(Log, "log", bool)                               \
  X(Loop, "loop", int64_t)                          \
  X(Maxval, "maxval", double)                       \
  X(Mean, "mean", double)                           \
  X(Minval, "minval", double)                       \
  X(Mode, "mode", std::string)                      \
  X(Momentum, "momentum", double)                   \
  X(Normalize, "normalize", bool)                   \
  X(NumHeads, "num_heads", int64_t)                 \
  X(Op, "op", std::string)                          \
  X(OutAxes, "out_axes", Dims)                      \
  X(OutAxis, "out_axis", Dim)                       \
  X(OutDim, "out_dim", Dim)                         \
  X(OutDims, "out_dims", Dims)                      \
  X(PadValue, "pad_value", double)                  \
  X(Padding, "padding", std::string)                \
  X(Rate, "rate", double)                           \
  X(Reduce, "reduce", Dims)                         \
  X(Right, "right", int64_t)                        \
  X(Scale, "scale", double)                         \
  X(Seed, "seed", int64_t)                          \
  X(Shape, "shape", Dims)                           \
  X(Size, "size", Ints)                             \
  X(SparseDim, "sparse_dim", Dim)                   \
  X(Start, "start", int64_t)                        \
  X(State, "state", std::string)                    \
  X(Stddev, "stddev", double)                       \
  X(Stride, "stride", int64_t)                      \
  X(Strides, "strides", Ints)                       \
  X(Unmasked, "unmasked", bool)                     \
  X(Value, "value", double)                         \
  X(WindowDim, "window_dim", Dim)

// Attributes whose absence means a default: X(Tag, default). Reading one
// with get<>() gives the default when it is not set; the printer shows only
// what was set, so a default never changes the text form.
#define RETC_FOR_EACH_ATTR_DEFAULT(X) \
  X(AsError, false)                   \
  X(AttDropout, 0.0)                  \
  X(FocalLossFactor, 0.0)             \
  X(LabelSmoothing, 0.0)              \
  X(Normalize, false)                 \
  X(PadValue, 0.0)                    \
  X(Scale, 1.0)                       \
  X(Unmasked, false)
// clang-format on

enum class AttrKey {
#define RETC_X(T, K, Ty) k##T,
  RETC_FOR_EACH_ATTR(RETC_X)
#undef RETC_X
};

/// The text key ("out_dim").
absl::string_view attr_key_name(AttrKey k);
std::optional<AttrKey> parse_attr_key(absl::string_view s);
/// The index of the key's type in AttrValue.
size_t attr_type_index(AttrKey k);
/// The key's type in words, for messages ("a dim", "an int list").
absl::string_view attr_type_name(AttrKey k);

/// The tags: `attr::Axis{d}` holds a value (to build Attrs from), and
/// `attr::Axis` names the key and type (to read one).
namespace attr {
#define RETC_X(T, K, Ty)                           \
  struct T {                                       \
    using type = Ty;                               \
    static constexpr AttrKey kKey = AttrKey::k##T; \
    type value;                                    \
  };
RETC_FOR_EACH_ATTR(RETC_X)
#undef RETC_X

template <class A>
struct Default {};
#define RETC_X(T, V)                    \
  template <>                           \
  struct Default<T> {                   \
    static constexpr T::type value = V; \
  };
RETC_FOR_EACH_ATTR_DEFAULT(RETC_X)
#undef RETC_X

template <class A>
concept Tag = requires {
  typename A::type;
  { A::kKey } -> std::convertible_to<AttrKey>;
};
template <class A>
concept Defaulted = Tag<A> && requires {
  Default<A>::value;
};
}  // namespace attr

/// [[noreturn]] internal error: a required attribute is missing (the
/// verifier guarantees it is not, so this is a compiler bug).
[[noreturn]] void missing_attr(AttrKey k);

/// Node attributes, in insertion order (printing and emission follow it).
class Attrs {
 public:
  Attrs() = default;
  /// `Attrs{attr::Axis{d}, attr::OutDim{o}}`.
  template <attr::Tag... A>
  requires(sizeof...(A) > 0) Attrs(A... a) {  // NOLINT: implicit, for braced lists at call sites
    (set<A>(std::move(a.value)), ...);
  }

  template <attr::Tag A>
  Attrs& set(typename A::type v) {
    set(A::kKey, AttrValue(std::move(v)));
    return *this;
  }
  /// The value, or null when absent.
  template <attr::Tag A>
  const typename A::type* find() const {
    const AttrValue* v = find(A::kKey);
    return v ? std::get_if<typename A::type>(v) : nullptr;
  }
  template <attr::Tag A>
  bool has() const {
    return find<A>() != nullptr;
  }
  /// The value of a required attribute, or of a defaulted one (its default
  /// when absent). Reading an absent required one is a compiler bug.
  template <attr::Tag A>
  auto get() const
      -> std::conditional_t<attr::Defaulted<A>, typename A::type, const typename A::type&> {
    const typename A::type* v = find<A>();
    if constexpr (attr::Defaulted<A>) {
      return v ? *v : attr::Default<A>::value;
    } else {
      if (!v) missing_attr(A::kKey);
      return *v;
    }
  }

  /// By key, for the text format and the verifier.
  void set(AttrKey key, AttrValue v);
  const AttrValue* find(AttrKey key) const;
  const std::vector<std::pair<AttrKey, AttrValue>>& items() const { return items_; }
  bool operator==(const Attrs&) const = default;

 private:
  std::vector<std::pair<AttrKey, AttrValue>> items_;
};

}  // namespace retc::ir
