#include "emit/torch/helpers.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "emit/torch/helpers_py.h"

namespace retc::emit::torch {
namespace {

bool is_identifier_char(char c) { return absl::ascii_isalnum(c) || c == '_'; }

// Whether `text` names `name` as a whole word.
bool mentions(absl::string_view text, absl::string_view name) {
  for (size_t pos = text.find(name); pos != absl::string_view::npos;
       pos = text.find(name, pos + 1)) {
    const size_t end = pos + name.size();
    if ((pos == 0 || !is_identifier_char(text[pos - 1])) &&
        (end == text.size() || !is_identifier_char(text[end])))
      return true;
  }
  return false;
}

}  // namespace

std::string used_helpers(absl::string_view code) {
  struct Helper {
    std::string name;
    absl::string_view text;
  };
  std::vector<Helper> helpers;
  for (absl::string_view block : absl::StrSplit(absl::string_view(kTorchHelpersPy), "\n\n\n")) {
    block = absl::StripLeadingAsciiWhitespace(block);
    absl::string_view head = block;
    if (absl::StartsWith(head, "\"\"\"")) continue;  // the file's docstring
    for (absl::string_view prefix : {"def ", "class "}) absl::ConsumePrefix(&head, prefix);
    size_t end = 0;
    while (end < head.size() && is_identifier_char(head[end])) ++end;
    helpers.push_back({std::string(head.substr(0, end)), block});
  }
  std::vector<bool> used(helpers.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < helpers.size(); ++i) {
      if (used[i]) continue;
      bool wanted = mentions(code, helpers[i].name);
      for (size_t j = 0; j < helpers.size() && !wanted; ++j) {
        wanted = used[j] && j != i && mentions(helpers[j].text, helpers[i].name);
      }
      if (wanted) used[i] = changed = true;
    }
  }
  std::string out;
  for (size_t i = 0; i < helpers.size(); ++i) {
    if (used[i]) absl::StrAppend(&out, out.empty() ? "\n" : "\n\n\n", helpers[i].text);
  }
  return out;
}

}  // namespace retc::emit::torch
