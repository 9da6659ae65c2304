// fiber::Group across real processes: collectives over group_comm() (values checked on every
// member), membership calls, two groups at once, islands joined by connect/accept, misuse, and
// (suite GroupFault, one program run per test: they end processes of the job) members that
// throw, are killed mid-collective or fail an MPI call, restarts, and terminate().
#include <gtest/gtest.h>
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/mpi.h"
#include "test_support.h"

using namespace std::chrono_literals;
using fiber::testing::seconds_since;

namespace {

constexpr int kLargeCount = 262144;  // 1 MB of floats: Open MPI's rendezvous protocol

// What a member saw: {group_rank, group_size, group_restarts, MPI rank, MPI size, allreduce of
// rank + 1, the root's broadcast value, the large allreduce's first element, then the
// allgathered squares of the ranks}.
void collectives(fiber::SimpleQueue<std::vector<int>> out) {
  MPI_Comm comm = fiber::group_comm();
  int rank = -1, size = -1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int mine = rank + 1, sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, comm);
  int value = rank == 0 ? 4242 : -1;
  MPI_Bcast(&value, 1, MPI_INT, 0, comm);
  std::vector<float> large(kLargeCount, static_cast<float>(rank)), reduced(kLargeCount);
  MPI_Allreduce(large.data(), reduced.data(), kLargeCount, MPI_FLOAT, MPI_SUM, comm);
  std::vector<int> squares(static_cast<size_t>(size));
  const int square = rank * rank;
  MPI_Allgather(&square, 1, MPI_INT, squares.data(), 1, MPI_INT, comm);
  std::vector<int> report = {fiber::group_rank(),
                             fiber::group_size(),
                             fiber::group_restarts(),
                             rank,
                             size,
                             sum,
                             value,
                             static_cast<int>(reduced[kLargeCount - 1])};
  report.insert(report.end(), squares.begin(), squares.end());
  out.put(report);
}

void expect_collectives(fiber::SimpleQueue<std::vector<int>>& out, int size, int restarts = 0) {
  std::set<int> ranks;
  for (int i = 0; i < size; ++i) {
    const auto report = out.get(60s);
    ASSERT_EQ(report.size(), static_cast<size_t>(8 + size));
    EXPECT_EQ(report[0], report[3]) << "group_rank() and the communicator's rank differ";
    EXPECT_EQ(report[1], size);
    EXPECT_EQ(report[2], restarts);
    EXPECT_EQ(report[4], size);
    EXPECT_EQ(report[5], size * (size + 1) / 2);
    EXPECT_EQ(report[6], 4242);
    EXPECT_EQ(report[7], size * (size - 1) / 2);
    for (int r = 0; r < size; ++r) EXPECT_EQ(report[8 + static_cast<size_t>(r)], r * r);
    ranks.insert(report[0]);
  }
  EXPECT_EQ(ranks.size(), static_cast<size_t>(size));
  EXPECT_EQ(*ranks.begin(), 0);
  EXPECT_EQ(*ranks.rbegin(), size - 1);
}

void expect_all_zero(const fiber::Group& group) {
  const auto codes = group.exitcodes();
  ASSERT_EQ(codes.size(), static_cast<size_t>(group.size()));
  for (const auto& code : codes) EXPECT_EQ(code, 0);
}

// Membership calls from the member's own code, and their errors outside a member.
void report_pid(fiber::SimpleQueue<int> out) {
  out.put(static_cast<int>(::getpid()));
  MPI_Barrier(fiber::group_comm());
}

void own_error_handler(fiber::SimpleQueue<int> out) {
  MPI_Comm comm = fiber::group_comm();
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int value = 1;
  // A rank that does not exist: with the program's own handler the call returns its error.
  const int code = MPI_Send(&value, 1, MPI_INT, fiber::group_size() + 5, 0, comm);
  out.put(code == MPI_SUCCESS ? 0 : 1);
  MPI_Barrier(comm);
}

// ---- Faults ----

// Every member but `failing` waits in a barrier the failing one never joins.
void throw_at(int failing) {
  if (fiber::group_rank() == failing) throw std::runtime_error("member gave up");
  MPI_Barrier(fiber::group_comm());
}

void kill_at_mid_collective(int victim, fiber::SimpleQueue<int> started) {
  started.put(fiber::group_rank());
  if (fiber::group_rank() == victim) {
    std::this_thread::sleep_for(300ms);  // the others are inside the allreduce by now
    ::raise(SIGKILL);
  }
  std::vector<double> data(1024, 1.0), sum(1024);
  MPI_Allreduce(data.data(), sum.data(), 1024, MPI_DOUBLE, MPI_SUM, fiber::group_comm());
}

void bad_mpi_call_at(int failing) {
  int value = 0;
  if (fiber::group_rank() == failing)
    MPI_Send(&value, 1, MPI_INT, fiber::group_size() + 3, 0, fiber::group_comm());
  MPI_Barrier(fiber::group_comm());
}

// The first attempt's rank 1 exits 3; later attempts succeed and say which attempt they are.
void fail_first_attempt(fiber::SimpleQueue<std::vector<int>> out) {
  if (fiber::group_restarts() == 0 && fiber::group_rank() == 1) std::exit(3);
  if (fiber::group_restarts() == 0) {
    MPI_Barrier(fiber::group_comm());  // stopped when rank 1 leaves
    return;
  }
  collectives(out);
}

void always_fail() {
  if (fiber::group_rank() == 0) throw std::logic_error("never works");
  MPI_Barrier(fiber::group_comm());
}

void sleep_long() {
  for (int i = 0; i < 600; ++i) std::this_thread::sleep_for(100ms);
}

}  // namespace

TEST(Group, CollectivesOverGroupComm) {
  fiber::SimpleQueue<std::vector<int>> out;
  fiber::Group group(4, collectives, out);
  EXPECT_EQ(group.size(), 4);
  group.start();
  expect_collectives(out, 4);
  group.join();
  expect_all_zero(group);
  EXPECT_EQ(group.restarts(), 0);
}

TEST(Group, OneMember) {
  fiber::SimpleQueue<std::vector<int>> out;
  fiber::Group group(1, collectives, out);
  group.start();
  expect_collectives(out, 1);
  group.join();
  expect_all_zero(group);
}

TEST(Group, TwoGroupsAtOnce) {
  fiber::SimpleQueue<std::vector<int>> out_a, out_b;
  fiber::Group a(fiber::Group::Options{.size = 2}, collectives, out_a);
  fiber::Group b(fiber::Group::Options{.size = 2}, collectives, out_b);
  a.start();
  b.start();
  expect_collectives(out_a, 2);
  expect_collectives(out_b, 2);
  a.join();
  b.join();
  expect_all_zero(a);
  expect_all_zero(b);
}

void report_pid_then_wait(fiber::SimpleQueue<int> out, fiber::SimpleQueue<int> release) {
  out.put(static_cast<int>(::getpid()));
  release.get(120s);
}

TEST(Group, MembersAreDistinctProcessesListedByPid) {
  fiber::SimpleQueue<int> pids, release;
  fiber::Group group(3, report_pid_then_wait, pids, release);
  EXPECT_TRUE(group.member_pids().empty());
  group.start();
  std::set<int> seen;
  for (int i = 0; i < 3; ++i) seen.insert(pids.get(60s));
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen.count(static_cast<int>(::getpid())), 0u);
  // A member is placed before its code runs, so each one that reported is listed.
  const std::vector<int> listed = group.member_pids();
  EXPECT_EQ(std::set<int>(listed.begin(), listed.end()), seen);
  for (int i = 0; i < 3; ++i) release.put(1);
  group.join();
  EXPECT_TRUE(group.member_pids().empty());
  expect_all_zero(group);
}

TEST(Group, MembershipCallsOutsideAMemberAreUsageErrors) {
  EXPECT_THROW(fiber::group_rank(), fiber::UsageError);
  EXPECT_THROW(fiber::group_size(), fiber::UsageError);
  EXPECT_THROW(fiber::group_restarts(), fiber::UsageError);
  try {
    fiber::group_comm();
    FAIL() << "expected UsageError";
  } catch (const fiber::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("inside a member of a fiber::Group"), std::string::npos);
  }
}

TEST(Group, MisuseIsReported) {
  fiber::SimpleQueue<std::vector<int>> out;
  EXPECT_THROW(fiber::Group(0, collectives, out), fiber::UsageError);
  EXPECT_THROW(fiber::Group(fiber::Group::Options{.size = 2, .max_restarts = -1}, collectives, out),
               fiber::UsageError);
  fiber::Group group(2, collectives, out);
  EXPECT_THROW(group.join(), fiber::UsageError);
  group.terminate();  // before start: nothing happens
  group.start();
  EXPECT_THROW(group.start(), fiber::UsageError);
  expect_collectives(out, 2);
  group.join();
  expect_all_zero(group);
}

TEST(Group, CopiesShareOneGroupAndTheLastWaits) {
  fiber::SimpleQueue<std::vector<int>> out;
  {
    fiber::Group group(2, collectives, out);
    fiber::Group copy = group;
    copy.start();
    EXPECT_THROW(group.start(), fiber::UsageError);
    EXPECT_TRUE(group.join(60s));
    EXPECT_EQ(copy.exitcodes(), group.exitcodes());
  }
  {
    // Never joined: the destructor waits for the end, so both reports are there after it.
    fiber::Group unjoined(2, collectives, out);
    unjoined.start();
  }
  expect_collectives(out, 2);
  expect_collectives(out, 2);
}

TEST(Group, JoinWithATimeout) {
  fiber::Group group(2, report_pid, fiber::SimpleQueue<int>());
  group.start();
  EXPECT_TRUE(group.join(60s));
  EXPECT_TRUE(group.join(0ms));
  expect_all_zero(group);
}

TEST(Group, AProgramMaySetItsOwnErrorHandler) {
  fiber::SimpleQueue<int> errors;
  fiber::Group group(2, own_error_handler, errors);
  group.start();
  EXPECT_EQ(errors.get(60s), 1);
  EXPECT_EQ(errors.get(60s), 1);
  group.join();
  expect_all_zero(group);
}

// Six members in batches of two spawns: three islands joined by connect/accept (the
// CTest entry group_test.*.islands sets FIBER_MAX_SPAWN_BATCH=2).
TEST(Group, SixMembers) {
  fiber::SimpleQueue<std::vector<int>> out;
  fiber::Group group(6, collectives, out);
  group.start();
  expect_collectives(out, 6);
  group.join();
  expect_all_zero(group);
}

TEST(GroupFault, MemberThatThrowsStopsTheOthers) {
  fiber::Group group(4, throw_at, 2);
  group.start();
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(group.join(60s));
  EXPECT_LT(seconds_since(start), 30.0);
  const auto codes = group.exitcodes();
  ASSERT_EQ(codes.size(), 4u);
  EXPECT_EQ(codes[2], 1);
  for (int rank : {0, 1, 3}) EXPECT_EQ(codes[static_cast<size_t>(rank)], -SIGTERM) << rank;
  EXPECT_EQ(group.restarts(), 0);
}

TEST(GroupFault, KilledMemberMidCollectiveStopsTheOthers) {
  fiber::SimpleQueue<int> started;
  fiber::Group group(4, kill_at_mid_collective, 1, started);
  group.start();
  for (int i = 0; i < 4; ++i) started.get(60s);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(group.join(60s));
  // Seen by pid (local) or heartbeats within heartbeat_timeout, then stopped at once.
  EXPECT_LT(seconds_since(start), 5.0 + 5.0);
  const auto codes = group.exitcodes();
  ASSERT_EQ(codes.size(), 4u);
  EXPECT_EQ(codes[1], -SIGKILL);
  // Stopped by their runtime, or (Open MPI 5's fault tolerance) ended by the failed allreduce.
  for (int rank : {0, 2, 3}) {
    const auto code = codes[static_cast<size_t>(rank)];
    EXPECT_TRUE(code == -SIGTERM || code == 1) << "rank " << rank << ": " << code.value_or(999);
  }
}

TEST(GroupFault, FailedMpiCallEndsTheMember) {
  fiber::Group group(3, bad_mpi_call_at, 0);
  group.start();
  ASSERT_TRUE(group.join(60s));
  const auto codes = group.exitcodes();
  ASSERT_EQ(codes.size(), 3u);
  EXPECT_EQ(codes[0], 1);
  for (int rank : {1, 2}) {
    const auto code = codes[static_cast<size_t>(rank)];
    EXPECT_TRUE(code == -SIGTERM || code == 1) << "rank " << rank << ": " << code.value_or(999);
  }
}

TEST(GroupFault, RestartsAfterAFailedAttempt) {
  fiber::SimpleQueue<std::vector<int>> out;
  fiber::Group group(fiber::Group::Options{.size = 3, .max_restarts = 2}, fail_first_attempt, out);
  group.start();
  expect_collectives(out, 3, /*restarts=*/1);
  ASSERT_TRUE(group.join(120s));
  EXPECT_EQ(group.restarts(), 1);
  expect_all_zero(group);
}

TEST(GroupFault, RestartsAreBounded) {
  fiber::Group group(fiber::Group::Options{.size = 2, .max_restarts = 2}, always_fail);
  group.start();
  ASSERT_TRUE(group.join(120s));
  EXPECT_EQ(group.restarts(), 2);
  const auto codes = group.exitcodes();
  ASSERT_EQ(codes.size(), 2u);
  EXPECT_EQ(codes[0], 1);
  EXPECT_EQ(codes[1], -SIGTERM);
}

TEST(GroupFault, TerminateStopsEveryMember) {
  fiber::Group group(fiber::Group::Options{.size = 3, .max_restarts = 3}, sleep_long);
  group.start();
  std::this_thread::sleep_for(1500ms);
  const auto start = std::chrono::steady_clock::now();
  group.terminate();
  ASSERT_TRUE(group.join(30s));
  EXPECT_LT(seconds_since(start), 10.0);
  EXPECT_EQ(group.restarts(), 0);
  for (const auto& code : group.exitcodes()) EXPECT_EQ(code, -SIGTERM);
}
