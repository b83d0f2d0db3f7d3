// PyValue: an ordered Python value (the literals of a RETURNN config), and
// its printer in RETURNN's own layout (returnn/util/pprint.py).
//
// Strings are written by one escaping function (ir::quote); identifiers
// (references to Dim variables, constructor names) are checked when the
// value is made, so no value can close a string or inject code.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace retc::emit {

class PyValue {
 public:
  enum class Kind {
    kNone,
    kBool,
    kInt,
    kFloat,
    kStr,
    kList,
    kTuple,
    kSet,
    kDict,
    kMap,
    kRef,
    kCall,
    kBinOp
  };
  using Items = std::vector<std::pair<std::string, PyValue>>;

  PyValue() = default;  // None
  PyValue(bool b);      // NOLINT: implicit, like Python literals
  PyValue(int v) : PyValue(static_cast<int64_t>(v)) {}
  PyValue(int64_t v);
  PyValue(double v);
  PyValue(const char* s) : PyValue(std::string(s)) {}
  PyValue(std::string s);

  static PyValue none() { return PyValue(); }
  static PyValue list(std::vector<PyValue> items);
  static PyValue tuple(std::vector<PyValue> items);
  /// `{a, b}` (`set()` when empty): RETURNN's out_shape.
  static PyValue set_of(std::vector<PyValue> items);
  /// A dict with string keys, in the given order.
  static PyValue dict(Items items = {});
  /// A dict with any keys (e.g. tuples: RETURNN's epoch_wise_filter), in the given order.
  static PyValue map(std::vector<std::pair<PyValue, PyValue>> entries);
  /// A reference to a Python variable. `name` must be an identifier (checked).
  static PyValue ref(std::string name);
  /// `func(args..., key=value...)`; keys must be identifiers, `func` an
  /// identifier or `name.attr` (a method of a variable, e.g. `h_dim.copy`).
  static PyValue call(std::string func, std::vector<PyValue> args, Items kwargs = {});
  /// `lhs op rhs` with op one of + - * //.
  static PyValue binop(PyValue lhs, std::string op, PyValue rhs);

  Kind kind() const { return kind_; }
  /// For dicts: appends (or replaces) `key`.
  PyValue& set(std::string key, PyValue v);
  /// Adds an entry whose key the caller knows is new (O(1); set() searches).
  PyValue& append(std::string key, PyValue v);
  const PyValue* get(absl::string_view key) const;
  const Items& items() const { return items_; }
  const std::vector<PyValue>& elements() const { return elements_; }
  bool operator==(const PyValue&) const = default;

  /// Single-line Python source (Python's repr, but strings in double quotes).
  std::string repr() const;

 private:
  friend class Printer;
  Kind kind_ = Kind::kNone;
  bool b_ = false;
  int64_t i_ = 0;
  double f_ = 0.0;
  std::string s_;                  // str value, ref/call name, binop operator
  std::vector<PyValue> elements_;  // map: key, value, key, value, ...
  Items items_;
};

/// `name = value` in RETURNN's pprint layout: a value whose estimated length
/// is at most 120 characters stays on one line, otherwise containers open one
/// item per line, indented by two spaces. Ends with a newline.
std::string format_assignment(const std::string& name, const PyValue& value);

}  // namespace retc::emit
