// ProcessWatch against real processes: a running child is not gone, an ended one is (seen at the
// next round), a pid that names no process is, and a pid nobody asks about is dropped.
#include "fiber/base/process_watch.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

namespace fiber::internal {
namespace {

pid_t start_sleeper() {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  return pid;
}

// The pid of a process that has ended and been reaped.
pid_t ended_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

TEST(ProcessWatch, SeesEachEndAtTheNextRound) {
  ProcessWatch watch;
  std::vector<pid_t> children;
  for (int i = 0; i < 20; ++i) children.push_back(start_sleeper());
  watch.begin_round();
  for (const pid_t pid : children) EXPECT_FALSE(watch.gone(pid)) << pid;
  watch.end_round();
  EXPECT_EQ(watch.watched_by_pidfd(), children.size()) << "pidfds on Linux 5.3 and later";

  // Every other child ends; a round later exactly those are gone, whether reaped or not.
  for (size_t i = 0; i < children.size(); i += 2) ::kill(children[i], SIGKILL);
  ::waitpid(children[0], nullptr, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  watch.begin_round();
  for (size_t i = 0; i < children.size(); ++i) EXPECT_EQ(watch.gone(children[i]), i % 2 == 0) << i;
  watch.end_round();

  for (size_t i = 1; i < children.size(); i += 2) ::kill(children[i], SIGKILL);
  for (const pid_t pid : children) ::waitpid(pid, nullptr, 0);
}

TEST(ProcessWatch, APidOfNoProcessIsGoneAndZeroNeverIs) {
  ProcessWatch watch;
  watch.begin_round();
  EXPECT_TRUE(watch.gone(ended_pid()));
  EXPECT_FALSE(watch.gone(0));
  EXPECT_FALSE(watch.gone(-1));
  EXPECT_FALSE(watch.gone(static_cast<int>(::getpid())));
  watch.end_round();
}

TEST(ProcessWatch, APidNotAskedAboutInARoundIsDropped) {
  ProcessWatch watch;
  const pid_t child = start_sleeper();
  watch.begin_round();
  EXPECT_FALSE(watch.gone(child));
  watch.end_round();
  EXPECT_EQ(watch.watched_by_pidfd(), 1u);
  watch.begin_round();
  watch.end_round();
  EXPECT_EQ(watch.watched_by_pidfd(), 0u);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

}  // namespace
}  // namespace fiber::internal
