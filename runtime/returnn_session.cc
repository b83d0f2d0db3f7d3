#include "runtime/returnn_session.h"

#include <fcntl.h>
#include <pybind11/embed.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

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

 private:
  int saved_ = -1;
};

// One line: "ExceptionType: message" (the last line if multi-line).
absl::Status python_error(const py::error_already_set& e, absl::string_view what,
                          const std::string& log_path) {
  std::string type = "Exception";
  std::string msg;
  try {
    type = py::str(e.type().attr("__name__"));
    msg = py::str(e.value());
  } catch (...) {
    msg = e.what();
  }
  if (type == "KeyboardInterrupt") return absl::CancelledError(absl::StrCat(what, ": interrupted"));
  std::string line = msg;
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  if (size_t nl = line.rfind('\n'); nl != std::string::npos) line = line.substr(nl + 1);
  return absl::InternalError(absl::StrCat(what, ": ", type, line.empty() ? "" : ": ", line,
                                          " (traceback: ", log_path, ")"));
}

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

// Calls retc_runtime.<func>(config_path) with stderr and any traceback going
// to `log_path`; `convert` turns the Python result into T.
template <class T, class F>
absl::StatusOr<T> call_runtime(const char* func, const char* what, const std::string& config_path,
                               const std::string& log_path, F&& convert) {
  StderrToFile redirect(log_path);
  auto m = runtime_module();
  if (!m.ok()) return m.status();
  try {
    py::tuple r = m->attr("run_logged")(func, log_path, config_path);
    flush_python();
    return convert(r);
  } catch (const py::error_already_set& e) {
    flush_python();
    return python_error(e, what, log_path);
  }
}

absl::StatusOr<CheckResult> check_config(const std::string& config_path,
                                         const std::string& log_path) {
  return call_runtime<CheckResult>("check", "RETURNN check failed", config_path, log_path,
                                   [](const py::tuple& r) {
                                     return CheckResult{to_variables(r[0]), to_variables(r[1])};
                                   });
}

absl::StatusOr<CheckResult> check_torch_config(const std::string& config_path,
                                               const std::string& log_path) {
  return call_runtime<CheckResult>(
      "check_torch", "RETURNN check failed", config_path, log_path, [](const py::tuple& r) {
        return CheckResult{to_variables(r[0]), {}, to_variables(r[1]), to_variables(r[2])};
      });
}

absl::StatusOr<TrainResult> train_config(const std::string& config_path,
                                         const std::string& log_path, double progress_seconds) {
  StderrToFile redirect(log_path);
  auto m = runtime_module();
  if (!m.ok()) return m.status();
  try {
    py::tuple r = m->attr("run_logged")("train", log_path, config_path, progress_seconds);
    flush_python();
    return to_train_result(r);
  } catch (const py::error_already_set& e) {
    flush_python();
    return python_error(e, "RETURNN training failed", log_path);
  }
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
  StderrToFile redirect(log_path);
  auto m = runtime_module();
  if (!m.ok()) return m.status();
  try {
    py::tuple r = m->attr("run_logged")("train_distributed", log_path, config_path, d.nproc,
                                        d.nnodes, d.node_rank, d.master, progress_seconds);
    flush_python();
    return to_train_result(r);
  } catch (const py::error_already_set& e) {
    flush_python();
    return python_error(e, "RETURNN training failed", log_path);
  }
}

namespace {

py::list checkpoint_mapping(const std::vector<CheckpointParam>& params) {
  py::list mapping;
  for (const CheckpointParam& p : params) {
    py::list shape;
    for (int64_t d : p.shape) shape.append(d);
    mapping.append(py::make_tuple(p.tf_name, p.torch_key, shape));
  }
  return mapping;
}

}  // namespace

absl::StatusOr<TrainResult> run_task_config(const std::string& config_path, const std::string& task,
                                            const std::vector<CheckpointParam>& params,
                                            const std::string& output,
                                            const std::string& log_path) {
  StderrToFile redirect(log_path);
  auto m = runtime_module();
  if (!m.ok()) return m.status();
  try {
    py::tuple r = m->attr("run_logged")("run_task", log_path, config_path, task,
                                        checkpoint_mapping(params), output);
    flush_python();
    return to_train_result(r);
  } catch (const py::error_already_set& e) {
    flush_python();
    return python_error(e, "RETURNN failed", log_path);
  }
}

absl::StatusOr<ConvertResult> convert_checkpoint(const std::string& from,
                                                 const std::vector<CheckpointParam>& params,
                                                 const std::string& in, const std::string& out,
                                                 const std::string& log_path) {
  StderrToFile redirect(log_path);
  auto m = runtime_module();
  if (!m.ok()) return m.status();
  try {
    py::tuple r = m->attr("run_logged")("convert_checkpoint", log_path, from,
                                        checkpoint_mapping(params), in, out);
    flush_python();
    return ConvertResult{r[0].cast<int64_t>(), r[1].cast<int64_t>(), r[2].cast<int64_t>()};
  } catch (const py::error_already_set& e) {
    flush_python();
    return python_error(e, "checkpoint conversion failed", log_path);
  }
}

}  // namespace retc::runtime
