// retc CLI over the test-only models of tests/test_models.cc and the
// returnn_common counterparts of tests/returnn_common/models.cc.
#include "tests/returnn_common/models.h"
#include "tests/test_models.h"
#include "tools/cli.h"

namespace {
std::vector<retc::ModelDef> models() {
  std::vector<retc::ModelDef> models = retc::testing::test_models();
  for (retc::ModelDef& m : retc::testing::returnn_common_models()) models.push_back(std::move(m));
  return models;
}
}  // namespace

int main(int argc, char** argv) { return retc::run_cli(argc, argv, models); }
