#include "runtime/server.h"

#include <Python.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <pybind11/embed.h>
#include <pybind11/stl.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "runtime/python_env.h"

extern char** environ;

namespace py = pybind11;

namespace retc::runtime {
namespace {

// What the server tells a client: its command's child started (value: its
// PID), exited (its status) or was killed (the signal); or that the client is
// to run the command itself.
enum Kind : int32_t { kStarted = 1, kExited = 2, kSignaled = 3, kRefused = 4 };
struct Record {
  int32_t kind = 0, value = 0;
};

// The signals a client forwards to its command's child.
// Ctrl-Z (SIGTSTP) stops the child, then the client; the shell's SIGCONT
// (fg, bg) goes on to the child.
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGTSTP, SIGCONT};
// Those that stop a server (after the commands it runs end).
constexpr int kServerStop[] = {SIGINT, SIGTERM, SIGHUP};
constexpr double kDefaultIdleSeconds = 15 * 60;
// A request's JSON at most (argv and environment).
constexpr uint32_t kMaxRequest = 16 << 20;

// What the libraries read while they start (thread pools, logging, CUDA, the
// linker) and where the venv is: a server serves only clients that agree.
// (The embedded Python reads no PYTHON* variable; a command's child gets the
// client's whole environment, tempfile's folder included.)
bool read_at_start(std::string_view name) {
  for (std::string_view p :
       {"OMP_", "MKL_", "OPENBLAS_", "KMP_", "GOMP_", "TF_", "CUDA_", "NVIDIA_", "LD_", "TORCH_",
        "PYTORCH_", "RETC_VENV", "XDG_CACHE_HOME", "HOME", "LANG", "LC_", "TZ"}) {
    if (name.starts_with(p)) return true;
  }
  return false;
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// The environment's NAME=VALUE that read_at_start names, sorted.
std::vector<std::string> start_environment() {
  std::vector<std::string> vars;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    if (size_t eq = kv.find('='); eq != kv.npos && read_at_start(kv.substr(0, eq)))
      vars.emplace_back(kv);
  }
  // retc_runtime's default, which the server imports TF under (runs that imported it set it).
  if (std::none_of(vars.begin(), vars.end(),
                   [](const std::string& v) { return v.starts_with("TF_CPP_MIN_LOG_LEVEL="); }))
    vars.emplace_back("TF_CPP_MIN_LOG_LEVEL=2");
  std::sort(vars.begin(), vars.end());
  return vars;
}

void append_file_id(std::string& id, const char* path) {
  struct stat st;
  if (::stat(path, &st) == 0)
    absl::StrAppend(&id, "|", path, ":", st.st_dev, ":", st.st_ino, ":", st.st_size, ":",
                    st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec);
}

// dir/HASH-BACKEND (the socket, lock and log add .sock, .lock, .log): HASH
// of this binary's file (a rebuilt retc is another), the backend and the
// environment that the start reads.
std::string server_base(const std::string& dir, const std::string& backend) {
  std::string id = backend;
  append_file_id(id, "/proc/self/exe");
  // retc's shared libraries (the CLI, the runtime and its Python): rebuilt, another server.
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        if (std::strstr(info->dlpi_name, "/libretc_"))
          append_file_id(*static_cast<std::string*>(out), info->dlpi_name);
        return 0;
      },
      &id);
  absl::StrAppend(&id, "\n", absl::StrJoin(start_environment(), "\n"));
  // What a child inherits from the server, not from its client: the resource
  // limits (ulimit), the nice value and the CPUs it may use (taskset).
  for (int r = 0; r < RLIM_NLIMITS; ++r) {
    rlimit l{};
    if (::getrlimit(static_cast<__rlimit_resource>(r), &l) == 0)
      absl::StrAppend(&id, "|", r, "=", l.rlim_cur, "/", l.rlim_max);
  }
  absl::StrAppend(&id, "|nice=", ::getpriority(PRIO_PROCESS, 0));
  cpu_set_t cpus;
  if (::sched_getaffinity(0, sizeof cpus, &cpus) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &cpus)) absl::StrAppend(&id, ",", c);
  }
  return absl::StrFormat("%s/%016x-%s", dir, fnv1a(id), backend);
}

bool fits_socket_path(const std::string& path) {
  return path.size() < sizeof(sockaddr_un{}.sun_path);
}

// The socket path of `base` (server_base) within a socket's length, then the
// servers' folder made (mode 0700) where it is not.
absl::Status prepare(const std::string& dir, const std::string& base) {
  if (!fits_socket_path(base + ".sock"))
    return absl::InvalidArgumentError(absl::StrCat(
        "the server's socket path '", base, ".sock' is longer than a socket's (",
        sizeof(sockaddr_un{}.sun_path) - 1, " characters): use a shorter --dir or RETC_SERVER"));
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return absl::FailedPreconditionError(
        absl::StrCat("cannot make the folder '", dir, "': ", std::strerror(errno)));
  return absl::OkStatus();
}

sockaddr_un socket_address(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  return a;
}

// A connected socket, or -1 (errno says why).
int connect_to(const std::string& path) {
  if (!fits_socket_path(path)) {
    errno = ENAMETOOLONG;
    return -1;
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un a = socket_address(path);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    int e = errno;
    ::close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

bool send_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

// False at the end of the stream or an error.
bool recv_all(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t k = ::recv(fd, p, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

// A request: its JSON's length (4 bytes, carrying the client's stdin, stdout
// and stderr as SCM_RIGHTS), then the JSON.
bool send_request(int sock, const std::string& json, const int (&fds)[3]) {
  uint32_t len = static_cast<uint32_t>(json.size());
  iovec iov{&len, sizeof len};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fds);
  std::memcpy(CMSG_DATA(c), fds, sizeof fds);
  ssize_t k;
  do {
    k = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
  } while (k < 0 && errno == EINTR);
  if (k <= 0) return false;
  if (k < static_cast<ssize_t>(sizeof len) &&
      !send_all(sock, reinterpret_cast<char*>(&len) + k, sizeof len - k))
    return false;
  return send_all(sock, json.data(), json.size());
}

bool recv_request(int sock, std::string& json, std::vector<int>& fds) {
  uint32_t len = 0;
  iovec iov{&len, sizeof len};
  alignas(cmsghdr) char control[CMSG_SPACE(3 * sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t k;
  do {
    k = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (k < 0 && errno == EINTR);
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    fds.resize(n);
    std::memcpy(fds.data(), CMSG_DATA(c), n * sizeof(int));
  }
  if (k <= 0) return false;
  if (k < static_cast<ssize_t>(sizeof len) &&
      !recv_all(sock, reinterpret_cast<char*>(&len) + k, sizeof len - k))
    return false;
  if (len > kMaxRequest) return false;
  json.resize(len);
  return recv_all(sock, json.data(), len);
}

void close_all(const std::vector<int>& fds) {
  for (int fd : fds) ::close(fd);
}

// This process's stdin, stdout and stderr for a request; /dev/null for one
// that is closed (opened here: in `opened`).
void own_stdio(int (&fds)[3], std::vector<int>& opened) {
  for (int i = 0; i < 3; ++i) {
    fds[i] = i;
    if (::fcntl(i, F_GETFD) < 0) opened.push_back(fds[i] = ::open("/dev/null", O_RDWR | O_CLOEXEC));
  }
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int g_signal_pipe = -1;  // the write end: a signal's number, one byte

extern "C" void to_signal_pipe(int signum) {
  const int saved = errno;
  unsigned char b = static_cast<unsigned char>(signum);
  [[maybe_unused]] ssize_t k = ::write(g_signal_pipe, &b, 1);
  errno = saved;
}

// `retc serve --foreground` for `backend` in `dir`, detached from this
// process (a process group of its own; stdin /dev/null, its output appended
// to the log); its PID. It stays in the client's session, so the kernel
// shares the CPUs between its children and the rest of that session's work
// as between processes of one session (autogroup), as without a server.
// `base` is server_base(dir, backend), its folder made (prepare).
pid_t start_detached(const std::string& dir, const std::string& base, const std::string& backend,
                     double idle_seconds) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return -1;
  std::cout.flush();
  std::cerr.flush();
  pid_t child = ::fork();
  if (child == 0) {
    ::setpgid(0, 0);  // a terminal's Ctrl-C goes to the client alone
    pid_t server = ::fork();
    if (server != 0) {
      [[maybe_unused]] ssize_t k = ::write(p[1], &server, sizeof server);
      ::_exit(0);
    }
    int null = ::open("/dev/null", O_RDWR);
    int log = ::open((base + ".log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(null, 0);
    ::dup2(log >= 0 ? log : null, 1);
    ::dup2(log >= 0 ? log : null, 2);
    ::close_range(3, ~0u, 0);  // nothing of the client's (a test runner's pipe) stays open
    const std::string minutes = absl::StrCat(idle_seconds / 60);
    ::execl("/proc/self/exe", "retc", "serve", "--foreground", "--backend", backend.c_str(),
            "--dir", dir.c_str(), "--idle-minutes", minutes.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(p[1]);
  pid_t server = -1;
  if (child < 0 || ::read(p[0], &server, sizeof server) != sizeof server) server = -1;
  ::close(p[0]);
  if (child > 0) ::waitpid(child, nullptr, 0);
  return server;
}

// What a server imports once, as the commands' runs would (retc_runtime
// itself is not: it registers at-fork hooks and a scratch folder per run).
// The TF server imports torch too: `convert-checkpoint` runs there and reads
// or writes a torch checkpoint each time (importing torch took 1.5 s of its
// 1.9 s for 12ax).
const char* preload_code(const std::string& backend) {
  if (backend == "torch") return "import returnn.torch.engine\nimport returnn.frontend\n";
  return "import os\nos.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')\n"
         "import returnn.tf.engine\nimport torch\n";
}

struct Worker {
  pid_t pid = -1;
  int pidfd = -1;
  int conn = -1;  // -1: its client is gone
  std::string what;
  double start = 0;
};

pid_t pidfd_open(pid_t pid) { return static_cast<pid_t>(::syscall(SYS_pidfd_open, pid, 0)); }

// In a command's child, before the command: the client's stdio, folder,
// umask and environment (the C library's and Python's os.environ both).
// tempfile's folder follows TMPDIR again; numpy's global random state is drawn again, as a fresh
// process's is (Python's random module does so itself after a fork).
void adopt_client(const nlohmann::json& req, const std::vector<int>& fds) {
  for (int i = 0; i < 3 && i < static_cast<int>(fds.size()); ++i) ::dup2(fds[i], i);
  for (int fd : fds)
    if (fd > 2) ::close(fd);
  const std::string cwd = req.value("cwd", std::string("/"));
  if (::chdir(cwd.c_str()) != 0) {
    std::cerr << "retc: error: cannot enter the folder '" << cwd << "': " << std::strerror(errno)
              << "\n";
    ::_exit(1);
  }
  ::umask(static_cast<mode_t>(req.value("umask", 022)));
  py::list env;
  for (const std::string& kv : req.value("env", std::vector<std::string>{}))
    env.append(py::bytes(kv));
  py::dict scope;
  scope["env"] = env;
  py::exec(R"(
import os, sys
os.environb.clear()
os.environb.update(kv.split(b"=", 1) for kv in env if b"=" in kv)
if "tempfile" in sys.modules:
    sys.modules["tempfile"].tempdir = None  # from TMPDIR again
if "numpy" in sys.modules:
    sys.modules["numpy"].random.seed()
)",
           scope);
}

}  // namespace

std::string server_dir() {
  const char* d = std::getenv("RETC_SERVER");
  if (!d || !*d) return "";
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(d, ec);
  return ec ? d : p.lexically_normal().string();
}

std::string server_backend(int argc, char** argv) {
  if (argc < 2) return "";
  const std::string cmd = argv[1];
  std::string backend = "tf";
  for (int i = 2; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--help" || a == "-h") return "";
    if (a == "--backend" && i + 1 < argc) backend = argv[i + 1];
    if (a.starts_with("--backend=")) backend = a.substr(10);
  }
  if (cmd == "export") return "torch";
  if (cmd == "convert-checkpoint") return "tf";
  if (cmd != "check" && cmd != "train" && cmd != "eval" && cmd != "forward" && cmd != "search")
    return "";
  return backend == "tf" || backend == "torch" ? backend : "";
}

std::optional<int> run_in_server(int argc, char** argv, const std::string& backend) {
  const std::string dir = server_dir();
  if (dir.empty() || backend.empty()) return std::nullopt;
  const std::string base = server_base(dir, backend);
  int sock = connect_to(base + ".sock");
  if (sock < 0) {
    if ((errno == ENOENT || errno == ECONNREFUSED) && prepare(dir, base).ok())
      start_detached(dir, base, backend, kDefaultIdleSeconds);
    return std::nullopt;
  }
  nlohmann::json req;
  req["argv"] = std::vector<std::string>(argv, argv + argc);
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  req["env"] = env;
  std::string cwd(4096, '\0');
  if (!::getcwd(cwd.data(), cwd.size())) {
    ::close(sock);
    return std::nullopt;
  }
  req["cwd"] = cwd.c_str();
  mode_t mask = ::umask(0);
  ::umask(mask);
  req["umask"] = mask;
  int fds[3];
  std::vector<int> opened;
  own_stdio(fds, opened);
  Record r;
  const bool started =
      send_request(sock, req.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), fds) &&
      recv_all(sock, &r, sizeof r) && r.kind == kStarted;
  close_all(opened);
  if (!started) {
    ::close(sock);
    return std::nullopt;
  }
  // The command runs there: forward signals, then end as it did.
  int p[2];
  if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) p[0] = p[1] = -1;
  g_signal_pipe = p[1];
  struct sigaction forward {};
  forward.sa_handler = to_signal_pipe;
  forward.sa_flags = SA_RESTART;
  for (int s : kForwarded) {
    struct sigaction now {};
    // One this process ignores (a shell's background job's SIGINT) it does not forward either.
    if (::sigaction(s, nullptr, &now) == 0 && now.sa_handler != SIG_IGN)
      ::sigaction(s, &forward, nullptr);
  }
  for (;;) {
    pollfd pf[2] = {{sock, POLLIN, 0}, {p[0], POLLIN, 0}};
    if (::poll(pf, p[0] >= 0 ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (pf[1].revents & POLLIN) {
      unsigned char b;
      while (::read(p[0], &b, 1) == 1) {
        int32_t s = b;
        send_all(sock, &s, sizeof s);
        if (s == SIGTSTP) ::raise(SIGSTOP);
      }
    }
    if (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      if (!recv_all(sock, &r, sizeof r)) break;
      if (r.kind == kExited) return r.value;
      if (r.kind == kSignaled) {
        // As the shell sees a process the signal killed (no core of this one).
        rlimit none{0, 0};
        ::setrlimit(RLIMIT_CORE, &none);
        ::signal(r.value, SIG_DFL);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, r.value);
        ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
        ::raise(r.value);
        return 128 + r.value;
      }
    }
  }
  std::cerr << "retc: error: the retc server in '" << dir
            << "' (RETC_SERVER) ended before the command did (its log: " << base << ".log)\n";
  return 1;
}

absl::Status serve(const std::string& dir, const std::string& backend, double idle_seconds,
                   const CommandFn& run) {
  const std::string base = server_base(dir, backend);
  const std::string sock_path = base + ".sock";
  if (absl::Status s = prepare(dir, base); !s.ok()) return s;
  int probe = pidfd_open(::getpid());
  if (probe < 0)
    return absl::FailedPreconditionError("this kernel has no pidfd_open (Linux 5.3 or later)");
  ::close(probe);
  int lock = ::open((base + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0 || ::flock(lock, LOCK_EX | LOCK_NB) != 0) {
    if (lock >= 0) ::close(lock);
    return absl::OkStatus();  // another process serves
  }
  const std::string pid_text = absl::StrCat(::getpid(), "\n");
  if (::ftruncate(lock, 0) != 0 ||
      ::pwrite(lock, pid_text.data(), pid_text.size(), 0) != static_cast<ssize_t>(pid_text.size()))
    std::cerr << "retc serve: cannot write the PID to " << base << ".lock\n";

  const double t0 = now_seconds();
  if (absl::Status s = start_python(); !s.ok()) return s;
  try {
    py::exec(preload_code(backend));
  } catch (const py::error_already_set& e) {
    return absl::InternalError(
        absl::StrCat("the ", backend, " server's imports failed: ", e.what()));
  }
  int listen_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr = socket_address(sock_path);
  ::unlink(sock_path.c_str());
  if (listen_fd < 0 || ::bind(listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::chmod(sock_path.c_str(), 0600) != 0 || ::listen(listen_fd, 64) != 0)
    return absl::InternalError(
        absl::StrCat("cannot listen on '", sock_path, "': ", std::strerror(errno)));
  int sp[2];
  if (::pipe2(sp, O_CLOEXEC | O_NONBLOCK) != 0)
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  g_signal_pipe = sp[1];
  struct sigaction stop {
  }, saved[std::size(kServerStop)];
  stop.sa_handler = to_signal_pipe;
  stop.sa_flags = SA_RESTART;
  for (size_t i = 0; i < std::size(kServerStop); ++i) ::sigaction(kServerStop[i], &stop, &saved[i]);
  const pid_t self = ::getpid();
  std::cerr << absl::StrFormat(
      "retc serve: PID %d, %s, ready after %.1f s of imports; idle exit after %.0f s; for %s\n",
      self, backend, now_seconds() - t0, idle_seconds, absl::StrJoin(start_environment(), " "));

  std::vector<Worker> workers;
  std::vector<int> stoppers;  // `retc serve --stop` connections: closed when this server ends
  bool stopping = false;
  double idle_since = now_seconds();
  auto send_record = [](int fd, Kind kind, int value) {
    Record r{kind, value};
    return fd >= 0 && send_all(fd, &r, sizeof r);
  };
  for (;;) {
    if (workers.empty() && (stopping || now_seconds() - idle_since >= idle_seconds)) break;
    std::vector<pollfd> pf = {{sp[0], POLLIN, 0}};
    if (!stopping) pf.push_back({listen_fd, POLLIN, 0});
    const size_t first_worker = pf.size();
    for (const Worker& w : workers) {
      pf.push_back({w.pidfd, POLLIN, 0});
      pf.push_back({w.conn, static_cast<short>(w.conn >= 0 ? POLLIN : 0), 0});
    }
    int timeout_ms = -1;
    if (workers.empty())
      timeout_ms =
          static_cast<int>(std::max(0.0, idle_seconds - (now_seconds() - idle_since)) * 1000) + 1;
    if (::poll(pf.data(), pf.size(), timeout_ms) < 0 && errno != EINTR) {
      std::cerr << "retc serve: poll: " << std::strerror(errno) << "\n";
      break;
    }
    if (pf[0].revents & POLLIN) {
      unsigned char b;
      while (::read(sp[0], &b, 1) == 1) stopping = true;
      if (stopping) std::cerr << "retc serve: stopping on a signal\n";
    }
    // Workers (before accepting, which changes the vector).
    std::vector<Worker> running;
    for (size_t i = 0; i < workers.size(); ++i) {
      Worker& w = workers[i];
      const pollfd& ended = pf[first_worker + 2 * i];
      const pollfd& client = pf[first_worker + 2 * i + 1];
      if (w.conn >= 0 && (client.revents & (POLLIN | POLLHUP | POLLERR))) {
        int32_t s;
        if (recv_all(w.conn, &s, sizeof s)) {
          ::kill(w.pid, s);
        } else {
          std::cerr << "retc serve: the client of PID " << w.pid << " is gone: SIGKILL to it\n";
          ::kill(w.pid, SIGKILL);
          ::close(w.conn);
          w.conn = -1;
        }
      }
      if (ended.revents & POLLIN) {
        int status = 0;
        if (::waitpid(w.pid, &status, 0) == w.pid) {
          if (WIFSIGNALED(status)) {
            send_record(w.conn, kSignaled, WTERMSIG(status));
          } else {
            send_record(w.conn, kExited, WEXITSTATUS(status));
          }
          std::cerr << absl::StrFormat("retc serve: PID %d (%s): %s %d after %.1f s\n", w.pid,
                                       w.what, WIFSIGNALED(status) ? "signal" : "exit",
                                       WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
                                       now_seconds() - w.start);
          if (w.conn >= 0) ::close(w.conn);
          ::close(w.pidfd);
          idle_since = now_seconds();
          continue;
        }
      }
      running.push_back(w);
    }
    workers = std::move(running);
    if (stopping || !(pf[1].revents & POLLIN)) continue;
    int conn = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    ucred peer{};
    socklen_t peer_len = sizeof peer;
    if (::getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &peer, &peer_len) != 0 ||
        peer.uid != ::getuid()) {
      ::close(conn);  // another user's process: it runs nothing as this one
      continue;
    }
    std::string json;
    std::vector<int> fds;
    nlohmann::json req;
    if (!recv_request(conn, json, fds) ||
        (req = nlohmann::json::parse(json, nullptr, false)).is_discarded() || !req.is_object()) {
      close_all(fds);
      ::close(conn);
      continue;
    }
    if (req.value("stop", false)) {
      close_all(fds);
      stoppers.push_back(conn);
      stopping = true;
      std::cerr << "retc serve: stopping (retc serve --stop)\n";
      continue;
    }
    const std::vector<std::string> args = req.value("argv", std::vector<std::string>{});
    if (args.size() < 2 || fds.size() != 3) {
      send_record(conn, kRefused, 0);
      close_all(fds);
      ::close(conn);
      continue;
    }
    std::cout.flush();
    std::cerr.flush();
    PyOS_BeforeFork();
    const pid_t pid = ::fork();
    if (pid == 0) {
      PyOS_AfterFork_Child();
      for (size_t i = 0; i < std::size(kServerStop); ++i)
        ::sigaction(kServerStop[i], &saved[i], nullptr);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != self) ::_exit(1);
      ::setpgid(0, 0);
      ::signal(SIGTTOU, SIG_IGN);  // its client's terminal is not its own: writes go on
      ::close(listen_fd);
      ::close(lock);
      ::close(sp[0]);
      ::close(sp[1]);
      ::close(conn);
      close_all(stoppers);
      for (const Worker& w : workers) {
        ::close(w.pidfd);
        if (w.conn >= 0) ::close(w.conn);
      }
      try {
        adopt_client(req, fds);
      } catch (const std::exception& e) {
        std::cerr << "retc: error: the retc server's child could not take the command's "
                     "environment: "
                  << e.what() << "\n";
        ::_exit(1);
      }
      std::vector<char*> argv;
      std::vector<std::string> own = args;
      for (std::string& a : own) argv.push_back(a.data());
      argv.push_back(nullptr);
      std::exit(run(static_cast<int>(own.size()), argv.data()));
    }
    PyOS_AfterFork_Parent();
    close_all(fds);
    if (pid < 0) {
      send_record(conn, kRefused, 0);
      ::close(conn);
      continue;
    }
    Worker w{pid, pidfd_open(pid), conn, absl::StrJoin(args.begin() + 1, args.end(), " "),
             now_seconds()};
    send_record(conn, kStarted, pid);
    workers.push_back(std::move(w));
  }
  ::close(listen_fd);
  ::unlink(sock_path.c_str());
  std::cerr << "retc serve: PID " << self << " ends ("
            << (stopping ? "stopped" : absl::StrFormat("idle for %.0f s", idle_seconds)) << ")\n";
  close_all(stoppers);
  ::close(lock);
  return absl::OkStatus();
}

absl::Status start_servers(const std::string& dir, const std::vector<std::string>& backends,
                           double idle_seconds, std::string& log) {
  for (const std::string& backend : backends) {
    const std::string base = server_base(dir, backend);
    if (absl::Status s = prepare(dir, base); !s.ok()) return s;
    pid_t pid = -1;
    bool was_up = false;
    for (int tries = 0;; ++tries) {
      if (int fd = connect_to(base + ".sock"); fd >= 0) {
        ::close(fd);
        break;
      }
      if (tries == 0) {
        pid = start_detached(dir, base, backend, idle_seconds);
        if (pid < 0)
          return absl::InternalError(
              absl::StrCat("cannot start the ", backend, " server: ", std::strerror(errno)));
        continue;
      }
      if (::kill(pid, 0) != 0) {
        // Exited: another server took the lock first (it answers soon), or it failed.
        if (int fd = connect_to(base + ".sock"); fd >= 0) {
          ::close(fd);
          was_up = true;
          break;
        }
        if (tries > 600)
          return absl::InternalError(
              absl::StrCat("the ", backend, " server did not start (its log: ", base, ".log)"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::string pid_text;
    if (FILE* f = std::fopen((base + ".lock").c_str(), "r")) {
      char buf[32] = {};
      if (std::fgets(buf, sizeof buf, f)) pid_text = buf;
      std::fclose(f);
      while (!pid_text.empty() && pid_text.back() == '\n') pid_text.pop_back();
    }
    absl::StrAppend(&log, "retc serve: the ", backend, " server (PID ", pid_text, ") ",
                    pid < 0 || was_up ? "was already up" : "is up", ", in ", dir, "\n");
  }
  return absl::OkStatus();
}

absl::StatusOr<int> stop_servers(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return 0;
  std::vector<int> conns;
  while (dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (!name.ends_with(".sock")) continue;
    int fd = connect_to(dir + "/" + std::string(name));
    if (fd < 0) continue;
    int fds[3];
    std::vector<int> opened;
    own_stdio(fds, opened);
    if (send_request(fd, R"({"stop":true})", fds)) {
      conns.push_back(fd);
    } else {
      ::close(fd);
    }
    close_all(opened);
  }
  ::closedir(d);
  for (int fd : conns) {
    for (char b;;) {
      ssize_t k = ::recv(fd, &b, 1, 0);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) break;
    }
    ::close(fd);
  }
  return static_cast<int>(conns.size());
}

}  // namespace retc::runtime
