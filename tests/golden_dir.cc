// The golden files' folder (tests/golden of this source tree), compiled on
// its own: the one unit-test source whose flags name the tree's path, so that
// a fresh clone in another folder (CI's) finds the others' objects in ccache
// (their unity sources, with the path among their flags, missed there and were
// compiled again each time).
#include "tests/golden.h"

namespace retc::testing {

const char* golden_dir() { return RETC_GOLDEN_DIR; }

}  // namespace retc::testing
