// A warm server for retc's commands that run RETURNN (`retc serve`): a
// process that has started Python and imported RETURNN and TensorFlow (or
// torch) once, and forks a child for each command, which then starts in a
// fraction of a second instead of the 2-3 s of CPU those imports take.
//
// Opt-in: RETC_SERVER names a folder. A command that runs RETURNN (check,
// train, eval, forward, search, export, convert-checkpoint) connects to the
// server in that folder for its binary, its backend and the environment that
// the imports read (OMP_*, TF_*, CUDA_*, ...; another value is another
// server). Where none answers, the command starts one in the background for
// the next command and runs in its own process, as without RETC_SERVER.
//
// The command's child runs the same code as a command without a server: the
// client sends its argv, environment, working folder, umask and its stdin,
// stdout and stderr (SCM_RIGHTS); it forwards the signals it gets (Ctrl-C,
// SIGTERM, SIGHUP, SIGQUIT, SIGUSR1/2) and exits as the child did. A client
// killed by SIGKILL ends its child with SIGKILL; a server that dies ends its
// children so (PR_SET_PDEATHSIG). What differs is the process: the child's
// PID is not the client's, and its parent is the server.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace retc::runtime {

/// $RETC_SERVER, or "" (no server).
std::string server_dir();

/// The backend whose server runs `argv` ("tf", "torch"), or "" where the
/// command runs no RETURNN (compile, dump-ir, ..., --help): those run here.
std::string server_backend(int argc, char** argv);

/// Runs the command in a server's child where RETC_SERVER is set and the
/// server for this binary, `backend` and environment answers; nullopt where
/// the command is to run in this process (starting a server for the next
/// command where none was up).
std::optional<int> run_in_server(int argc, char** argv, const std::string& backend);

/// How a server's child runs a command (the CLI, as without a server).
using CommandFn = std::function<int(int argc, char** argv)>;

/// The server for `backend` in `dir`, in this process, until `idle_seconds`
/// pass without a command or `retc serve --stop`. OK at once where another
/// process serves the same binary, backend and environment there.
absl::Status serve(const std::string& dir, const std::string& backend, double idle_seconds,
                   const CommandFn& run);

/// Starts the servers for `backends` in `dir` in the background and waits
/// until each answers; one line per server on `log` (its PID).
absl::Status start_servers(const std::string& dir, const std::vector<std::string>& backends,
                           double idle_seconds, std::string& log);

/// Stops every server in `dir` (after the commands they run end); how many.
absl::StatusOr<int> stop_servers(const std::string& dir);

}  // namespace retc::runtime
