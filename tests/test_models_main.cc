// retc CLI over the test-only models of tests/test_models.cc.
#include "tests/test_models.h"
#include "tools/cli.h"

int main(int argc, char** argv) { return retc::run_cli(argc, argv, retc::testing::test_models()); }
