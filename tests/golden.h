// Golden files: compare text with tests/golden/NAME; RETC_UPDATE_GOLDENS=1
// rewrites the file instead (review the diff before committing).
#pragma once

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace retc::testing {

// tests/golden of the source tree (golden_dir.cc).
const char* golden_dir();

inline void check_golden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(golden_dir()) + "/" + name;
  const char* update = std::getenv("RETC_UPDATE_GOLDENS");
  if (update && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << actual;
    WARN("rewrote golden " << path);
    return;
  }
  std::ifstream in(path, std::ios::binary);
  INFO("golden file " << path << " (RETC_UPDATE_GOLDENS=1 rewrites it)");
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK(ss.str() == actual);
}

}  // namespace retc::testing
