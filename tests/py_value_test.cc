// Unit tests of the Python-literal writer: escaping and RETURNN's layout.
#include "emit/py_value.h"

#include <catch2/catch.hpp>

#include "ir/format.h"

namespace retc::emit {
namespace {

TEST_CASE("strings are escaped so they never close the literal") {
  CHECK(ir::quote("plain") == "\"plain\"");
  CHECK(ir::quote("a\"b") == "\"a\\\"b\"");
  CHECK(ir::quote("back\\slash") == "\"back\\\\slash\"");
  CHECK(ir::quote("new\nline\r\t") == "\"new\\nline\\r\\t\"");
  CHECK(ir::quote(std::string("nul\0x", 5)) == "\"nul\\x00x\"");
  CHECK(ir::quote("\x7f") == "\"\\x7f\"");
  CHECK(ir::quote("caf\u00e9") == "\"caf\\u00e9\"");
  CHECK(ir::quote("\u2603") == "\"\\u2603\"");
  CHECK(ir::quote("\U0001F600") == "\"\\U0001f600\"");
  CHECK(ir::quote("bad\xff") == "\"bad\\ufffd\"");
  CHECK(ir::quote("\xed\xa0\x80") == "\"\\ufffd\\ufffd\\ufffd\"");  // a surrogate is not UTF-8
  CHECK(ir::quote("'''\"\"\"") == "\"'''\\\"\\\"\\\"\"");
  // Whatever goes in, the output is ASCII and its only unescaped quotes are the ends.
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  std::string q = ir::quote(all);
  for (size_t i = 1; i + 1 < q.size(); ++i) {
    REQUIRE(static_cast<unsigned char>(q[i]) < 0x80);
    REQUIRE(q[i] != '\n');
    if (q[i] == '"') REQUIRE(q[i - 1] == '\\');
  }
}

TEST_CASE("identifiers are checked") {
  CHECK(ir::is_identifier("time_dim"));
  CHECK(ir::is_identifier("_x1"));
  CHECK(!ir::is_identifier("1x"));
  CHECK(!ir::is_identifier("a-b"));
  CHECK(!ir::is_identifier(""));
  CHECK(!ir::is_identifier("import"));
  CHECK(!ir::is_identifier("x;y"));
  CHECK(!ir::is_identifier("h\u00e9"));
}

TEST_CASE("floats print like Python's repr, independent of the locale") {
  CHECK(ir::format_double(0.1) == "0.1");
  CHECK(ir::format_double(1.0) == "1.0");
  CHECK(ir::format_double(0.0) == "0.0");
  CHECK(ir::format_double(-2.5) == "-2.5");
  CHECK(ir::format_double(1e-05) == "1e-05");
  CHECK(ir::format_double(0.0001) == "0.0001");
  CHECK(ir::format_double(1e16) == "1e+16");
  CHECK(ir::format_double(123456789.0) == "123456789.0");
  CHECK(PyValue(1.0 / 0.0).repr() == "float(\"inf\")");
}

TEST_CASE("values print in RETURNN's pprint layout") {
  CHECK(PyValue().repr() == "None");
  CHECK(PyValue(true).repr() == "True");
  CHECK(PyValue(int64_t{-3}).repr() == "-3");
  CHECK(PyValue::tuple({1}).repr() == "(1,)");
  CHECK(PyValue::list({}).repr() == "[]");
  CHECK(PyValue::call("FeatureDim", {"in", 9}).repr() == "FeatureDim(\"in\", 9)");
  CHECK(PyValue::binop(4, "*", PyValue::ref("h_dim")).repr() == "4 * h_dim");

  PyValue small = PyValue::dict({{"class", "copy"}, {"from", "data"}});
  CHECK(format_assignment("x", small) == "x = {\"class\": \"copy\", \"from\": \"data\"}\n");

  PyValue big = PyValue::dict({
      {"a", PyValue::dict({{"class", "linear"}, {"from", "data"}})},
      {"b", PyValue::dict({{"class", "copy"},
                           {"from", PyValue::list({"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                                                   "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
                                                   "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"})}})},
  });
  CHECK(
      format_assignment("network", big) ==
      "network = {\n"
      "  \"a\": {\"class\": \"linear\", \"from\": \"data\"},\n"
      "  \"b\": {\n"
      "    \"class\": \"copy\",\n"
      "    \"from\": [\n"
      "      \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\n"
      "      \"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\"\n"
      "    ]\n"
      "  }\n"
      "}\n");
}

TEST_CASE("dict keys are escaped and set() keeps insertion order") {
  PyValue d = PyValue::dict();
  d.set("k\"ey", 1).set("b", 2).set("k\"ey", 3);
  CHECK(d.repr() == "{\"k\\\"ey\": 3, \"b\": 2}");
  REQUIRE(d.get("b"));
  CHECK(*d.get("b") == PyValue(2));
}

}  // namespace
}  // namespace retc::emit
