// Locale-independent formatting shared by the IR printer and the emitter.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace retc::ir {

/// Shortest text that reads back to the same double, as Python's repr():
/// `0.1`, `1.0`, `1e-05`, `inf`, `nan`. Independent of the C locale.
std::string format_double(double v);

/// A double-quoted, ASCII-only Python string literal of the UTF-8 text `s`:
/// quotes, backslashes and control characters are escaped, non-ASCII code
/// points become \uXXXX / \UXXXXXXXX, and bytes that are not valid UTF-8
/// become U+FFFD. The result can never close the literal early.
std::string quote(absl::string_view s);

/// `s` for a one-line message: control characters (a newline in a user's
/// name) become `\n`, `\t`, `\xNN`; everything else stays as it is.
std::string printable(absl::string_view s);

/// `s` with every byte sequence that is not valid UTF-8 replaced by U+FFFD,
/// so that quote() and the parser round-trip it exactly.
std::string valid_utf8(absl::string_view s);

/// Whether `s` is a Python identifier made of ASCII letters, digits and '_'
/// (and not a keyword).
bool is_identifier(absl::string_view s);

}  // namespace retc::ir
