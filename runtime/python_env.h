// Finds the Python virtual environment with RETURNN and starts the embedded
// interpreter in it. One interpreter per process.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace retc::runtime {

/// The venv: $RETC_VENV, else $XDG_CACHE_HOME/retc/venv, else
/// $HOME/.cache/retc/venv (the setup script uses the same rule).
std::string default_venv_path();

/// Checks that `venv` holds a Python of the version retc was built against.
absl::Status check_venv(const std::string& venv);

/// Starts the interpreter as if `venv/bin/python` ran (so the venv's
/// site-packages are on sys.path), once; later calls are no-ops.
absl::Status start_python();

/// Before the process exits, if the interpreter was started: Python's atexit
/// handlers, which the process never reaches otherwise (the interpreter is not
/// finalized: TensorFlow's and torch's threads do not survive that). They
/// remove what the libraries made for the run alone, e.g. multiprocessing's
/// pymp-* directory in $TMPDIR.
void run_exit_handlers();

}  // namespace retc::runtime
