// The retc command line, for any table of models: the bundled `retc` binary
// and users' own model executables (cmake/RetcModel.cmake) share it.
//
//   int main(int argc, char** argv) { return retc::run_cli(argc, argv, {my_model()}); }
#pragma once

#include <vector>

#include "emit/model.h"

namespace retc {

/// Exit codes: 0 success, 1 error (bad model, failed write, RETURNN error),
/// 2 usage error, 130 interrupted (Ctrl-C).
int run_cli(int argc, char** argv, const std::vector<ModelDef>& models);

}  // namespace retc
