// The reserve's policy in the process table: where a process goes, which idle workers leave, how
// many to spawn. Fake links and slots, no MPI.
#include "fiber/master/process_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

namespace fiber::internal {
namespace {

using namespace std::chrono_literals;

constexpr const char* kProgram = "/opt/app/trainer";

class ProcessTableTest : public ::testing::Test {
 protected:
  ProcessTableTest() : table_(settings_) {
    static_world_.spawned = false;
    spawned_.spawned = true;
    spawned_.executable = kProgram;
    old_spawn_.spawned = true;
    old_spawn_.executable = "/opt/app/old-trainer";
    joined_.connected = true;
    settings_.reserve_max_idle = 3;
    settings_.reserve_idle_timeout = 60s;
    settings_.processes_ahead = 2;
  }

  Slot& add(Link& link, int pid, bool used = false, Clock::duration idle_for = 0s) {
    auto slot = std::make_unique<Slot>();
    slot->link = &link;
    slot->rank = next_rank_++;
    slot->pid = pid;
    slot->used = used;
    slot->idle_since = now_ - idle_for;
    return table_.add(std::move(slot));
  }
  static ProcessState pool_worker() {
    ProcessState process;
    process.pool = 7;
    return process;
  }
  static ProcessState plain_process() { return ProcessState{}; }
  std::vector<int> trimmed_pids(Clock::time_point at, bool* fresh_expired = nullptr) {
    std::vector<int> pids;
    for (Slot* slot : table_.reserve_to_trim(at, kProgram, fresh_expired))
      pids.push_back(slot->pid);
    std::sort(pids.begin(), pids.end());
    return pids;
  }

  Settings settings_;
  ProcessTable table_;
  Link static_world_, spawned_, old_spawn_, joined_;
  int next_rank_ = 0;
  const Clock::time_point now_ = Clock::now();
};

TEST_F(ProcessTableTest, StaticRanksFirstThenJoinedJobsThenTheReserve) {
  add(spawned_, 30, true);
  add(joined_, 20);
  Slot& rank = add(static_world_, 10);
  EXPECT_EQ(table_.pick_idle_slot(pool_worker(), kProgram), &rank);
  rank.state = Slot::State::kBusy;
  EXPECT_EQ(table_.pick_idle_slot(pool_worker(), kProgram)->pid, 20);
}

TEST_F(ProcessTableTest, PoolsTakeUsedWorkersAndLeaveFreshOnesForProcesses) {
  Slot& fresh = add(spawned_, 31);
  Slot& used = add(spawned_, 32, true);
  EXPECT_EQ(table_.pick_idle_slot(pool_worker(), kProgram), &used);
  EXPECT_EQ(table_.pick_idle_slot(plain_process(), kProgram), &fresh);
  used.state = Slot::State::kBusy;
  EXPECT_EQ(table_.pick_idle_slot(pool_worker(), kProgram), &fresh)
      << "a pool takes a fresh one when no used one is idle";
}

TEST_F(ProcessTableTest, AProcessNeverRunsInAWorkerThatRanSomethingElse) {
  add(spawned_, 41, true);
  add(spawned_, 42, true);
  EXPECT_EQ(table_.pick_idle_slot(plain_process(), kProgram), nullptr);
}

TEST_F(ProcessTableTest, AWorkerOfAFreshProcessesPoolTakesOnlyANeverUsedSpawnedWorker) {
  ProcessState fresh_worker = pool_worker();
  fresh_worker.needs_fresh_process = true;
  add(static_world_, 10);
  add(joined_, 20);
  add(spawned_, 30, /*used=*/true);
  EXPECT_EQ(table_.pick_idle_slot(fresh_worker, kProgram), nullptr);
  Slot& never_used = add(spawned_, 40);
  EXPECT_EQ(table_.pick_idle_slot(fresh_worker, kProgram), &never_used);
}

TEST_F(ProcessTableTest, BusyClosingLeavingAndOtherProgramsAreNotPicked) {
  add(spawned_, 51).state = Slot::State::kBusy;
  add(spawned_, 52).state = Slot::State::kClosing;
  add(joined_, 53).leaving = true;
  add(old_spawn_, 54);
  EXPECT_EQ(table_.pick_idle_slot(pool_worker(), kProgram), nullptr);
  EXPECT_EQ(table_.pick_idle_slot(plain_process(), kProgram), nullptr);
}

TEST_F(ProcessTableTest, ReserveBeyondItsLimitLosesUsedWorkersFirstLongestIdleFirst) {
  add(spawned_, 61, false, 50s);
  add(spawned_, 62, true, 10s);
  add(spawned_, 63, true, 40s);
  add(spawned_, 64, true, 20s);
  add(spawned_, 65, false, 1s);
  // 5 idle, 3 may stay: the two used ones idle longest leave.
  EXPECT_EQ(trimmed_pids(now_), (std::vector<int>{63, 64}));
}

TEST_F(ProcessTableTest, IdleTimeoutAndOtherProgramsEmptyTheReserve) {
  add(spawned_, 71, true, 61s);
  add(spawned_, 72, true, 59s);
  add(old_spawn_, 73, true, 1s);
  add(static_world_, 74, false, 600s);  // static ranks are never trimmed
  EXPECT_EQ(trimmed_pids(now_), (std::vector<int>{71, 73}));
}

TEST_F(ProcessTableTest, AnExpiredFreshWorkerIsReported) {
  add(spawned_, 81, false, 61s);
  bool fresh_expired = false;
  EXPECT_EQ(trimmed_pids(now_, &fresh_expired), (std::vector<int>{81}));
  EXPECT_TRUE(fresh_expired);
}

TEST_F(ProcessTableTest, SpawnWantedCountsPendingMinusComingPlusProcessesAhead) {
  for (int i = 0; i < 5; ++i)
    table_.pending().push_back(table_.create(detail::TaskSpec{}, "PoolWorker"));
  EXPECT_EQ(table_.spawn_wanted(0, false, kProgram), 5);
  EXPECT_EQ(table_.spawn_wanted(3, false, kProgram), 2);
  EXPECT_EQ(table_.spawn_wanted(8, false, kProgram), 0);
  // Once Processes had to be spawned, 2 never-used ones are kept ready; 3 coming beyond the
  // pending ones count.
  EXPECT_EQ(table_.spawn_wanted(5, true, kProgram), 2);
  EXPECT_EQ(table_.spawn_wanted(8, true, kProgram), 0);
  table_.pending().clear();
  add(spawned_, 91);
  add(old_spawn_, 92);  // another program's never-used worker does not count
  EXPECT_EQ(table_.spawn_wanted(0, true, kProgram), 1);
}

TEST_F(ProcessTableTest, ProcessesGetIncreasingIdsAndNames) {
  auto first = table_.create(detail::TaskSpec{}, "Process");
  auto second = table_.create(detail::TaskSpec{}, "PoolWorker");
  EXPECT_EQ(first->name, "Process-" + std::to_string(first->id));
  EXPECT_EQ(second->name, "PoolWorker-" + std::to_string(second->id));
  EXPECT_GT(second->id, first->id);
  EXPECT_NE(first->id, kMasterId);
}

}  // namespace
}  // namespace fiber::internal
