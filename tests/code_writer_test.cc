// The generated-Python writer: scoped indentation, blank lines without
// indentation, raw text as it is. (A file of its own: tests/CMakeLists.txt
// finds it without a list edit.)
#include "emit/code_writer.h"

#include <catch2/catch.hpp>

namespace retc::emit {
namespace {

TEST_CASE("the code writer indents by scope and writes blank lines bare") {
  CodeWriter w;
  w.line("x = ", 1);
  {
    auto f = w.block("def f(", "a", "):");
    w.line("y = a");
    {
      auto loop = w.block("for t in range(3):");
      w.line("y = y + t");
    }
    w.blank();
    w.line("return y");
  }
  w.raw("z = 2\n");
  CHECK(w.str() ==
        "x = 1\n"
        "def f(a):\n"
        "    y = a\n"
        "    for t in range(3):\n"
        "        y = y + t\n"
        "\n"
        "    return y\n"
        "z = 2\n");
}

TEST_CASE("a code writer can start inside a block") {
  CodeWriter w(2);
  w.line("pass");
  CHECK(w.take() == "        pass\n");
}

}  // namespace
}  // namespace retc::emit
