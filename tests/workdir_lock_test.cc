// One run per workdir (runtime/workdir_lock.h): a live holder is another run;
// a killed one that has not let go yet is waited for.
#include "runtime/workdir_lock.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>

namespace retc::runtime {
namespace {

// "PID N on HOST" as a lock file names a run of this machine.
std::string pid_here(pid_t pid) {
  char host[256] = {};
  REQUIRE(::gethostname(host, sizeof host - 1) == 0);
  return "PID " + std::to_string(pid) + " on " + host;
}

// A fresh folder under TMPDIR, removed at the end of the test.
struct TempDir {
  std::string path;
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "retc-lock.XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

// A process that takes the lock of `dir` and keeps it until it is killed;
// with `child_holds`, it forks a child (no exec: it shares the lock's file)
// that lives on until `release` (a pipe's read end) is closed on the other
// side. Its PID once it holds the lock.
pid_t start_holder(const std::string& dir, bool child_holds, int release_read, int release_write) {
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(ready[0]);
    if (release_write >= 0) ::close(release_write);
    std::string note;
    auto lock = WorkdirLock::acquire(dir, "test holder", note);
    if (!lock.ok()) ::_exit(2);
    if (child_holds && ::fork() == 0) {
      char b;
      while (::read(release_read, &b, 1) > 0) {
      }
      ::_exit(0);
    }
    const char b = 1;
    if (::write(ready[1], &b, 1) != 1) ::_exit(3);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char b = 0;
  REQUIRE(::read(ready[0], &b, 1) == 1);
  ::close(ready[0]);
  return pid;
}

TEST_CASE("a workdir held by a live run is refused, naming its PID", "[lock]") {
  TempDir dir;
  const pid_t holder = start_holder(dir.path, false, -1, -1);
  std::string note;
  auto second = WorkdirLock::acquire(dir.path, "retc train m", note);
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(std::string(second.status().message()) ==
        "'" + dir.path + "' is in use by another run (test holder, " + pid_here(holder) +
            "); wait for it to end, or use another --workdir");
  ::kill(holder, SIGKILL);
  REQUIRE(::waitpid(holder, nullptr, 0) == holder);
  auto third = WorkdirLock::acquire(dir.path, "retc train m", note);
  REQUIRE(third.ok());
  CHECK(note == "took over the lock of '" + dir.path +
                    "' left by a run that ended without releasing it (test holder, " +
                    pid_here(holder) + ")");
}

// A warm server's child killed with its client, or a training killed while
// its data loader's forked workers still run: the lock outlives the run for
// a moment, and the next run (a script's next line) must not fail on it.
TEST_CASE("a run killed while a process forked from it holds the lock is waited for", "[lock]") {
  for (const bool reaped : {true, false}) {
    CAPTURE(reaped);  // gone from /proc, or a zombie
    TempDir dir;
    int release[2];
    REQUIRE(::pipe(release) == 0);
    const pid_t holder = start_holder(dir.path, true, release[0], release[1]);
    ::close(release[0]);
    ::kill(holder, SIGKILL);
    if (reaped) REQUIRE(::waitpid(holder, nullptr, 0) == holder);
    // The forked child lets go a while after the second run has found the lock held.
    std::thread release_later([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      ::close(release[1]);
    });
    std::ostringstream err;
    std::streambuf* saved = std::cerr.rdbuf(err.rdbuf());
    std::string note;
    auto lock = WorkdirLock::acquire(dir.path, "retc train m", note);
    std::cerr.rdbuf(saved);
    release_later.join();
    if (!reaped) REQUIRE(::waitpid(holder, nullptr, 0) == holder);
    INFO(err.str());
    REQUIRE(lock.ok());
    const std::string held = "test holder, " + pid_here(holder);
    CHECK(err.str() ==
          "retc: waiting for the killed run that held '" + dir.path + "' (" + held + ") to end\n");
    CHECK(note == "took over the lock of '" + dir.path +
                      "' left by a run that ended without releasing it (" + held + ")");
  }
}

// A workdir on a shared file system: the holder's PID means nothing here.
TEST_CASE("a lock held by a run on another machine is refused at once", "[lock]") {
  TempDir dir;
  const pid_t holder = start_holder(dir.path, false, -1, -1);
  const pid_t gone = ::fork();  // a PID with no process behind it on this machine
  if (gone == 0) ::_exit(0);
  REQUIRE(::waitpid(gone, nullptr, 0) == gone);
  const std::string elsewhere =
      "retc train m, PID " + std::to_string(gone) + " on elsewhere.invalid";
  { std::ofstream(dir.path + "/retc.lock", std::ios::trunc) << elsewhere << "\n"; }
  std::ostringstream err;
  std::streambuf* saved = std::cerr.rdbuf(err.rdbuf());
  std::string note;
  auto second = WorkdirLock::acquire(dir.path, "retc train m", note);
  std::cerr.rdbuf(saved);
  ::kill(holder, SIGKILL);
  REQUIRE(::waitpid(holder, nullptr, 0) == holder);
  REQUIRE_FALSE(second.ok());
  CHECK(err.str().empty());  // no wait
  CHECK(std::string(second.status().message()) ==
        "'" + dir.path + "' is in use by another run (" + elsewhere +
            "); wait for it to end, or use another --workdir");
}

}  // namespace
}  // namespace retc::runtime
