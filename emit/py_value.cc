#include "emit/py_value.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "ir/format.h"

namespace retc::emit {
namespace {

[[noreturn]] void internal_error(const std::string& what) {
  std::fprintf(stderr, "retc: internal error: %s\n", what.c_str());
  std::abort();
}

void require_identifier(const std::string& s) {
  if (!ir::is_identifier(s)) internal_error("not a Python identifier: " + ir::quote(s));
}

// `name` or `name.attr`: each part an identifier.
void require_dotted_name(const std::string& s) {
  size_t dot = s.find('.');
  require_identifier(s.substr(0, dot));
  if (dot != std::string::npos) require_identifier(s.substr(dot + 1));
}

constexpr double kSimplicityLimit = 120.0;  // returnn/util/pprint.py
constexpr double kSpacing = 2.0;

}  // namespace

PyValue::PyValue(bool b) : kind_(Kind::kBool), b_(b) {}
PyValue::PyValue(int64_t v) : kind_(Kind::kInt), i_(v) {}
PyValue::PyValue(double v) : kind_(Kind::kFloat), f_(v) {}
PyValue::PyValue(std::string s) : kind_(Kind::kStr), s_(std::move(s)) {}

PyValue PyValue::list(std::vector<PyValue> items) {
  PyValue v;
  v.kind_ = Kind::kList;
  v.elements_ = std::move(items);
  return v;
}

PyValue PyValue::tuple(std::vector<PyValue> items) {
  PyValue v = list(std::move(items));
  v.kind_ = Kind::kTuple;
  return v;
}

PyValue PyValue::set_of(std::vector<PyValue> items) {
  PyValue v = list(std::move(items));
  v.kind_ = Kind::kSet;
  return v;
}

PyValue PyValue::dict(Items items) {
  PyValue v;
  v.kind_ = Kind::kDict;
  for (auto& [k, x] : items) v.set(std::move(k), std::move(x));
  return v;
}

PyValue PyValue::map(std::vector<std::pair<PyValue, PyValue>> entries) {
  PyValue v;
  v.kind_ = Kind::kMap;
  for (auto& [k, x] : entries) {
    v.elements_.push_back(std::move(k));
    v.elements_.push_back(std::move(x));
  }
  return v;
}

PyValue PyValue::ref(std::string name) {
  require_identifier(name);
  PyValue v;
  v.kind_ = Kind::kRef;
  v.s_ = std::move(name);
  return v;
}

PyValue PyValue::call(std::string func, std::vector<PyValue> args, Items kwargs) {
  require_dotted_name(func);
  for (const auto& [k, x] : kwargs) require_identifier(k);
  PyValue v;
  v.kind_ = Kind::kCall;
  v.s_ = std::move(func);
  v.elements_ = std::move(args);
  v.items_ = std::move(kwargs);
  return v;
}

PyValue PyValue::binop(PyValue lhs, std::string op, PyValue rhs) {
  if (op != "+" && op != "-" && op != "*" && op != "//") internal_error("bad operator " + op);
  PyValue v;
  v.kind_ = Kind::kBinOp;
  v.s_ = std::move(op);
  v.elements_ = {std::move(lhs), std::move(rhs)};
  return v;
}

PyValue& PyValue::set(std::string key, PyValue v) {
  if (kind_ != Kind::kDict) internal_error("set() on a non-dict");
  for (auto& [k, x] : items_) {
    if (k == key) {
      x = std::move(v);
      return *this;
    }
  }
  items_.emplace_back(std::move(key), std::move(v));
  return *this;
}

PyValue& PyValue::append(std::string key, PyValue v) {
  if (kind_ != Kind::kDict) internal_error("append() on a non-dict");
  items_.emplace_back(std::move(key), std::move(v));
  return *this;
}

const PyValue* PyValue::get(absl::string_view key) const {
  for (const auto& [k, x] : items_) {
    if (k == key) return &x;
  }
  return nullptr;
}

std::string PyValue::repr() const {
  switch (kind_) {
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return b_ ? "True" : "False";
    case Kind::kInt:
      return std::to_string(i_);
    case Kind::kFloat: {
      if (std::isnan(f_)) return "float(\"nan\")";
      if (std::isinf(f_)) return f_ > 0 ? "float(\"inf\")" : "float(\"-inf\")";
      return ir::format_double(f_);
    }
    case Kind::kStr:
      return ir::quote(s_);
    case Kind::kList:
    case Kind::kTuple: {
      bool tuple = kind_ == Kind::kTuple;
      std::string s = tuple ? "(" : "[";
      for (size_t i = 0; i < elements_.size(); ++i) {
        if (i) s += ", ";
        s += elements_[i].repr();
      }
      if (tuple && elements_.size() == 1) s += ",";
      return s + (tuple ? ")" : "]");
    }
    case Kind::kSet: {
      if (elements_.empty()) return "set()";
      std::string s = "{";
      for (size_t i = 0; i < elements_.size(); ++i) {
        if (i) s += ", ";
        s += elements_[i].repr();
      }
      return s + "}";
    }
    case Kind::kDict: {
      std::string s = "{";
      for (size_t i = 0; i < items_.size(); ++i) {
        if (i) s += ", ";
        s += ir::quote(items_[i].first) + ": " + items_[i].second.repr();
      }
      return s + "}";
    }
    case Kind::kMap: {
      std::string s = "{";
      for (size_t i = 0; i + 1 < elements_.size(); i += 2) {
        if (i) s += ", ";
        s += elements_[i].repr() + ": " + elements_[i + 1].repr();
      }
      return s + "}";
    }
    case Kind::kRef:
      return s_;
    case Kind::kCall: {
      std::string s = s_ + "(";
      bool first = true;
      for (const PyValue& a : elements_) {
        if (!first) s += ", ";
        first = false;
        s += a.repr();
      }
      for (const auto& [k, x] : items_) {
        if (!first) s += ", ";
        first = false;
        s += k + "=" + x.repr();
      }
      return s + ")";
    }
    case Kind::kBinOp:
      return elements_[0].repr() + " " + s_ + " " + elements_[1].repr();
  }
  return "None";
}

// A port of returnn/util/pprint.py's pprint() and _type_simplicity_score().
// Difference: references, calls and operators score by their text length
// (RETURNN scores unknown objects such as Dim tags as "too long", which would
// split every layer that mentions a dim over many lines).
class Printer {
 public:
  explicit Printer(std::string& out) : out_(out) {}

  static double score(const PyValue& v, double offset = 0.0) {
    switch (v.kind_) {
      case PyValue::Kind::kNone:
      case PyValue::Kind::kBool:
        return 4.0 + offset;
      case PyValue::Kind::kInt:
        return (v.i_ == 0 ? 1.0 : 1.0 + std::log10(std::fabs(static_cast<double>(v.i_)))) + offset;
      case PyValue::Kind::kStr:
        return 2.0 + static_cast<double>(v.s_.size()) + offset;
      case PyValue::Kind::kFloat:
      case PyValue::Kind::kRef:
      case PyValue::Kind::kCall:
      case PyValue::Kind::kBinOp:
        return static_cast<double>(v.repr().size()) + offset;
      case PyValue::Kind::kList:
      case PyValue::Kind::kTuple:
      case PyValue::Kind::kSet:
        for (const PyValue& x : v.elements_) {
          offset = score(x, offset + kSpacing);
          if (offset > kSimplicityLimit) break;
        }
        return offset;
      case PyValue::Kind::kDict:
        for (const auto& [k, x] : v.items_) {
          offset = score(x, offset + 10.0 + kSpacing);
          if (offset > kSimplicityLimit) break;
        }
        return offset;
      case PyValue::Kind::kMap:
        for (size_t i = 0; i + 1 < v.elements_.size(); i += 2) {
          offset = score(v.elements_[i + 1], score(v.elements_[i], offset) + kSpacing);
          if (offset > kSimplicityLimit) break;
        }
        return offset;
    }
    return kSimplicityLimit + 1.0 + offset;
  }

  void print(const PyValue& obj, std::string prefix, std::string postfix, std::string line_prefix,
             std::string line_postfix) {
    if (line_postfix.find('\n') != std::string::npos && score(obj) <= kSimplicityLimit) {
      prefix = line_prefix + prefix;
      line_prefix.clear();
      postfix += line_postfix;
      line_postfix.clear();
    }
    const bool multi_line = line_postfix.find('\n') != std::string::npos;
    auto sub = [&](const PyValue& v, std::string prefix_, std::string postfix_, bool inc_indent) {
      if (!multi_line && !postfix_.empty() && postfix_.back() == ',') postfix_ += " ";
      print(v, std::move(prefix_), std::move(postfix_),
            multi_line ? line_prefix + (inc_indent ? "  " : "") : "", line_postfix);
    };
    auto emit = [&](const std::string& s, bool is_end) {
      out_ += line_prefix;
      out_ += prefix;
      out_ += s;
      if (is_end) out_ += postfix;
      out_ += line_postfix;
      prefix.clear();
    };
    auto emit_elements = [&]() {
      for (size_t i = 0; i < obj.elements_.size(); ++i) {
        sub(obj.elements_[i], "", i + 1 < obj.elements_.size() ? "," : "", true);
      }
    };
    switch (obj.kind_) {
      case PyValue::Kind::kList:
        if (obj.elements_.empty()) return emit("[]", true);
        emit("[", false);
        emit_elements();
        return emit("]", true);
      case PyValue::Kind::kSet:
        if (obj.elements_.empty()) return emit("set()", true);
        emit("{", false);
        emit_elements();
        return emit("}", true);
      case PyValue::Kind::kTuple:
        if (obj.elements_.empty()) return emit("()", true);
        if (obj.elements_.size() == 1) {
          return sub(obj.elements_[0], prefix + "(", ",)" + postfix, false);
        }
        emit("(", false);
        emit_elements();
        return emit(")", true);
      case PyValue::Kind::kDict:
        if (obj.items_.empty()) return emit("{}", true);
        emit("{", false);
        for (size_t i = 0; i < obj.items_.size(); ++i) {
          sub(obj.items_[i].second, ir::quote(obj.items_[i].first) + ": ",
              i + 1 < obj.items_.size() ? "," : "", true);
        }
        return emit("}", true);
      case PyValue::Kind::kMap:
        if (obj.elements_.empty()) return emit("{}", true);
        emit("{", false);
        for (size_t i = 0; i + 1 < obj.elements_.size(); i += 2) {
          sub(obj.elements_[i + 1], obj.elements_[i].repr() + ": ",
              i + 2 < obj.elements_.size() ? "," : "", true);
        }
        return emit("}", true);
      case PyValue::Kind::kNone:
      case PyValue::Kind::kBool:
      case PyValue::Kind::kInt:
      case PyValue::Kind::kFloat:
      case PyValue::Kind::kStr:
      case PyValue::Kind::kRef:
      case PyValue::Kind::kCall:
      case PyValue::Kind::kBinOp:
        return emit(obj.repr(), true);
    }
  }

 private:
  std::string& out_;
};

std::string format_assignment(const std::string& name, const PyValue& value) {
  require_identifier(name);
  std::string out;
  Printer(out).print(value, name + " = ", "", "", "\n");
  return out;
}

}  // namespace retc::emit
