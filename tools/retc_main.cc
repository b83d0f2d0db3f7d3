// The `retc` binary: the CLI over the bundled models.
#include "configs/bundled.h"
#include "tools/cli.h"

int main(int argc, char** argv) { return retc::run_cli(argc, argv, retc::configs::bundled_models); }
