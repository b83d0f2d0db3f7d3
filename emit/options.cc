#include "emit/options.h"

#include <cmath>
#include <stdexcept>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/format.h"

namespace retc {
namespace {

ModelOption make_option(std::string name, ModelOption::Type type, OptionValue value,
                        std::string help) {
  ModelOption o;
  o.name = std::move(name);
  o.type = type;
  o.default_value = std::move(value);
  o.help = std::move(help);
  return o;
}

std::string format_bound(double v, ModelOption::Type type) {
  return type == ModelOption::Type::kInt ? absl::StrCat(static_cast<int64_t>(v))
                                         : ir::format_double(v);
}

// "at least 1", "at most 8", "0 to 1", or "" (unbounded).
std::string describe_range(const ModelOption& o) {
  const std::optional<double> lo = lower_bound(o), hi = upper_bound(o);
  if (lo && hi) return absl::StrCat(format_bound(*lo, o.type), " to ", format_bound(*hi, o.type));
  if (lo) return absl::StrCat("at least ", format_bound(*lo, o.type));
  if (hi) return absl::StrCat("at most ", format_bound(*hi, o.type));
  return "";
}

}  // namespace

std::optional<double> lower_bound(const ModelOption& o) {
  const double open = o.type == ModelOption::Type::kInt
                          ? static_cast<double>(std::numeric_limits<int64_t>::min())
                          : -std::numeric_limits<double>::infinity();
  if (o.min == open) return std::nullopt;
  return o.min;
}

std::optional<double> upper_bound(const ModelOption& o) {
  const double open = o.type == ModelOption::Type::kInt
                          ? static_cast<double>(std::numeric_limits<int64_t>::max())
                          : std::numeric_limits<double>::infinity();
  if (o.max == open) return std::nullopt;
  return o.max;
}

ModelOption bool_option(std::string name, bool default_value, std::string help) {
  return make_option(std::move(name), ModelOption::Type::kBool, default_value, std::move(help));
}

ModelOption int_option(std::string name, int64_t default_value, std::string help, int64_t min,
                       int64_t max) {
  ModelOption o =
      make_option(std::move(name), ModelOption::Type::kInt, default_value, std::move(help));
  o.min = static_cast<double>(min);
  o.max = static_cast<double>(max);
  return o;
}

ModelOption float_option(std::string name, double default_value, std::string help, double min,
                         double max) {
  ModelOption o =
      make_option(std::move(name), ModelOption::Type::kFloat, default_value, std::move(help));
  o.min = min;
  o.max = max;
  return o;
}

ModelOption string_option(std::string name, std::string default_value, std::string help) {
  return make_option(std::move(name), ModelOption::Type::kString, std::move(default_value),
                     std::move(help));
}

ModelOption enum_option(std::string name, std::string default_value,
                        std::vector<std::string> choices, std::string help) {
  ModelOption o = make_option(std::move(name), ModelOption::Type::kEnum, std::move(default_value),
                              std::move(help));
  o.choices = std::move(choices);
  return o;
}

std::string describe_type(const ModelOption& o) {
  switch (o.type) {
    case ModelOption::Type::kBool:
      return "bool (true or false)";
    case ModelOption::Type::kInt:
    case ModelOption::Type::kFloat: {
      const std::string range = describe_range(o);
      return absl::StrCat(o.type == ModelOption::Type::kInt ? "int" : "float",
                          range.empty() ? "" : ", ", range);
    }
    case ModelOption::Type::kString:
      return "string";
    case ModelOption::Type::kEnum:
      return absl::StrCat("one of: ", absl::StrJoin(o.choices, ", "));
  }
  return "";
}

std::string format_option_value(const OptionValue& v, ModelOption::Type type) {
  if (const bool* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const int64_t* i = std::get_if<int64_t>(&v)) return absl::StrCat(*i);
  if (const double* d = std::get_if<double>(&v)) return ir::format_double(*d);
  const std::string& s = std::get<std::string>(v);
  return type == ModelOption::Type::kEnum ? s : ir::quote(s);
}

OptionValues::OptionValues(const std::vector<ModelOption>& options) {
  for (const ModelOption& o : options) entries_.emplace_back(o, o.default_value);
}

const OptionValue& OptionValues::get(absl::string_view name, ModelOption::Type type) const {
  for (const auto& [o, v] : entries_) {
    if (o.name != name) continue;
    const bool same = o.type == type ||
                      (type == ModelOption::Type::kString && o.type == ModelOption::Type::kEnum);
    if (!same) {
      throw std::logic_error(absl::StrCat("the model reads its option '", name,
                                          "' as another type than it declares (", describe_type(o),
                                          ")"));
    }
    return v;
  }
  throw std::logic_error(
      absl::StrCat("the model reads an option '", name, "' that it does not declare"));
}

bool OptionValues::get_bool(absl::string_view name) const {
  return std::get<bool>(get(name, ModelOption::Type::kBool));
}
int64_t OptionValues::get_int(absl::string_view name) const {
  return std::get<int64_t>(get(name, ModelOption::Type::kInt));
}
double OptionValues::get_float(absl::string_view name) const {
  return std::get<double>(get(name, ModelOption::Type::kFloat));
}
const std::string& OptionValues::get_string(absl::string_view name) const {
  return std::get<std::string>(get(name, ModelOption::Type::kString));
}

absl::Status OptionValues::set(absl::string_view name, absl::string_view text) {
  for (auto& [o, v] : entries_) {
    if (o.name != name) continue;
    auto bad = [&, &o = o](absl::string_view what) {
      return absl::InvalidArgumentError(
          absl::StrCat("--set ", name, "=", text, ": ", name, " ", what));
    };
    switch (o.type) {
      case ModelOption::Type::kBool:
        if (text == "true" || text == "1") {
          v = true;
        } else if (text == "false" || text == "0") {
          v = false;
        } else {
          return bad("is a bool (true or false)");
        }
        return absl::OkStatus();
      case ModelOption::Type::kInt:
      case ModelOption::Type::kFloat: {
        const bool is_int = o.type == ModelOption::Type::kInt;
        int64_t i = 0;
        double d = 0.0;
        const bool parsed =
            is_int ? absl::SimpleAtoi(text, &i) : absl::SimpleAtod(text, &d) && std::isfinite(d);
        if (is_int) d = static_cast<double>(i);
        const std::string range = describe_range(o);
        if (!parsed) {
          return bad(absl::StrCat("is ", is_int ? "an integer" : "a finite number",
                                  range.empty() ? "" : " (", range, range.empty() ? "" : ")"));
        }
        if (d < o.min || d > o.max) return bad(absl::StrCat("must be ", range));
        if (is_int) {
          v = i;
        } else {
          v = d;
        }
        return absl::OkStatus();
      }
      case ModelOption::Type::kString:
        v = std::string(text);
        return absl::OkStatus();
      case ModelOption::Type::kEnum:
        for (const std::string& c : o.choices) {
          if (c == text) {
            v = c;
            return absl::OkStatus();
          }
        }
        return bad(absl::StrCat("is one of: ", absl::StrJoin(o.choices, ", ")));
    }
  }
  std::vector<std::string> names;
  for (const auto& e : entries_) names.push_back(e.first.name);
  return absl::InvalidArgumentError(
      absl::StrCat("--set ", name, "=", text, ": no option '", name, "'",
                   names.empty() ? " (the model has no options)"
                                 : absl::StrCat(" (options: ", absl::StrJoin(names, ", "), ")")));
}

std::string OptionValues::to_string() const {
  std::vector<std::string> parts;
  for (const auto& [o, v] : entries_)
    parts.push_back(absl::StrCat(o.name, "=", format_option_value(v, o.type)));
  return absl::StrJoin(parts, " ");
}

absl::StatusOr<OptionValues> parse_option_settings(const std::vector<ModelOption>& options,
                                                   const std::vector<std::string>& settings,
                                                   absl::string_view model) {
  OptionValues values(options);
  for (const std::string& s : settings) {
    const size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(absl::StrCat("--set needs NAME=VALUE, got '", s, "'"));
    }
    absl::Status st =
        values.set(absl::string_view(s).substr(0, eq), absl::string_view(s).substr(eq + 1));
    if (!st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("model '", model, "': ", st.message()));
    }
  }
  return values;
}

}  // namespace retc
