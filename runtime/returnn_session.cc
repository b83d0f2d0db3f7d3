#include "runtime/returnn_session.h"

#include <fcntl.h>
#include <pybind11/embed.h>
#include <pybind11/stl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <tuple>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "runtime/python_env.h"
#include "runtime/retc_runtime_py.h"

namespace py = pybind11;

namespace retc::runtime {
namespace {

absl::StatusOr<py::module_> runtime_module() {
  if (absl::Status s = start_python(); !s.ok()) return s;
  try {
    py::module_ sys = py::module_::import("sys");
    py::dict modules = sys.attr("modules");
    if (modules.contains("retc_runtime"))
      return py::reinterpret_borrow<py::module_>(modules["retc_runtime"]);
    py::module_ types = py::module_::import("types");
    py::module_ m = types.attr("ModuleType")("retc_runtime");
    m.attr("__file__") = "<retc_runtime>";
    modules["retc_runtime"] = m;
    m.attr("SOURCE") = kRetcRuntimePy;  // what a torchrun worker runs (train_distributed)
    py::exec(kRetcRuntimePy, m.attr("__dict__"));
    return m;
  } catch (const py::error_already_set& e) {
    return absl::InternalError(absl::StrCat("cannot load retc's Python runtime: ", e.what()));
  }
}

// While alive, file descriptor 2 (TensorFlow's native logging, Python's
// sys.stderr) writes to a log file; our own one-line errors come after.
class StderrToFile {
 public:
  explicit StderrToFile(const std::string& path) {
    std::fflush(stderr);
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    saved_ = ::dup(2);
    ::dup2(fd, 2);
    ::close(fd);
  }
  ~StderrToFile() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
  }
  StderrToFile(const StderrToFile&) = delete;
  StderrToFile& operator=(const StderrToFile&) = delete;

  /// The user's stderr while this redirects fd 2; -1 where it could not.
  int saved_fd() const { return saved_; }

 private:
  int saved_ = -1;
};

// One line naming the cause (retc_runtime.error_line: the innermost exception
// of the chain, not the traceback's last line); a run stopped by Ctrl-C or
// SIGTERM: Cancelled, with the signal's number as the payload kSignalPayload.
absl::Status python_error(const py::error_already_set& e, absl::string_view what,
                          const std::string& log_path) {
  std::string line;
  try {
    if (e.matches(PyExc_KeyboardInterrupt)) {
      int signum = SIGINT;
      if (py::hasattr(e.value(), "signum")) signum = e.value().attr("signum").cast<int>();
      absl::Status s = absl::CancelledError(
          absl::StrCat(what, ": ", signum == SIGTERM ? "stopped by SIGTERM" : "interrupted",
                       " (the finished epochs' checkpoints are kept; run it again to resume)"));
      s.SetPayload(kSignalPayload, absl::Cord(absl::StrCat(signum)));
      return s;
    }
    auto m = runtime_module();
    if (m.ok()) line = m->attr("error_line")(e.value()).cast<std::string>();
  } catch (...) {
  }
  if (line.empty()) {
    line = e.what();
    if (size_t nl = line.find('\n'); nl != std::string::npos) line.resize(nl);
  }
  return absl::InternalError(absl::StrCat(what, ": ", line, " (traceback: ", log_path, ")"));
}

// While alive, the process's SIGTERM handler is kept aside: the Python
// runtime installs its own (run_logged), this restores retc's afterwards.
class SavedSigterm {
 public:
  SavedSigterm() { ::sigaction(SIGTERM, nullptr, &saved_); }
  ~SavedSigterm() { ::sigaction(SIGTERM, &saved_, nullptr); }
  SavedSigterm(const SavedSigterm&) = delete;
  SavedSigterm& operator=(const SavedSigterm&) = delete;

 private:
  struct sigaction saved_ {};
};

void flush_python() {
  try {
    py::module_ sys = py::module_::import("sys");
    sys.attr("stdout").attr("flush")();
    sys.attr("stderr").attr("flush")();
  } catch (const py::error_already_set&) {
  }
}

std::vector<Variable> to_variables(const py::handle& list) {
  std::vector<Variable> out;
  for (py::handle item : list) {
    auto t = item.cast<py::tuple>();
    Variable v{t[0].cast<std::string>(), {}};
    for (py::handle d : t[1]) v.shape.push_back(d.cast<int64_t>());
    out.push_back(std::move(v));
  }
  return out;
}

// (last epoch, [(key, value)]) from the runtime's train functions.
TrainResult to_train_result(const py::tuple& r) {
  TrainResult out;
  out.last_epoch = r[0].cast<int64_t>();
  for (py::handle item : r[1]) {
    auto t = item.cast<py::tuple>();
    out.scores.emplace_back(t[0].cast<std::string>(), t[1].cast<double>());
  }
  return out;
}

}  // namespace

// Calls retc_runtime.run_logged(func, log_path, args...) with stderr and any
// traceback going to `log_path` and retc's SIGTERM handler restored afterwards;
// `convert` turns the Python result into T, an error becomes one line
// (python_error) that starts with `what`.
template <class T, class F, class... Args>
absl::StatusOr<T> call_logged(const char* what, const std::string& log_path, F&& convert,
                              const char* func, Args&&... args) {
  StderrToFile redirect(log_path);
  SavedSigterm sigterm;
  auto m = runtime_module();
  if (!m.ok()) return m.status();
  // A run that does not stop after a signal ends the process from Python with
  // one line (_exit_interrupted): on the user's stderr, not only in the log.
  struct UserStderr {
    py::module_& m;
    UserStderr(py::module_& m, int fd) : m(m) {
      m.attr("USER_STDERR_FD") = fd >= 0 ? py::object(py::int_(fd)) : py::none();
    }
    ~UserStderr() {
      try {
        m.attr("USER_STDERR_FD") = py::none();
      } catch (const py::error_already_set&) {
      }
    }
  } user_stderr(*m, redirect.saved_fd());
  try {
    py::tuple r = m->attr("run_logged")(func, log_path, std::forward<Args>(args)...);
    flush_python();
    return convert(r);
  } catch (const py::error_already_set& e) {
    flush_python();
    return python_error(e, what, log_path);
  }
}

absl::StatusOr<CheckResult> check_config(const std::string& config_path,
                                         const std::string& log_path) {
  return call_logged<CheckResult>(
      "RETURNN check failed", log_path,
      [](const py::tuple& r) {
        return CheckResult{to_variables(r[0]), to_variables(r[1])};
      },
      "check", config_path);
}

absl::StatusOr<CheckResult> check_torch_config(const std::string& config_path,
                                               const std::string& log_path) {
  return call_logged<CheckResult>(
      "RETURNN check failed", log_path,
      [](const py::tuple& r) {
        return CheckResult{to_variables(r[0]), {}, to_variables(r[1]), to_variables(r[2])};
      },
      "check_torch", config_path);
}

absl::StatusOr<TrainResult> train_config(const std::string& config_path,
                                         const std::string& log_path, double progress_seconds) {
  return call_logged<TrainResult>("RETURNN training failed", log_path, to_train_result, "train",
                                  config_path, progress_seconds);
}

absl::StatusOr<int> usable_gpus(const std::string& backend, const std::string& device) {
  auto m = runtime_module();
  if (!m.ok()) return m.status();
  // TensorFlow's and torch's start-up lines go to a log, kept only when the
  // probe itself failed (the message names it).
  const std::string log = (std::filesystem::temp_directory_path() /
                           absl::StrCat("retc-device-probe-", ::getpid(), ".log"))
                              .string();
  absl::StatusOr<int> gpus;
  {
    StderrToFile redirect(log);
    try {
      std::string problem = m->attr("device_problem")(backend, device).cast<std::string>();
      if (!problem.empty()) {
        gpus = absl::FailedPreconditionError(problem);
      } else {
        gpus = m->attr("gpu_count")(backend).cast<int>();
      }
    } catch (const py::error_already_set& e) {
      flush_python();
      return python_error(e, "cannot ask for the GPUs", log);
    }
  }
  std::error_code ec;
  std::filesystem::remove(log, ec);
  return gpus;
}

absl::StatusOr<TrainResult> train_distributed_config(const std::string& config_path,
                                                     const Distributed& d,
                                                     const std::string& log_path,
                                                     double progress_seconds) {
  return call_logged<TrainResult>("RETURNN training failed", log_path, to_train_result,
                                  "train_distributed", config_path, d.nproc, d.nnodes, d.node_rank,
                                  d.master, progress_seconds);
}

namespace {

// (TF name, torch key, shape) per param; a C++ value that becomes a Python
// list in the call (pybind11/stl.h), after call_logged started Python.
std::vector<std::tuple<std::string, std::string, std::vector<int64_t>>> checkpoint_mapping(
    const std::vector<CheckpointParam>& params) {
  std::vector<std::tuple<std::string, std::string, std::vector<int64_t>>> mapping;
  for (const CheckpointParam& p : params) mapping.emplace_back(p.tf_name, p.torch_key, p.shape);
  return mapping;
}

}  // namespace

absl::StatusOr<TrainResult> run_task_config(const std::string& config_path, const std::string& task,
                                            const std::vector<CheckpointParam>& params,
                                            const CheckpointCheck& check, const std::string& output,
                                            const std::string& log_path) {
  return call_logged<TrainResult>("RETURNN failed", log_path, to_train_result, "run_task",
                                  config_path, task, checkpoint_mapping(params),
                                  check.allow_extra_params, output, check.preload_module,
                                  check.preload_path);
}

absl::StatusOr<ConvertResult> convert_checkpoint(const std::string& from,
                                                 const std::vector<CheckpointParam>& params,
                                                 const CheckpointCheck& check,
                                                 const std::string& in, const std::string& out,
                                                 const std::string& log_path) {
  return call_logged<ConvertResult>(
      "checkpoint conversion failed", log_path,
      [](const py::tuple& r) {
        return ConvertResult{r[0].cast<int64_t>(), r[1].cast<int64_t>(), r[2].cast<int64_t>()};
      },
      "convert_checkpoint", from, checkpoint_mapping(params), check.allow_extra_params, in, out);
}

absl::StatusOr<ImportResult> import_checkpoint(const std::string& format, const std::string& map,
                                               const std::vector<CheckpointParam>& params,
                                               const std::string& in, const std::string& to,
                                               const std::string& out,
                                               const std::string& log_path) {
  return call_logged<ImportResult>(
      "checkpoint import failed", log_path,
      [](const py::tuple& r) {
        return ImportResult{r[0].cast<int64_t>(), r[1].cast<std::vector<std::string>>()};
      },
      "import_checkpoint", format, map, checkpoint_mapping(params), in, to, out);
}

absl::StatusOr<ExportResult> export_onnx_config(const std::string& config_path,
                                                const std::vector<CheckpointParam>& params,
                                                const CheckpointCheck& check,
                                                const std::string& out,
                                                const std::string& log_path) {
  return call_logged<ExportResult>(
      "ONNX export failed", log_path,
      [](const py::tuple& r) {
        ExportResult out{r[0].cast<std::vector<std::string>>(),
                         r[1].cast<std::vector<std::string>>(),
                         r[2].cast<int64_t>(),
                         {}};
        for (const py::handle c : r[3].cast<py::list>()) {
          const auto t = c.cast<py::tuple>();
          out.checks.push_back({t[0].cast<int64_t>(), t[1].cast<int64_t>(), t[2].cast<double>()});
        }
        return out;
      },
      "export_onnx", config_path, checkpoint_mapping(params), check.allow_extra_params, out);
}

}  // namespace retc::runtime
