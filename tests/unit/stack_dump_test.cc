// The stacks a stuck spawn writes: this process's threads and those of the processes under it.
#include "fiber/base/stack_dump.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace {

TEST(StackDump, NamesEveryProcessOfTheTreeWithItsThreadsStacks) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    execlp("sleep", "sleep", "60", static_cast<char*>(nullptr));
    _exit(127);
  }
  testing::internal::CaptureStderr();
  fiber::internal::dump_process_tree_stacks("a test");
  const std::string out = testing::internal::GetCapturedStderr();
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_NE(out.find("fibermpi: stacks of"), std::string::npos) << out;
  EXPECT_NE(out.find("(a test)"), std::string::npos) << out;
  EXPECT_NE(out.find("=== pid " + std::to_string(getpid()) + ": "), std::string::npos) << out;
  EXPECT_NE(out.find("=== pid " + std::to_string(child) + ": sleep 60"), std::string::npos) << out;
  // gdb's backtrace of this very call (the test's own frame is named differently by each build),
  // and of the child's sleep in its own section.
  const auto own_section = out.find("=== pid " + std::to_string(getpid()) + ": ");
  EXPECT_NE(out.find("dump_process_tree_stacks", own_section), std::string::npos) << out;
  const auto child_section = out.find("=== pid " + std::to_string(child) + ": ");
  ASSERT_NE(child_section, std::string::npos) << out;
  const std::string child_stacks =
      out.substr(child_section, out.find("===", child_section + 1) - child_section);
  EXPECT_NE(child_stacks.find("#0 "), std::string::npos) << child_stacks;
  EXPECT_NE(child_stacks.find("nanosleep"), std::string::npos) << child_stacks;
  EXPECT_NE(out.find("fibermpi: end of stacks"), std::string::npos) << out;
}

TEST(StackDump, IsAskedForByItsVariableOnly) {
  unsetenv("FIBER_STACKS_WHEN_STUCK");
  EXPECT_FALSE(fiber::internal::stacks_wanted_when_stuck());
  setenv("FIBER_STACKS_WHEN_STUCK", "0", 1);
  EXPECT_FALSE(fiber::internal::stacks_wanted_when_stuck());
  setenv("FIBER_STACKS_WHEN_STUCK", "1", 1);
  EXPECT_TRUE(fiber::internal::stacks_wanted_when_stuck());
}

}  // namespace
