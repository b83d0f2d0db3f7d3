// Source locations of user code, captured with std::source_location.
#pragma once

#include <cstdint>
#include <string>
#include <version>
#if __cpp_lib_source_location  // not with clang 14 + libstdc++ (the fuzz build)
#include <source_location>
#endif

namespace retc::ir {

/// Where in the user's model code a node, param or module was created.
/// Example: `SourceLoc::from(std::source_location::current())`.
struct SourceLoc {
  std::string file;
  uint32_t line = 0;
  uint32_t column = 0;

#if __cpp_lib_source_location
  static SourceLoc from(const std::source_location& loc) {
    return SourceLoc{loc.file_name(), static_cast<uint32_t>(loc.line()),
                     static_cast<uint32_t>(loc.column())};
  }
#endif
  bool known() const { return !file.empty(); }
  /// `file:line:col`, or `<unknown>`.
  std::string str() const {
    if (!known()) return "<unknown>";
    return file + ":" + std::to_string(line) + ":" + std::to_string(column);
  }
  bool operator==(const SourceLoc&) const = default;
};

}  // namespace retc::ir
