#include "runtime/python_env.h"

#include <Python.h>
#include <sys/stat.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace retc::runtime {
namespace {

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

std::string default_venv_path() {
  if (const char* v = std::getenv("RETC_VENV"); v && *v) return v;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return absl::StrCat(x, "/retc/venv");
  const char* home = std::getenv("HOME");
  return absl::StrCat(home && *home ? home : "/root", "/.cache/retc/venv");
}

absl::Status check_venv(const std::string& venv) {
  const std::string hint = " (run tools/setup.sh, or point RETC_VENV at a venv made by it)";
  if (!exists(venv + "/pyvenv.cfg") || !exists(venv + "/bin/python")) {
    return absl::FailedPreconditionError(
        absl::StrCat("no Python virtual environment at '", venv, "'", hint));
  }
  std::string site = absl::StrCat(venv, "/lib/python", RETC_PYTHON_VERSION, "/site-packages");
  if (!exists(site)) {
    return absl::FailedPreconditionError(
        absl::StrCat("the venv at '", venv, "' is not for Python ", RETC_PYTHON_VERSION, hint));
  }
  if (!exists(site + "/returnn")) {
    return absl::FailedPreconditionError(
        absl::StrCat("RETURNN is not installed in the venv at '", venv, "'", hint));
  }
  return absl::OkStatus();
}

absl::Status start_python() {
  if (Py_IsInitialized()) return absl::OkStatus();
  const std::string venv = default_venv_path();
  if (absl::Status s = check_venv(venv); !s.ok()) return s;
  const std::string python = venv + "/bin/python";
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.install_signal_handlers = 1;  // Ctrl-C raises KeyboardInterrupt
  config.use_environment = 0;          // PYTHONHOME/PYTHONPATH must not redirect the venv
  config.parse_argv = 0;
  config.user_site_directory = 0;
  config.buffered_stdio = 0;  // RETURNN's progress lines appear as they happen
  PyStatus st = PyConfig_SetBytesString(&config, &config.program_name, python.c_str());
  const char* argv[] = {"retc"};
  if (!PyStatus_Exception(st)) st = PyConfig_SetBytesArgv(&config, 1, const_cast<char**>(argv));
  if (!PyStatus_Exception(st)) st = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(st)) {
    return absl::InternalError(absl::StrCat("cannot start Python from '", python,
                                            "': ", st.err_msg ? st.err_msg : "unknown error"));
  }
  return absl::OkStatus();
}

void run_exit_handlers() {
  if (!Py_IsInitialized()) return;
  PyGILState_STATE gil = PyGILState_Ensure();
  PyObject* atexit = PyImport_ImportModule("atexit");
  if (atexit) {
    PyObject* r = PyObject_CallMethod(atexit, "_run_exitfuncs", nullptr);
    Py_XDECREF(r);
    Py_DECREF(atexit);
  }
  PyErr_Clear();
  PyGILState_Release(gil);
}

}  // namespace retc::runtime
