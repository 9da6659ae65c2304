// A pool's scheduling against a fake host that records what would be sent: which worker gets
// which chunk, how deep workers' queues get, what happens to the chunks of a worker that dies,
// and that every result counts exactly once. No MPI, no processes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "fiber/errors.h"
#include "fiber/pool/pool_core.h"
#include "fiber/pool/pool_messages.h"
#include "fiber/serialization.h"

namespace fiber::internal {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct Sent {
  Kind kind;
  uint64_t process;
  bool drop_queued;
  std::vector<TaskChunk> chunks;
};

class FakeHost : public PoolHost {
 public:
  std::shared_ptr<ProcessState> new_process_locked(detail::TaskSpec task,
                                                   const std::string& prefix) override {
    auto process = std::make_shared<ProcessState>();
    process->id = next_id_++;
    process->name = prefix + "-" + std::to_string(process->id);
    process->task = std::move(task);
    return process;
  }
  void start_process_locked(const std::shared_ptr<ProcessState>& process) override {
    if (places == 0 && refuse_to) {
      // As the master does once its spawner is stuck: the start fails before this returns.
      ++refused;
      process->status = ProcessStatus::kEnded;
      process->start_error = std::make_exception_ptr(
          SpawnError(process->name + " could not start: the spawner is stuck"));
      refuse_to->on_worker_ended(process);
      return;
    }
    if (places > 0) --places;
    process->status = ProcessStatus::kRunning;
    process->pid = 1000 + static_cast<int>(process->id);
    started.push_back(process);
  }
  void terminate_locked(const std::shared_ptr<ProcessState>& process, int) override {
    terminated.push_back(process->id);
  }
  void send_to_process_locked(const ProcessState& process, const Outgoing& out) override {
    // Decoded as the worker would decode it.
    const bridge::Received in = as_received(out);
    Sent message{out.kind, process.id, false, {}};
    if (out.kind == Kind::kPoolTask) message.chunks = wire::PoolTasks::decode(in).chunks();
    if (out.kind == Kind::kPoolStop) message.drop_queued = wire::PoolStop::decode(in).drop_queued;
    sent.push_back(std::move(message));
  }
  bool on_static_rank_locked(const ProcessState&) const override { return false; }
  bool on_joined_job_locked(const ProcessState&) const override { return false; }
  std::unique_lock<std::mutex> lock() override { return std::unique_lock(mu_); }
  Clock::time_point now() const override { return clock; }

  /// Chunk task ids sent to `process` so far.
  std::vector<uint64_t> tasks_sent_to(uint64_t process) const {
    std::vector<uint64_t> tasks;
    for (const auto& message : sent)
      if (message.process == process)
        for (const auto& chunk : message.chunks) tasks.push_back(chunk.task);
    return tasks;
  }

  /// Starts that still get a process; once 0, every start is refused at once (to refuse_to).
  /// Negative: no limit.
  int places = -1;
  PoolCore* refuse_to = nullptr;
  int refused = 0;
  std::vector<std::shared_ptr<ProcessState>> started;
  std::vector<uint64_t> terminated;
  std::vector<Sent> sent;
  Clock::time_point clock = Clock::now();

 private:
  uint64_t next_id_ = 1;
  std::mutex mu_;
};

wire::PoolResult result_message(uint64_t task, detail::Bytes body) {
  wire::PoolResult result;
  result.task = task;
  result.pool = 5;
  result.body = std::move(body);
  return result;
}

detail::Bytes result_of(int value, std::chrono::microseconds compute) {
  serial::Writer writer;
  serial::save(writer, static_cast<uint64_t>(compute.count() * 1000));
  serial::save(writer, value);
  return writer.take();
}

class PoolSchedulingTest : public ::testing::Test {
 protected:
  std::unique_ptr<PoolCore> make_pool(int processes, int retries = 3) {
    PoolSettings settings;
    settings.processes = processes;
    settings.max_task_retries = retries;
    auto pool = std::make_unique<PoolCore>(host_, 5, settings);
    pool->start_workers_locked();
    return pool;
  }
  void ready_all(PoolCore& pool) {
    for (auto& process : host_.started) pool.on_worker_ready(*process, wire::PoolReady{});
  }
  /// Keeps every chunk's outcome as it came.
  struct RecordingSink final : detail::ResultSink {
    std::map<size_t, detail::ChunkOutcome> outcomes;
    void store(size_t chunk, uint64_t, uint32_t, detail::Bytes& results, size_t offset) override {
      outcomes[chunk] = detail::ChunkOutcome{std::move(results), offset, nullptr};
    }
    void fail(size_t chunk, uint64_t, uint32_t, const std::exception_ptr& error) override {
      outcomes[chunk].error = error;
    }
  };
  /// A job of `chunks` chunks of one item each, every one of which runs whatever the others do.
  std::shared_ptr<detail::Job> submit(PoolCore& pool, int chunks) {
    auto job = std::make_shared<detail::Job>();
    std::vector<detail::Bytes> payloads;
    for (int i = 0; i < chunks; ++i)
      payloads.push_back(detail::Bytes(8, std::byte{static_cast<unsigned char>(i)}));
    job->source = std::make_unique<detail::EncodedChunks>(
        std::move(payloads), std::vector<uint32_t>(static_cast<size_t>(chunks), 1));
    job->sink = std::make_unique<RecordingSink>();
    job->fails_as_whole = false;
    pool.submit_locked(job);
    return job;
  }
  /// The outcome of a chunk, or null while it has none.
  static const detail::ChunkOutcome* outcome_of(const detail::Job& job, size_t chunk) {
    const auto& outcomes = static_cast<const RecordingSink&>(*job.sink).outcomes;
    const auto found = outcomes.find(chunk);
    return found == outcomes.end() ? nullptr : &found->second;
  }
  /// The worker holding task `task` (by what was sent), or 0.
  uint64_t holder_of(uint64_t task) const {
    uint64_t holder = 0;
    for (const auto& message : host_.sent)
      for (const auto& chunk : message.chunks)
        if (chunk.task == task) holder = message.process;
    return holder;
  }
  void end(PoolCore& pool, const std::shared_ptr<ProcessState>& process, int code) {
    process->status = ProcessStatus::kEnded;
    process->exitcode = code;
    pool.on_worker_ended(process);
  }
  static int value_of(const detail::Job& job, size_t chunk) {
    const detail::ChunkOutcome* outcome = outcome_of(job, chunk);
    EXPECT_NE(outcome, nullptr);
    if (!outcome) return -1;
    serial::Reader reader(std::span<const std::byte>(outcome->results).subspan(outcome->offset));
    return serial::read<int>(reader);
  }

  FakeHost host_;
};

TEST_F(PoolSchedulingTest, ARoundOfNTasksOnNIdleWorkersGivesEachOne) {
  auto pool = make_pool(3);
  ASSERT_EQ(host_.started.size(), 3u);
  ready_all(*pool);
  submit(*pool, 3);
  for (const auto& worker : host_.started)
    EXPECT_EQ(host_.tasks_sent_to(worker->id).size(), 1u) << worker->name;
}

TEST_F(PoolSchedulingTest, NothingIsSentBeforeAWorkerIsReady) {
  auto pool = make_pool(2);
  submit(*pool, 4);
  EXPECT_TRUE(host_.sent.empty());
  pool->on_worker_ready(*host_.started[0], wire::PoolReady{});
  // Until results tell how long a chunk runs, a worker holds two while more wait than the pool
  // has workers.
  EXPECT_EQ(host_.tasks_sent_to(host_.started[0]->id).size(), 2u);
}

TEST_F(PoolSchedulingTest, TheFirstWorkerReadyLeavesTheOthersTheirShare) {
  // Two chunks of unknown length on a pool of two whose second worker is still starting: the
  // first worker takes one; the other waits for the second worker instead of queuing behind it.
  auto pool = make_pool(2);
  submit(*pool, 2);
  pool->on_worker_ready(*host_.started[0], wire::PoolReady{});
  EXPECT_EQ(host_.tasks_sent_to(host_.started[0]->id), (std::vector<uint64_t>{1}));
  pool->on_worker_ready(*host_.started[1], wire::PoolReady{});
  EXPECT_EQ(host_.tasks_sent_to(host_.started[1]->id), (std::vector<uint64_t>{2}));
}

TEST_F(PoolSchedulingTest, QueueDepthFollowsTheMeasuredRunTimeOfChunks) {
  auto pool = make_pool(1);
  ready_all(*pool);
  const uint64_t worker = host_.started[0]->id;
  submit(*pool, 40);
  ASSERT_EQ(host_.tasks_sent_to(worker).size(), 2u);
  // Chunks of 100 us: about 2 ms of work queued is 16 chunks (the cap).
  pool->on_result(*host_.started[0], result_message(1, result_of(1, 100us)));
  EXPECT_EQ(host_.tasks_sent_to(worker).size(), 2u + 15u);
  // Long chunks (10 ms): one queued behind the running one while more wait than the pool has
  // workers (no round trip between two chunks)...
  for (uint64_t task = 2; task <= 17; ++task)
    pool->on_result(*host_.started[0], result_message(task, result_of(1, 10000us)));
  EXPECT_EQ(host_.tasks_sent_to(worker).size(), 19u) << "17 answered, 2 held";
  uint64_t answered = 17;
  while (host_.tasks_sent_to(worker).size() < 39u) {
    pool->on_result(*host_.started[0], result_message(++answered, result_of(1, 10000us)));
    ASSERT_EQ(host_.tasks_sent_to(worker).size() - answered, 2u) << answered;
  }
  // ...and one at a time once only one waits: it goes to whichever worker is free first.
  pool->on_result(*host_.started[0], result_message(++answered, result_of(1, 10000us)));
  EXPECT_EQ(host_.tasks_sent_to(worker).size(), 39u) << "the last chunk waits";
  pool->on_result(*host_.started[0], result_message(++answered, result_of(1, 10000us)));
  EXPECT_EQ(host_.tasks_sent_to(worker).size(), 40u);
}

TEST_F(PoolSchedulingTest, ChunksOfALostWorkerRunAgainAndOnlyTheRunningOneIsCharged) {
  // No retries: the chunk the lost worker was running fails at once; the one queued behind it
  // never started, so it runs again elsewhere at no charge.
  auto pool = make_pool(2, /*retries=*/0);
  ready_all(*pool);
  auto job = submit(*pool, 6);  // more than the workers can run: each holds two
  auto lost = host_.started[0];
  const auto held = host_.tasks_sent_to(lost->id);
  ASSERT_EQ(held.size(), 2u);
  pool->on_started(*lost, wire::PoolStarted{held[0], 1});
  end(*pool, lost, -9);
  // Chunk i is task i + 1 here.
  ASSERT_NE(outcome_of(*job, held[0] - 1), nullptr);
  EXPECT_THROW(std::rethrow_exception(outcome_of(*job, held[0] - 1)->error), WorkerLost);
  EXPECT_EQ(outcome_of(*job, held[1] - 1), nullptr);
  // A replacement is started; the queued chunk goes to the survivor or to it.
  ASSERT_EQ(host_.started.size(), 3u);
  pool->on_worker_ready(*host_.started[2], wire::PoolReady{});
  EXPECT_NE(holder_of(held[1]), lost->id);
  EXPECT_NE(holder_of(held[1]), 0u);
}

TEST_F(PoolSchedulingTest, OnlyChunksTheWorkerSaidItStartedAreCharged) {
  auto pool = make_pool(1, /*retries=*/0);
  ready_all(*pool);
  auto job = submit(*pool, 3);
  auto first = host_.started[0];
  // Lost before it said it started anything: nothing is charged, everything runs again.
  end(*pool, first, -9);
  for (size_t chunk = 0; chunk < 3; ++chunk) EXPECT_EQ(outcome_of(*job, chunk), nullptr);
  ASSERT_EQ(host_.started.size(), 2u);
  auto second = host_.started[1];
  pool->on_worker_ready(*second, wire::PoolReady{});
  const auto held = host_.tasks_sent_to(second->id);
  ASSERT_GE(held.size(), 2u);
  // A started report for a chunk it does not hold changes nothing.
  pool->on_started(*second, wire::PoolStarted{999, 1});
  // Its first result says the next chunk started right after it: that one is charged.
  auto result = result_message(held[0], result_of(1, 100us));
  result.next_started = true;
  pool->on_result(*second, std::move(result));
  end(*pool, second, -9);
  ASSERT_NE(outcome_of(*job, held[1] - 1), nullptr);
  EXPECT_THROW(std::rethrow_exception(outcome_of(*job, held[1] - 1)->error), WorkerLost);
}

TEST_F(PoolSchedulingTest, APoisonTaskFailsWithWorkerLostAfterMaxTaskRetries) {
  auto pool = make_pool(1, /*retries=*/1);
  ready_all(*pool);
  auto job = submit(*pool, 1);
  pool->on_started(*host_.started[0], wire::PoolStarted{1, 1});
  end(*pool, host_.started[0], -11);  // attempt 1: run again
  ASSERT_EQ(host_.started.size(), 2u);
  pool->on_worker_ready(*host_.started[1], wire::PoolReady{});
  EXPECT_EQ(holder_of(1), host_.started[1]->id);
  pool->on_started(*host_.started[1], wire::PoolStarted{1, 1});
  end(*pool, host_.started[1], -11);  // attempt 2: more than max_task_retries = 1
  ASSERT_TRUE(job->ready());
  ASSERT_TRUE(job->first_error);
  try {
    std::rethrow_exception(job->first_error);
  } catch (const WorkerLost& e) {
    EXPECT_NE(std::string(e.what()).find("lost 2 times"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("killed by signal 11"), std::string::npos) << e.what();
  }
}

TEST_F(PoolSchedulingTest, StartsRefusedAtOnceDoNotBreakAPoolWhoseWorkerIsStillStarting) {
  // One worker placed (a static rank saying hello), every other start refused before it
  // returns (the spawner is stuck): the refusals must not break the pool before the placed
  // worker has had time to say it is ready.
  PoolSettings settings;
  settings.processes = 4;
  PoolCore pool(host_, 5, settings);
  host_.places = 1;
  host_.refuse_to = &pool;
  pool.start_workers_locked();
  ASSERT_EQ(host_.started.size(), 1u);
  EXPECT_GE(host_.refused, 3);
  EXPECT_LT(host_.refused, 100) << "refused starts must stop being retried";
  EXPECT_EQ(pool.broken_locked(), "");
  EXPECT_EQ(pool.starting_workers_locked(), 1);
  EXPECT_FALSE(pool.short_for_good_locked()) << "a placed worker may still become ready";

  // Ready: the pool tries again to reach its size, is refused a bounded number of times, and
  // runs with the one worker it has.
  const int refused_before = host_.refused;
  pool.on_worker_ready(*host_.started[0], wire::PoolReady{});
  EXPECT_GT(host_.refused, refused_before);
  EXPECT_LT(host_.refused, refused_before + 100);
  EXPECT_TRUE(pool.short_for_good_locked());
  EXPECT_EQ(pool.ready_workers_locked(), 1);
  auto job = submit(pool, 3);
  EXPECT_FALSE(host_.tasks_sent_to(host_.started[0]->id).empty());

  // The last worker dies and nothing can replace it: the pool is broken, the job fails with the
  // reason, and nothing hangs.
  end(pool, host_.started[0], -9);
  ASSERT_TRUE(job->ready());
  EXPECT_NE(pool.broken_locked().find("no worker is left (the last, PoolWorker-1 (pid 1001), was "
                                      "killed by signal 9) and none could replace it"),
            std::string::npos)
      << pool.broken_locked();
  EXPECT_NE(pool.broken_locked().find("could not start: the spawner is stuck"), std::string::npos)
      << pool.broken_locked();
  try {
    std::rethrow_exception(job->first_error);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the Pool cannot run tasks"), std::string::npos)
        << e.what();
  }
}

TEST_F(PoolSchedulingTest, AnAutoscalingPoolWhoseStartsAreRefusedStopsGrowingAndBreaksWhenEmpty) {
  // Growth for a backlog must stop with the replacements: each refused start comes back through
  // dispatch, which would grow again, without end.
  PoolSettings settings;
  settings.processes = 1;
  settings.min_processes = 1;
  settings.max_processes = 4;
  PoolCore pool(host_, 6, settings);
  host_.places = 1;
  host_.refuse_to = &pool;
  pool.start_workers_locked();
  pool.on_worker_ready(*host_.started[0], wire::PoolReady{});
  auto job = submit(pool, 50);
  EXPECT_GT(host_.refused, 0);
  EXPECT_LT(host_.refused, 100);
  EXPECT_EQ(pool.broken_locked(), "");
  EXPECT_FALSE(host_.tasks_sent_to(host_.started[0]->id).empty());
  // A larger size is a new attempt; refused again, and the pool stays usable.
  pool.resize_locked(3);
  EXPECT_EQ(pool.broken_locked(), "");
  EXPECT_EQ(pool.ready_workers_locked(), 1);
  // The last worker dies: broken, whatever the size grew to, and the job fails.
  end(pool, host_.started[0], -9);
  EXPECT_NE(pool.broken_locked().find("none could replace it"), std::string::npos)
      << pool.broken_locked();
  EXPECT_TRUE(job->ready());
}

TEST_F(PoolSchedulingTest, LateResultOfAWorkerDeclaredLostCountsNotAtAll) {
  auto pool = make_pool(2);
  ready_all(*pool);
  auto job = submit(*pool, 1);
  auto first = host_.started[0];
  ASSERT_EQ(holder_of(1), first->id);
  end(*pool, first, -9);
  const uint64_t second = holder_of(1);
  ASSERT_NE(second, first->id);
  // The first worker's result arrives after all: the copy now held by the other counts.
  pool->on_result(*first, result_message(1, result_of(111, 10us)));
  EXPECT_EQ(job->completed, 0u);
  pool->on_result(*host_.started[1], result_message(1, result_of(222, 10us)));
  ASSERT_EQ(job->completed, 1u);
  EXPECT_EQ(value_of(*job, 0), 222);
  // A duplicate of the counted result changes nothing.
  pool->on_result(*host_.started[1], result_message(1, result_of(333, 10us)));
  EXPECT_EQ(job->completed, 1u);
  EXPECT_EQ(value_of(*job, 0), 222);
}

TEST_F(PoolSchedulingTest, TerminateFailsWhatIsOutstandingAndStopsTheWorkers) {
  auto pool = make_pool(2);
  ready_all(*pool);
  auto job = submit(*pool, 6);
  pool->terminate_locked();
  ASSERT_TRUE(job->ready());
  EXPECT_THROW(std::rethrow_exception(job->first_error), TerminatedError);
  // Busy spawned workers are terminated (killed), as in Python.
  EXPECT_EQ(host_.terminated.size(), 2u);
  EXPECT_THROW(submit(*pool, 1), UsageError);
}

TEST_F(PoolSchedulingTest, CloseLetsTheBacklogFinishThenStopsEveryWorker) {
  auto pool = make_pool(2);
  ready_all(*pool);
  auto job = submit(*pool, 2);
  pool->close_locked();
  EXPECT_THROW(submit(*pool, 1), UsageError);
  for (const auto& worker : host_.started) {
    const auto tasks = host_.tasks_sent_to(worker->id);
    ASSERT_EQ(tasks.size(), 1u);
    pool->on_result(*worker, result_message(tasks[0], result_of(7, 10us)));
  }
  EXPECT_EQ(job->completed, 2u);
  size_t stops = 0;
  for (const auto& message : host_.sent) stops += message.kind == Kind::kPoolStop;
  EXPECT_EQ(stops, 2u);
}

TEST_F(PoolSchedulingTest, AutoscalingGrowsOnBacklogAndRetiresIdleWorkers) {
  PoolSettings settings;
  settings.processes = 1;
  settings.min_processes = 1;
  settings.max_processes = 3;
  settings.idle_timeout = 1000ms;
  PoolCore pool(host_, 6, settings);
  pool.start_workers_locked();
  ready_all(pool);
  submit(pool, 10);
  EXPECT_EQ(host_.started.size(), 3u) << "grew to max while tasks wait";
  ready_all(pool);
  // Every chunk answered (answers make room for more), then after the idle timeout the pool
  // shrinks back to min.
  std::set<uint64_t> answered;
  for (bool more = true; more;) {
    more = false;
    for (const auto& message : std::vector<Sent>(host_.sent)) {
      for (const auto& chunk : message.chunks) {
        if (!answered.insert(chunk.task).second) continue;
        for (const auto& worker : host_.started)
          if (worker->id == message.process)
            pool.on_result(*worker, result_message(chunk.task, result_of(1, 10us)));
        more = true;
      }
    }
  }
  EXPECT_EQ(answered.size(), 10u);
  host_.clock += 2s;
  pool.tick_locked(host_.clock);
  EXPECT_EQ(pool.members_locked(), 1);
}

}  // namespace
}  // namespace fiber::internal
