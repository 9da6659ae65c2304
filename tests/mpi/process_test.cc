// fiber::Process across real processes: exit codes, joins, termination, pids, many processes.
// Suite ProcessFault: a child killed, crashed or terminated, each test a program run of its own
// (after a kill Open MPI 4.1 may leave a later spawn stuck).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <stdexcept>
#include <thread>

#include "fiber/fiber.h"
#include "test_support.h"

using namespace std::chrono_literals;
using fiber::testing::seconds_since;

void return_normally() {}
void throw_runtime_error() { throw std::runtime_error("boom"); }
void exit_with_three() { std::exit(3); }
void sleep_forever() {
  for (;;) ::pause();
}
void sleep_for_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }
void busy_forever() {
  volatile unsigned long counter = 0;
  for (;;) counter = counter + 1;
}
void segfault() { ::raise(SIGSEGV); }
void report_pid(fiber::SimpleQueue<int> out) { out.put(static_cast<int>(::getpid())); }
void report_identity(fiber::SimpleQueue<std::string> out) {
  const fiber::Process self = fiber::current_process();
  out.put(self.name() + " " + std::to_string(self.pid()));
}
void put_index(int index, fiber::SimpleQueue<int> out) { out.put(index); }

TEST(Process, ReturnGivesExitCodeZero) {
  fiber::Process p(return_normally);
  EXPECT_FALSE(p.is_alive());
  EXPECT_FALSE(p.exitcode().has_value());
  p.start();
  p.join();
  EXPECT_FALSE(p.is_alive());
  ASSERT_TRUE(p.exitcode().has_value());
  EXPECT_EQ(*p.exitcode(), 0);
}

TEST(Process, UncaughtExceptionGivesExitCodeOne) {
  fiber::Process p(throw_runtime_error);
  p.start();
  p.join();
  EXPECT_EQ(p.exitcode(), 1);
}

TEST(Process, StdExitCodeIsReported) {
  fiber::Process p(exit_with_three);
  p.start();
  p.join();
  EXPECT_EQ(p.exitcode(), 3);
}

TEST(ProcessFault, KilledBySigkillGivesMinusNine) {
  fiber::Process p(sleep_forever);
  p.start();
  const int pid = p.pid();
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  p.join();
  EXPECT_EQ(p.exitcode(), -SIGKILL);
  EXPECT_FALSE(p.is_alive());
}

TEST(ProcessFault, CrashReportsItsSignal) {
  fiber::Process p(segfault);
  p.start();
  p.join();
  EXPECT_EQ(p.exitcode(), -SIGSEGV);
}

TEST(ProcessFault, TerminateStopsABusyChild) {
  fiber::Process p(busy_forever);
  p.start();
  ASSERT_GT(p.pid(), 0);
  std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(p.is_alive());
  const auto start = std::chrono::steady_clock::now();
  p.terminate();
  p.join();
  EXPECT_LT(seconds_since(start), 5.0);
  EXPECT_EQ(p.exitcode(), -SIGTERM);
}

// Ignores SIGTERM, so only SIGKILL ends it; says so on `ready` first.
void deaf_to_sigterm(fiber::SimpleQueue<int> ready) {
  ::signal(SIGTERM, SIG_IGN);
  ready.put(1);
  for (;;) std::this_thread::sleep_for(10ms);
}

TEST(ProcessFault, KillEndsAChildThatIgnoresSigterm) {
  fiber::SimpleQueue<int> ready;
  fiber::Process p(deaf_to_sigterm, ready);
  p.start();
  ASSERT_EQ(ready.get(60s), 1);
  p.terminate();
  EXPECT_FALSE(p.join(500ms)) << "SIGTERM was ignored: the child must still run";
  const auto start = std::chrono::steady_clock::now();
  p.kill();
  p.join();
  EXPECT_LT(seconds_since(start), 5.0);
  EXPECT_EQ(p.exitcode(), -SIGKILL);
}

TEST(Process, JoinWithTimeout) {
  fiber::Process p(sleep_for_ms, 5000);
  p.start();
  ASSERT_GT(p.pid(), 0);
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(p.join(200ms));
  const double waited = seconds_since(start);
  EXPECT_GE(waited, 0.19);
  EXPECT_LT(waited, 3.0);
  EXPECT_TRUE(p.is_alive());
  EXPECT_TRUE(p.join(30s));
  EXPECT_EQ(p.exitcode(), 0);
  EXPECT_TRUE(p.join(0ms));
}

TEST(Process, PidIsTheChildsOwn) {
  fiber::SimpleQueue<int> pids;
  fiber::Process p(report_pid, pids);
  EXPECT_EQ(p.pid(), 0);
  p.start();
  const int reported = pids.get(30s);
  EXPECT_EQ(p.pid(), reported);
  EXPECT_NE(reported, static_cast<int>(::getpid()));
  EXPECT_EQ(::kill(reported, 0) == 0 || errno == EPERM || errno == ESRCH, true);
  p.join();
}

TEST(Process, NamesAndCurrentProcess) {
  EXPECT_EQ(fiber::current_process().name(), "MainProcess");
  EXPECT_EQ(fiber::current_process().pid(), static_cast<int>(::getpid()));
  fiber::SimpleQueue<std::string> out;
  fiber::Process p(report_identity, out);
  p.set_name("learner");
  p.start();
  const std::string identity = out.get(30s);
  EXPECT_EQ(identity, "learner " + std::to_string(p.pid()));
  p.join();
}

TEST(Process, ActiveChildren) {
  fiber::Process p(sleep_for_ms, 400);
  p.start();
  auto children = fiber::active_children();
  bool found = false;
  for (auto& child : children) found = found || child.name() == p.name();
  EXPECT_TRUE(found);
  p.join();
  for (auto& child : fiber::active_children()) EXPECT_NE(child.name(), p.name());
}

TEST(Process, SixteenProcessesOnTwoCores) {
  fiber::SimpleQueue<int> out;
  std::vector<fiber::Process> processes;
  for (int i = 0; i < 16; ++i) processes.emplace_back(put_index, i, out);
  for (auto& p : processes) p.start();
  std::set<int> seen;
  for (int i = 0; i < 16; ++i) seen.insert(out.get(60s));
  EXPECT_EQ(seen.size(), 16u);
  EXPECT_EQ(*seen.begin(), 0);
  EXPECT_EQ(*seen.rbegin(), 15);
  for (auto& p : processes) {
    p.join();
    EXPECT_EQ(p.exitcode(), 0);
  }
}

TEST(Process, MisuseIsReported) {
  fiber::Process p(return_normally);
  EXPECT_THROW(p.join(), fiber::UsageError);
  p.start();
  EXPECT_THROW(p.start(), fiber::UsageError);
  p.join();
  EXPECT_THROW(fiber::current_process().join(), fiber::UsageError);
}

TEST(Process, TerminateBeforePlacementAndAfterEnd) {
  fiber::Process done(return_normally);
  done.start();
  done.join();
  done.terminate();  // no effect on an ended process
  EXPECT_EQ(done.exitcode(), 0);
}

TEST(Process, DaemonFlag) {
  fiber::Process p(return_normally);
  EXPECT_FALSE(p.daemon());
  p.set_daemon(true);
  EXPECT_TRUE(p.daemon());
  p.start();
  EXPECT_THROW(p.set_daemon(false), fiber::UsageError);
  p.join();
}

TEST(Spawn, MissingExecutableIsAClearError) {
  try {
    fiber::set_executable("/nonexistent/program");
    FAIL() << "expected SpawnError";
  } catch (const fiber::SpawnError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/program"), std::string::npos) << e.what();
  }
  try {
    fiber::set_executable("/bin/true");
    FAIL() << "expected SpawnError";
  } catch (const fiber::SpawnError& e) {
    EXPECT_NE(std::string(e.what()).find("not a program linked with fibermpi"), std::string::npos)
        << e.what();
  }
}

TEST(Spawn, DifferentBinaryIsRefusedAtHandshake) {
  const char* other = std::getenv("FIBER_OTHER_BINARY");
  if (fiber::testing::launch_mode() == "mpirun4" || !other) {
    GTEST_SKIP() << "idle static ranks take processes before anything is spawned";
  }
  fiber::set_executable(other);
  fiber::Process p(return_normally);
  p.start();
  try {
    p.join();
    FAIL() << "expected SpawnError";
  } catch (const fiber::SpawnError& e) {
    EXPECT_NE(std::string(e.what()).find("different binary"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(p.exitcode().has_value());
  fiber::set_executable(fiber::detail::ModuleTable::executable_path());
  fiber::Process again(return_normally);
  again.start();
  again.join();
  EXPECT_EQ(again.exitcode(), 0);
}
