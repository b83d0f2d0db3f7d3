// CodeWriter: generated Python code, line by line, with scoped indentation (as
// MLIR's raw_indented_ostream and Halide's CodeGen_C::open_scope). Values in
// the code are written by PyValue (one escaping path: strings by ir::quote,
// names checked); the writer owns only the layout.
//
//   CodeWriter w;
//   {
//     auto body = w.block("def get_model(**_kwargs):");
//     w.line("return Model()");
//   }
//   // "def get_model(**_kwargs):\n    return Model()\n"
#pragma once

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace retc::emit {

class CodeWriter {
 public:
  /// Indents while alive (4 spaces per level).
  class Scope {
   public:
    explicit Scope(CodeWriter& w) : w_(&w) { ++w_->depth_; }
    Scope(Scope&& o) noexcept : w_(std::exchange(o.w_, nullptr)) {}
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    Scope& operator=(Scope&&) = delete;
    ~Scope() {
      if (w_) --w_->depth_;
    }

   private:
    CodeWriter* w_;
  };

  /// Starts at `depth` levels (a function's body inside a class: 2).
  explicit CodeWriter(int depth = 0) : depth_(depth) {}

  /// One line at the current indentation: its parts concatenated.
  template <class... Parts>
  void line(const Parts&... parts) {
    out_.append(4 * depth_, ' ');
    absl::StrAppend(&out_, parts...);
    out_ += '\n';
  }
  /// An empty line.
  void blank() { out_ += '\n'; }
  /// `header` (ending in ':'), then what follows is indented until the
  /// returned scope ends.
  template <class... Parts>
  [[nodiscard]] Scope block(const Parts&... header) {
    line(header...);
    return Scope(*this);
  }
  /// Text as it is (already laid out: a helper's definition).
  void raw(absl::string_view text) { out_.append(text.data(), text.size()); }

  const std::string& str() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
  int depth_;
};

}  // namespace retc::emit
