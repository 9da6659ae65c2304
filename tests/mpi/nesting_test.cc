// Nesting: Processes, Pools and Groups made inside a Process, a pool task or a group member get
// their processes from the same master (values, exit codes, errors and callbacks checked), three
// levels deep; what a process leaves running ends with it; (suite NestingFault, a run of its
// own) a killed owner takes what it started along.
#include <gtest/gtest.h>
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <ranges>
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

int square(int x) { return x * x; }
int fail_on_seven(int x) {
  if (x == 7) throw std::out_of_range("seven");
  return x;
}
void exit_with(int code) { std::exit(code); }
void put_pid(fiber::SimpleQueue<int> out) { out.put(static_cast<int>(::getpid())); }
void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// A Process that starts a Process: {inner exit code, inner pid, outer pid, inner pid as the
// inner process saw it}.
void start_inner(fiber::SimpleQueue<std::vector<int>> out) {
  fiber::SimpleQueue<int> pids;
  fiber::Process inner(put_pid, pids);
  inner.start();
  const int seen = pids.get(60s);
  inner.join();
  fiber::Process failing(exit_with, 3);
  failing.start();
  failing.join();
  out.put({inner.exitcode().value_or(-100), inner.pid(), static_cast<int>(::getpid()), seen,
           failing.exitcode().value_or(-100),
           inner.name().rfind("Process-", 0) == 0 && inner.name().find(':') != std::string::npos});
}

// A Process that runs a Pool: map, imap_unordered, apply_async with a callback, an error.
void run_pool(fiber::SimpleQueue<std::vector<int>> out) {
  fiber::Pool pool(2);
  std::vector<int> inputs(20);
  std::iota(inputs.begin(), inputs.end(), 1);
  const auto squares = pool.map(square, inputs, 3);
  int streamed = 0;
  for (int value : pool.imap_unordered(square, inputs)) streamed += value;
  // In order, with a failed chunk (7, 8, 9) in the middle: its error comes once, in its place.
  int ordered = 0;
  int expected_next = 1;
  auto stream = pool.imap(fail_on_seven, inputs, 3);
  for (;;) {
    try {
      auto value = stream.next(60s);
      if (!value) break;
      ordered += *value == expected_next ? 1 : -100;
      expected_next = *value + 1;
    } catch (const fiber::RemoteError&) {
      ordered += 1000;
      expected_next = 10;
    }
  }
  // A pool made here is run by the master, which is sent every input at once.
  int unbounded = 0;
  try {
    pool.imap(square, std::views::iota(0));
  } catch (const fiber::UsageError& e) {
    unbounded = std::string(e.what()).find("unbounded range") != std::string::npos ? 1 : -1;
  }
  fiber::SimpleQueue<int> called;
  auto async = pool.apply_async(square, 12);
  async.on_success([called](int value) { called.put(value); });
  int raised = 0;
  try {
    pool.map(fail_on_seven, inputs);
  } catch (const fiber::RemoteError& e) {
    raised = e.type_name() == "std::out_of_range" && e.message() == "seven" ? 1 : -1;
  }
  pool.wait_ready();
  const auto pids = pool.worker_pids();
  std::vector<int> report = {std::accumulate(squares.begin(), squares.end(), 0),
                             streamed,
                             async.get(),
                             called.get(30s),
                             raised,
                             pool.size(),
                             static_cast<int>(pids.size()),
                             ordered,
                             unbounded};
  pool.close();
  pool.join();
  out.put(report);
}

// A Group member's function: an allreduce over the members' ranks.
void allreduce_ranks(fiber::SimpleQueue<int> out) {
  int rank = fiber::group_rank(), sum = 0;
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, fiber::group_comm());
  if (rank == 0) out.put(sum);
}

// A pool task that runs a Group: {the group's allreduce, its exit codes' sum}.
std::vector<int> group_in_task(int size) {
  fiber::SimpleQueue<int> sums;
  fiber::Group group(size, allreduce_ranks, sums);
  group.start();
  const int sum = sums.get(60s);
  group.join();
  int codes = 0;
  for (const auto& code : group.exitcodes()) codes += code.value_or(100);
  return {sum, codes};
}

// Level 1: a Process that runs a Pool (level 2) whose task runs a Group (level 3).
void three_levels(fiber::SimpleQueue<std::vector<int>> out) {
  fiber::Pool pool(1);
  out.put(pool.apply(group_in_task, 3));
}

// A pool task that runs a Pool of its own (Population-Based Training's members do).
int nested_pool_sum(int n) {
  fiber::Pool inner(2);
  std::vector<int> inputs(static_cast<size_t>(n));
  std::iota(inputs.begin(), inputs.end(), 1);
  const auto squares = inner.map(square, inputs);
  return std::accumulate(squares.begin(), squares.end(), 0);
}

// Leaves a daemonic child sleeping and a non-daemonic one that outlives it a little: the first is
// terminated, the second waited for, when this process ends.
void leave_children(fiber::SimpleQueue<int> out) {
  fiber::Process daemon(sleep_ms, 600000);
  daemon.set_daemon(true);
  daemon.start();
  fiber::Process patient(put_pid, out);
  patient.start();
  out.put(daemon.pid());
}

int report_and_sleep(fiber::SimpleQueue<int> pids) {
  pids.put(static_cast<int>(::getpid()));
  std::this_thread::sleep_for(600s);
  return 0;
}

// Owns a Pool whose two workers are busy for good, then waits to be killed.
void run_pool_then_die(fiber::SimpleQueue<int> own_pid, fiber::SimpleQueue<int> worker_pids) {
  fiber::Pool pool(2);
  auto first = pool.apply_async(report_and_sleep, worker_pids);
  auto second = pool.apply_async(report_and_sleep, worker_pids);
  own_pid.put(static_cast<int>(::getpid()));
  first.wait();
}

bool process_gone(int pid) { return ::kill(pid, 0) == -1 && errno == ESRCH; }

}  // namespace

TEST(Nesting, ProcessInsideAProcess) {
  fiber::SimpleQueue<std::vector<int>> out;
  fiber::Process outer(start_inner, out);
  outer.start();
  const auto report = out.get(120s);
  outer.join();
  EXPECT_EQ(outer.exitcode(), 0);
  ASSERT_EQ(report.size(), 6u);
  EXPECT_EQ(report[0], 0);
  EXPECT_GT(report[1], 0);
  EXPECT_EQ(report[1], report[3]) << "the inner Process's pid as its parent and it saw it";
  EXPECT_NE(report[1], report[2]);
  EXPECT_NE(report[1], static_cast<int>(::getpid()));
  EXPECT_EQ(report[4], 3);
  EXPECT_EQ(report[5], 1) << "a nested Process is named Process-<parent>:<n>";
}

TEST(Nesting, PoolInsideAProcess) {
  fiber::SimpleQueue<std::vector<int>> out;
  fiber::Process outer(run_pool, out);
  outer.start();
  const auto report = out.get(120s);
  outer.join();
  EXPECT_EQ(outer.exitcode(), 0);
  ASSERT_EQ(report.size(), 9u);
  EXPECT_EQ(report[0], 2870);  // sum of squares 1..20
  EXPECT_EQ(report[1], 2870);
  EXPECT_EQ(report[2], 144);
  EXPECT_EQ(report[3], 144);
  EXPECT_EQ(report[4], 1) << "the nested map's RemoteError";
  EXPECT_EQ(report[5], 2);
  EXPECT_EQ(report[6], 2);
  EXPECT_EQ(report[7], 1017) << "17 results in order, and the failed chunk's error once";
  EXPECT_EQ(report[8], 1) << "imap of an unbounded range in a worker's pool";
}

TEST(Nesting, PoolInsideAPoolTask) {
  fiber::Pool outer(2);
  const std::vector<int> sizes = {3, 4, 5, 6};
  const auto sums = outer.map(nested_pool_sum, sizes, 1);
  EXPECT_EQ(sums, (std::vector<int>{14, 30, 55, 91}));
}

TEST(Nesting, ThreeLevelsDeep) {
  fiber::SimpleQueue<std::vector<int>> out;
  fiber::Process outer(three_levels, out);
  outer.start();
  const auto report = out.get(180s);
  outer.join();
  EXPECT_EQ(outer.exitcode(), 0);
  EXPECT_EQ(report, (std::vector<int>{0 + 1 + 2, 0}));
}

TEST(Nesting, WhatAProcessLeavesEndsWithIt) {
  fiber::SimpleQueue<int> out;
  fiber::Process outer(leave_children, out);
  outer.start();
  std::set<int> pids = {out.get(60s), out.get(60s)};
  outer.join();
  EXPECT_EQ(outer.exitcode(), 0);
  EXPECT_EQ(pids.size(), 2u);
  // The daemonic child is terminated once its parent's function returned.
  const auto start = std::chrono::steady_clock::now();
  bool all_gone = false;
  while (!all_gone && seconds_since(start) < 20) {
    all_gone = true;
    for (int pid : pids)
      if (fiber::testing::launch_mode() == "singleton" && !process_gone(pid)) all_gone = false;
    if (!all_gone) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(all_gone);
  EXPECT_TRUE(fiber::active_children().empty());
}

TEST(NestingFault, AKilledOwnerTakesItsPoolAlong) {
  fiber::SimpleQueue<int> owner_pid_queue, pids;
  fiber::Process owner(run_pool_then_die, owner_pid_queue, pids);
  owner.start();
  const int owner_pid = owner_pid_queue.get(120s);
  std::set<int> workers = {pids.get(120s), pids.get(120s)};
  ASSERT_EQ(workers.size(), 2u);
  ASSERT_EQ(::kill(owner_pid, SIGKILL), 0);
  owner.join();
  EXPECT_EQ(owner.exitcode(), -SIGKILL);
  // The pool is terminated with its owner: its busy spawned workers are ended as terminate()
  // ends them.
  const auto start = std::chrono::steady_clock::now();
  bool gone = false;
  while (!gone && seconds_since(start) < 20) {
    gone = std::all_of(workers.begin(), workers.end(), process_gone);
    if (!gone) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(gone) << "the killed owner's pool workers still run";
}
