// libFuzzer target: the IR text parser. Any input either fails with a status
// or parses to a graph whose printed form parses back to the same graph.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto g = retc::ir::parse(text, "fuzz.ir");
  if (!g.ok()) return 0;
  (void)retc::ir::verify(*g);
  std::string printed = retc::ir::print(*g);
  auto again = retc::ir::parse(printed, "printed.ir");
  if (!again.ok() || retc::ir::print(*again) != printed) std::abort();
  std::string debug = retc::ir::print(*g, {retc::ir::PrintMode::kDebug, std::nullopt});
  auto from_debug = retc::ir::parse(debug, "debug.ir");
  if (!from_debug.ok() || !retc::ir::equivalent(*from_debug, *g)) std::abort();
  return 0;
}
