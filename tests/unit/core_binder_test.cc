// The cores spawned workers are bound to: their spread order on machines of several shapes
// (hwloc synthetic topologies), and, on this machine with real processes, that a core a
// launcher bound a process to is not handed out and that a worker's core is free again after it.
#include "fiber/base/core_binder.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace fiber::internal {
namespace {

using Lists = std::vector<std::string>;

TEST(CoreBinderOrder, AlternatesPackagesBeforeFillingOne) {
  EXPECT_EQ(CoreBinder(CoreBinder::Synthetic{"pack:2 core:3 pu:2"}).core_lists(),
            (Lists{"0-1", "6-7", "2-3", "8-9", "4-5", "10-11"}));
}

TEST(CoreBinderOrder, SpreadsOverSharedCachesInsideAPackage) {
  EXPECT_EQ(CoreBinder(CoreBinder::Synthetic{"pack:2 l3:2 core:2 pu:1"}).core_lists(),
            (Lists{"0", "4", "2", "6", "1", "5", "3", "7"}));
}

TEST(CoreBinderOrder, CountsCoresNotHardwareThreads) {
  // A machine whose cores have 4 hardware threads each: 2 cores, 2 workers.
  EXPECT_EQ(CoreBinder(CoreBinder::Synthetic{"core:2 pu:4"}).core_lists(), (Lists{"0-3", "4-7"}));
}

TEST(CoreBinderOrder, NumaNodesSplitAPackage) {
  EXPECT_EQ(CoreBinder(CoreBinder::Synthetic{"pack:1 [numa] group:2 core:2 pu:1"}).core_lists(),
            (Lists{"0", "2", "1", "3"}));
}

TEST(CoreBinderOrder, OffBindsNothing) {
  CoreBinder off(false);
  EXPECT_TRUE(off.core_lists().empty());
  EXPECT_EQ(off.bind(::getpid()), "");
}

// A child that sleeps until killed, bound to `cpu` when given.
pid_t sleeper(int cpu = -1) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (cpu >= 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      ::sched_setaffinity(0, sizeof set, &set);
    }
    ::pause();
    ::_exit(0);
  }
  return pid;
}

int first_cpu_of(pid_t pid, int* count) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(pid, sizeof set, &set) != 0) return -1;
  *count = CPU_COUNT(&set);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) return cpu;
  return -1;
}

void end(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

TEST(CoreBinderOnThisMachine, LauncherBoundCoreIsNotHandedOut) {
  CoreBinder binder(true);
  const auto cores = binder.core_lists();
  if (cores.size() < 2) GTEST_SKIP() << "needs 2 cores, this machine offers " << cores.size();
  const int first_core_cpu = std::stoi(cores[0]);
  // A process its launcher bound to the first core in spread order.
  const pid_t placed = sleeper(first_core_cpu);
  // Let it bind itself before the binder looks.
  for (int tries = 0; tries < 1000; ++tries) {
    int count = 0;
    if (first_cpu_of(placed, &count) == first_core_cpu && count == 1) break;
    ::usleep(1000);
  }
  binder.hold_launcher_cores(placed);
  std::vector<pid_t> workers;
  for (size_t i = 0; i + 1 < cores.size(); ++i) {
    workers.push_back(sleeper());
    const std::string said = binder.bind(workers.back());
    EXPECT_EQ(said.rfind("core " + std::to_string(i + 1) + " ", 0), 0u) << said;
    int count = 0;
    EXPECT_NE(first_cpu_of(workers.back(), &count), first_core_cpu);
  }
  // Every other core holds a worker: one more runs unbound, and says why.
  const pid_t extra = sleeper();
  EXPECT_EQ(binder.bind(extra).rfind("unbound: no free core (" + std::to_string(cores.size() - 1) +
                                         " bound workers, 1 held by launcher-placed processes",
                                     0),
            0u);
  // The placed process ends: its core goes to the next worker.
  binder.drop_launcher_cores(placed);
  EXPECT_EQ(binder.bind(extra).rfind("core 0 ", 0), 0u);
  // A worker going to the reserve floats on every core again, and its core is free.
  binder.release(workers.front(), true);
  int count = 0;
  first_cpu_of(workers.front(), &count);
  EXPECT_GE(count, 2);
  const pid_t next = sleeper();
  EXPECT_EQ(binder.bind(next).rfind("core 1 ", 0), 0u);
  for (pid_t pid : workers) end(pid);
  end(extra);
  end(next);
  end(placed);
}

TEST(CoreBinderOnThisMachine, AWorkerOfSeveralCoresGetsThemAll) {
  CoreBinder binder(true);
  const auto cores = binder.core_lists();
  if (cores.size() < 2) GTEST_SKIP() << "needs 2 cores, this machine offers " << cores.size();
  const pid_t wide = sleeper();
  EXPECT_EQ(binder.bind(wide, 2).rfind("cores 0,1 (PUs ", 0), 0u);
  int count = 0;
  first_cpu_of(wide, &count);
  EXPECT_EQ(count, 2);
  const pid_t narrow = sleeper();
  const std::string narrow_said = binder.bind(narrow);
  if (cores.size() == 2) {
    EXPECT_EQ(narrow_said.rfind("unbound: no free core (", 0), 0u) << narrow_said;
  }
  binder.release(wide, false);
  // More cores than are free: it runs unbound, and says how many were free.
  const pid_t greedy = sleeper();
  const std::string said = binder.bind(greedy, static_cast<int>(cores.size()) + 1);
  EXPECT_NE(said.find(" free cores, " + std::to_string(cores.size() + 1) + " wanted ("),
            std::string::npos)
      << said;
  EXPECT_EQ(binder.bind(narrow).rfind("core 0 ", 0), 0u);
  end(wide);
  end(narrow);
  end(greedy);
}

TEST(CoreBinderOnThisMachine, AProcessRunningEverywhereHoldsNothing) {
  CoreBinder binder(true);
  if (binder.core_lists().empty()) GTEST_SKIP() << "hwloc cannot read this machine";
  const pid_t unbound = sleeper();
  binder.hold_launcher_cores(unbound);
  const pid_t worker = sleeper();
  EXPECT_EQ(binder.bind(worker).rfind("core 0 ", 0), 0u);
  end(worker);
  end(unbound);
}

}  // namespace
}  // namespace fiber::internal
