#include "emit/config.h"

#include <cstdio>

#include "ir/printer.h"

namespace retc::emit {

std::string ir_hash(const ir::Graph& g) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : ir::print(g)) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace retc::emit
