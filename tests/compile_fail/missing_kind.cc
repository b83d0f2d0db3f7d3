// Compiled by tests/compile_fail/check.sh with the project's compile options:
// a switch over NodeKind that misses kinds must fail to build
// (-Werror=switch), and the same switch covering every kind must build.
#include "ir/node_kind.h"

int lower(retc::ir::NodeKind k) {
  switch (k) {
#define RETC_X(E, S, F, ...)     \
  case retc::ir::NodeKind::k##E: \
    return 1;
    RETC_FOR_EACH_BINARY_KIND(RETC_X)
#ifdef RETC_COVER_ALL
    RETC_FOR_EACH_NONBINARY_KIND(RETC_X)
#endif
#undef RETC_X
  }
  return 0;
}
