// Model options: typed knobs a model declares with a default and a one-line
// help (as Halide generators declare GeneratorParams), set on the command
// line without rebuilding (`retc compile conformer-ctc --set blocks=6`).
//
//   def.options = {int_option("blocks", 2, "conformer blocks", 1),
//                  float_option("dropout", 0.1, "dropout rate", 0.0, 1.0)};
//   def.configure = [](ModelDef& d, const OptionValues& o) {
//     d.build = [blocks = o.get_int("blocks")](nn::Builder& b) { ... };
//   };
//
// A value is parsed and range-checked once, before the model runs: a wrong
// name, type or range is an InvalidArgument naming the option and what it
// takes.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace retc {

/// An option's value: a bool, an integer, a float or a string (enums are strings).
using OptionValue = std::variant<bool, int64_t, double, std::string>;

struct ModelOption {
  enum class Type { kBool, kInt, kFloat, kString, kEnum };
  std::string name;
  Type type = Type::kInt;
  OptionValue default_value;
  std::string help;
  /// Ints and floats: the allowed range, both ends included.
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  /// Enums: the allowed values.
  std::vector<std::string> choices;
};

ModelOption bool_option(std::string name, bool default_value, std::string help);
ModelOption int_option(std::string name, int64_t default_value, std::string help,
                       int64_t min = std::numeric_limits<int64_t>::min(),
                       int64_t max = std::numeric_limits<int64_t>::max());
ModelOption float_option(std::string name, double default_value, std::string help,
                         double min = -std::numeric_limits<double>::infinity(),
                         double max = std::numeric_limits<double>::infinity());
ModelOption string_option(std::string name, std::string default_value, std::string help);
ModelOption enum_option(std::string name, std::string default_value,
                        std::vector<std::string> choices, std::string help);

/// An int or float option's lower and upper bound; none where it is open
/// (int_option's and float_option's defaults).
std::optional<double> lower_bound(const ModelOption& o);
std::optional<double> upper_bound(const ModelOption& o);

/// What an option takes, for listings and errors: "int, at least 1",
/// "float, 0 to 1", "bool (true or false)", "one of: a, b".
std::string describe_type(const ModelOption& o);

/// A value as the config header and listings write it: `6`, `0.2`, `true`,
/// an enum's name, a string in double quotes.
std::string format_option_value(const OptionValue& v, ModelOption::Type type);

/// The values of a model's options, every declared one, in declaration order.
class OptionValues {
 public:
  OptionValues() = default;
  /// The defaults of `options`.
  explicit OptionValues(const std::vector<ModelOption>& options);

  /// The value of a declared option of that type. A name the model did not
  /// declare, or another type, is the model's bug: std::logic_error naming it.
  bool get_bool(absl::string_view name) const;
  int64_t get_int(absl::string_view name) const;
  double get_float(absl::string_view name) const;
  /// Strings and enums.
  const std::string& get_string(absl::string_view name) const;

  /// Parses `text` for the option `name` and sets it: InvalidArgument (a
  /// usage error) naming the option and what it takes if `name` is not
  /// declared or `text` is not of its type or in its range.
  absl::Status set(absl::string_view name, absl::string_view text);

  /// "blocks=2 model_dim=64 ..." in declaration order; empty without options.
  std::string to_string() const;
  const std::vector<std::pair<ModelOption, OptionValue>>& entries() const { return entries_; }

 private:
  const OptionValue& get(absl::string_view name, ModelOption::Type type) const;
  std::vector<std::pair<ModelOption, OptionValue>> entries_;
};

/// Parses `--set` arguments, each "NAME=VALUE", into the values of `options`
/// (the defaults where not set; a later setting wins). `model` names the
/// model in errors.
absl::StatusOr<OptionValues> parse_option_settings(const std::vector<ModelOption>& options,
                                                   const std::vector<std::string>& settings,
                                                   absl::string_view model);

}  // namespace retc
