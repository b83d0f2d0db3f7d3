// Pass tests as files (like MLIR's): tests/passes/NAME.ir holds IR text and a
// `# RUN: pass1,pass2` line; NAME.expected is the IR after those passes, or
// NAME.error a substring of the expected error. RETC_UPDATE_GOLDENS=1
// rewrites the .expected files.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "compiler/pipeline.h"
#include "emit/target.h"
#include "emit/tf/target.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "tests/golden.h"

namespace retc {
namespace {

std::string read(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST_CASE("pass tests in tests/passes") {
  const std::filesystem::path dir =
      std::filesystem::path(retc::testing::golden_dir()).parent_path() / "passes";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".ir") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 10);
  for (const auto& file : files) {
    SECTION(file.filename().string()) {
      const std::string text = read(file);
      std::vector<std::string> passes;
      for (absl::string_view line : absl::StrSplit(text, '\n')) {
        if (absl::StartsWith(line, "# RUN: "))
          passes = absl::StrSplit(line.substr(7), ',', absl::SkipEmpty());
      }
      REQUIRE(!passes.empty());
      auto error_file = file;
      error_file.replace_extension(".error");
      absl::Status status;
      std::string result;
      auto g = ir::parse(text, file.filename().string());
      if (!g.ok()) {
        status = g.status();
      } else {
        // The names of the neutral passes and the TF target's.
        auto named = find_passes(emit::pipeline(emit::tf::target()), passes);
        status = named.ok() ? run_passes(*g, *named) : named.status();
        if (status.ok()) result = ir::print(*g);
      }
      if (std::filesystem::exists(error_file)) {
        INFO(file.filename().string());
        REQUIRE(!status.ok());
        CHECK_THAT(std::string(status.message()), Catch::Contains(read(error_file)));
      } else {
        if (!status.ok()) FAIL(file.filename().string() << ": " << status.message());
        auto expected = file;
        expected.replace_extension(".expected");
        testing::check_golden("../passes/" + expected.filename().string(), result);
      }
    }
  }
}

}  // namespace
}  // namespace retc
