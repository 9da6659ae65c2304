#include "fiber/queue/queue_hub.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fiber/errors.h"
#include "fiber/wire/message_kind.h"

namespace {

using fiber::internal::kMasterId;
using fiber::internal::Outcome;
using fiber::internal::QueueHub;
using Clock = QueueHub::Clock;
using namespace std::chrono_literals;

constexpr uint64_t kChild = 7;

QueueHub::Bytes item(const std::string& text) {
  QueueHub::Bytes bytes(text.size());
  for (size_t i = 0; i < text.size(); ++i) bytes[i] = static_cast<std::byte>(text[i]);
  return bytes;
}

std::string text(const QueueHub::Bytes& bytes) {
  std::string out(bytes.size(), '\0');
  for (size_t i = 0; i < bytes.size(); ++i) out[i] = static_cast<char>(bytes[i]);
  return out;
}

struct Result {
  Outcome outcome;
  std::string item;
  std::string reason;
};

// One get or poll; the shared state outlives the hub's copy of the completion.
class Call {
 public:
  Call() : results_(std::make_shared<std::vector<Result>>()) {}

  QueueHub::Completion completion() const {
    return [results = results_](Outcome outcome, QueueHub::Bytes bytes, const std::string& reason) {
      results->push_back(Result{outcome, text(bytes), reason});
    };
  }
  bool done() const { return !results_->empty(); }
  size_t times_completed() const { return results_->size(); }
  const Result& result() const { return results_->front(); }

 private:
  std::shared_ptr<std::vector<Result>> results_;
};

Call get(QueueHub& hub, uint64_t queue, uint64_t requester,
         std::optional<Clock::time_point> deadline = std::nullopt) {
  Call call;
  hub.get(queue, requester, deadline, call.completion());
  return call;
}

Call poll(QueueHub& hub, uint64_t queue, uint64_t requester,
          std::optional<Clock::time_point> deadline = std::nullopt) {
  Call call;
  hub.poll(queue, requester, deadline, call.completion());
  return call;
}

void expect_item(const Call& call, const std::string& expected) {
  ASSERT_TRUE(call.done());
  EXPECT_EQ(call.times_completed(), 1u);
  EXPECT_EQ(call.result().outcome, Outcome::kItem);
  EXPECT_EQ(call.result().item, expected);
}

void expect_outcome(const Call& call, Outcome expected) {
  ASSERT_TRUE(call.done());
  EXPECT_EQ(call.times_completed(), 1u);
  EXPECT_EQ(call.result().outcome, expected);
  EXPECT_TRUE(call.result().item.empty());
}

TEST(QueueHubTest, CreateGivesDistinctIds) {
  QueueHub hub;
  const uint64_t first = hub.create(false);
  const uint64_t second = hub.create(true);
  EXPECT_NE(first, 0u);
  EXPECT_NE(second, 0u);
  EXPECT_NE(first, second);
  EXPECT_TRUE(hub.exists(first));
  EXPECT_TRUE(hub.exists(second));
  EXPECT_FALSE(hub.exists(second + 100));
  EXPECT_EQ(hub.size(first), 0u);
}

TEST(QueueHubTest, FifoOrder) {
  QueueHub hub;
  const uint64_t queue = hub.create(false);
  hub.put(queue, item("a"));
  hub.put(queue, item("b"));
  hub.put(queue, item("c"));
  EXPECT_EQ(hub.size(queue), 3u);
  expect_item(get(hub, queue, kMasterId), "a");
  expect_item(get(hub, queue, kChild), "b");
  EXPECT_EQ(hub.size(queue), 1u);
  expect_item(get(hub, queue, kMasterId), "c");
  EXPECT_EQ(hub.size(queue), 0u);
}

TEST(QueueHubTest, QueuesAreIndependent) {
  QueueHub hub;
  const uint64_t first = hub.create(false);
  const uint64_t second = hub.create(false);
  hub.put(first, item("one"));
  const Call waiting = get(hub, second, kMasterId);
  EXPECT_FALSE(waiting.done());
  EXPECT_EQ(hub.size(first), 1u);
  hub.put(second, item("two"));
  expect_item(waiting, "two");
  expect_item(get(hub, first, kMasterId), "one");
}

TEST(QueueHubTest, WaitingGetIsCompletedByLaterPut) {
  QueueHub hub;
  const uint64_t queue = hub.create(false);
  const Call call = get(hub, queue, kMasterId);
  EXPECT_FALSE(call.done());
  hub.put(queue, item("late"));
  expect_item(call, "late");
  EXPECT_EQ(hub.size(queue), 0u);
}

TEST(QueueHubTest, WaitersServedInArrivalOrder) {
  QueueHub hub;
  const uint64_t queue = hub.create(false);
  const Call first = get(hub, queue, 9);
  const Call second = get(hub, queue, kMasterId);
  const Call third = get(hub, queue, 8);
  hub.put(queue, item("x"));
  expect_item(first, "x");
  EXPECT_FALSE(second.done());
  EXPECT_FALSE(third.done());
  hub.put(queue, item("y"));
  hub.put(queue, item("z"));
  expect_item(second, "y");
  expect_item(third, "z");
  EXPECT_EQ(hub.size(queue), 0u);
}

TEST(QueueHubTest, PollReportsItemWithoutConsuming) {
  QueueHub hub;
  const uint64_t queue = hub.create(false);
  hub.put(queue, item("kept"));
  expect_outcome(poll(hub, queue, kMasterId), Outcome::kItem);
  expect_outcome(poll(hub, queue, kChild), Outcome::kItem);
  EXPECT_EQ(hub.size(queue), 1u);
  expect_item(get(hub, queue, kMasterId), "kept");
}

TEST(QueueHubTest, WaitingPollAndGetShareOneItem) {
  QueueHub hub;
  const uint64_t queue = hub.create(false);
  const Call polled = poll(hub, queue, kChild);
  const Call taken = get(hub, queue, kMasterId);
  EXPECT_FALSE(polled.done());
  hub.put(queue, item("only"));
  expect_outcome(polled, Outcome::kItem);
  expect_item(taken, "only");
  EXPECT_EQ(hub.size(queue), 0u);
}

TEST(QueueHubTest, PastDeadlineTimesOutImmediately) {
  QueueHub hub;
  const uint64_t queue = hub.create(false);
  const Call got = get(hub, queue, kMasterId, Clock::now() - 1ms);
  expect_outcome(got, Outcome::kTimeout);
  const Call polled = poll(hub, queue, kChild, Clock::now() - 1s);
  expect_outcome(polled, Outcome::kTimeout);

  hub.put(queue, item("late"));
  EXPECT_EQ(got.times_completed(), 1u);
  EXPECT_EQ(hub.size(queue), 1u);
}

TEST(QueueHubTest, PastDeadlineStillTakesReadyItem) {
  QueueHub hub;
  const uint64_t queue = hub.create(false);
  hub.put(queue, item("ready"));
  expect_item(get(hub, queue, kMasterId, Clock::now() - 1s), "ready");
}

TEST(QueueHubTest, ExpireTimesOutWaitersAndReportsNextDeadline) {
  QueueHub hub;
  const uint64_t queue = hub.create(false);
  const uint64_t other = hub.create(true);
  const auto now = Clock::now();
  const auto soon = now + 10s;
  const auto later = now + 20s;

  const Call early = get(hub, queue, kMasterId, soon);
  const Call late = poll(hub, other, kChild, later);
  const Call forever = get(hub, queue, kChild);
  EXPECT_EQ(hub.expire(now), std::optional<Clock::time_point>(soon));
  EXPECT_FALSE(early.done());

  EXPECT_EQ(hub.expire(now + 15s), std::optional<Clock::time_point>(later));
  expect_outcome(early, Outcome::kTimeout);
  EXPECT_FALSE(late.done());

  EXPECT_EQ(hub.expire(later), std::nullopt);
  expect_outcome(late, Outcome::kTimeout);
  EXPECT_FALSE(forever.done());

  hub.put(queue, item("finally"));
  expect_item(forever, "finally");
  EXPECT_EQ(early.times_completed(), 1u);
  EXPECT_EQ(hub.expire(later + 1h), std::nullopt);
}

TEST(QueueHubTest, ExpireWithNoWaitersReportsNothing) {
  QueueHub hub;
  hub.create(false);
  EXPECT_EQ(hub.expire(Clock::now()), std::nullopt);
}

TEST(QueueHubTest, MasterWaitsOnQueueWithoutChildProducers) {
  QueueHub hub;
  const uint64_t queue = hub.create(false);
  // The poll comes first: a get ahead of it would take the only item and leave it waiting.
  const Call polled = poll(hub, queue, kMasterId);
  const Call got = get(hub, queue, kMasterId);
  hub.process_ended(5, "Process-5 exited with code 0");
  EXPECT_FALSE(got.done());
  EXPECT_FALSE(polled.done());
  hub.put(queue, item("from master"));
  expect_item(got, "from master");
  expect_outcome(polled, Outcome::kItem);
}

TEST(QueueHubTest, MasterGetsEofWhenLastChildProducerEnds) {
  QueueHub hub;
  const uint64_t queue = hub.create(false);
  hub.add_producer(queue, 5);
  const Call got = get(hub, queue, kMasterId);
  EXPECT_FALSE(got.done());
  hub.process_ended(5, "Process-5 (pid 4242) was killed by SIGKILL");
  expect_outcome(got, Outcome::kEof);
  EXPECT_NE(got.result().reason.find("killed by SIGKILL"), std::string::npos)
      << got.result().reason;
  EXPECT_NE(got.result().reason.find("queue " + std::to_string(queue)), std::string::npos)
      << got.result().reason;

  const Call again = get(hub, queue, kMasterId);
  expect_outcome(again, Outcome::kEof);
  expect_outcome(poll(hub, queue, kMasterId), Outcome::kEof);
}

TEST(QueueHubTest, EofWaitsForEveryChildProducer) {
  QueueHub hub;
  const uint64_t queue = hub.create(false);
  hub.add_producer(queue, 5);
  hub.add_producer(queue, 6);
  hub.add_producer(queue, 6);
  const Call got = get(hub, queue, kMasterId);
  hub.process_ended(5, "Process-5 exited");
  EXPECT_FALSE(got.done());
  hub.close_producer(queue, 6, "Process-6 closed its end");
  EXPECT_FALSE(got.done());
  hub.process_ended(6, "Process-6 exited with code 3");
  expect_outcome(got, Outcome::kEof);
  EXPECT_NE(got.result().reason.find("code 3"), std::string::npos) << got.result().reason;
}

TEST(QueueHubTest, ChildNeverGetsEofWhileMasterProduces) {
  QueueHub hub;
  const uint64_t queue = hub.create(false);
  hub.add_producer(queue, 5);
  hub.add_producer(queue, kChild);
  const Call polled = poll(hub, queue, kChild);
  const Call got = get(hub, queue, kChild);
  hub.process_ended(5, "Process-5 exited");
  hub.close_producer(queue, kChild, "Process-7 closed its end");
  EXPECT_FALSE(got.done());
  EXPECT_FALSE(polled.done());
  EXPECT_EQ(hub.expire(Clock::now() + 24h), std::nullopt);
  EXPECT_FALSE(got.done());
  hub.put(queue, item("from master"));
  expect_outcome(polled, Outcome::kItem);
  expect_item(got, "from master");
}

TEST(QueueHubTest, PipeWaitsUntilMasterClosesItsEnd) {
  QueueHub hub;
  const uint64_t pipe = hub.create(true);
  const Call got = get(hub, pipe, kMasterId);
  EXPECT_FALSE(got.done());
  hub.close_producer(pipe, kMasterId, "the master closed its end");
  expect_outcome(got, Outcome::kEof);
  EXPECT_NE(got.result().reason.find("the master closed its end"), std::string::npos)
      << got.result().reason;
  EXPECT_NE(got.result().reason.find("pipe " + std::to_string(pipe)), std::string::npos)
      << got.result().reason;
  expect_outcome(get(hub, pipe, kMasterId), Outcome::kEof);
}

TEST(QueueHubTest, PipeReaderGetsEofOnceMasterClosedAndChildWriterEnded) {
  QueueHub hub;
  const uint64_t pipe = hub.create(true);
  hub.add_producer(pipe, 5);
  hub.close_producer(pipe, kMasterId, "the master closed its end");
  const Call master = get(hub, pipe, kMasterId);
  const Call child = get(hub, pipe, kChild);
  EXPECT_FALSE(master.done());
  EXPECT_FALSE(child.done());
  hub.process_ended(5, "Process-5 was terminated");
  expect_outcome(master, Outcome::kEof);
  expect_outcome(child, Outcome::kEof);
  EXPECT_NE(child.result().reason.find("terminated"), std::string::npos) << child.result().reason;
}

TEST(QueueHubTest, ProcessWaitingOnPipeOnlyItWritesGetsEof) {
  QueueHub hub;
  const uint64_t pipe = hub.create(true);
  hub.add_producer(pipe, kChild);
  hub.close_producer(pipe, kMasterId, "the master closed its end");
  expect_outcome(get(hub, pipe, kChild), Outcome::kEof);
  const Call master = get(hub, pipe, kMasterId);
  EXPECT_FALSE(master.done());
  hub.put(pipe, item("from child"));
  expect_item(master, "from child");
}

TEST(QueueHubTest, QueuedItemsAreDeliveredBeforeEof) {
  QueueHub hub;
  const uint64_t pipe = hub.create(true);
  hub.put(pipe, item("first"));
  hub.put(pipe, item("second"));
  hub.close_producer(pipe, kMasterId, "the master closed its end");
  expect_outcome(poll(hub, pipe, kMasterId), Outcome::kItem);
  expect_item(get(hub, pipe, kMasterId), "first");
  expect_item(get(hub, pipe, kMasterId), "second");
  expect_outcome(get(hub, pipe, kMasterId), Outcome::kEof);

  const uint64_t queue = hub.create(false);
  hub.add_producer(queue, 5);
  hub.put(queue, item("left behind"));
  hub.process_ended(5, "Process-5 exited");
  expect_item(get(hub, queue, kMasterId), "left behind");
  expect_outcome(get(hub, queue, kMasterId), Outcome::kEof);
}

TEST(QueueHubTest, EndedProcessOnlyAffectsQueuesItProducedInto) {
  QueueHub hub;
  const uint64_t fed = hub.create(false);
  const uint64_t unrelated = hub.create(false);
  hub.add_producer(fed, 5);
  hub.add_producer(unrelated, 6);
  const Call on_fed = get(hub, fed, kMasterId);
  const Call on_unrelated = get(hub, unrelated, kMasterId);
  hub.process_ended(5, "Process-5 exited");
  expect_outcome(on_fed, Outcome::kEof);
  EXPECT_FALSE(on_unrelated.done());
}

TEST(QueueHubTest, UnknownQueueThrows) {
  QueueHub hub;
  const uint64_t known = hub.create(false);
  const uint64_t unknown = known + 1000;
  EXPECT_THROW(hub.put(unknown, item("x")), fiber::ProtocolError);
  EXPECT_THROW(hub.size(unknown), fiber::ProtocolError);
  EXPECT_THROW(get(hub, unknown, kMasterId), fiber::ProtocolError);
  EXPECT_THROW(poll(hub, unknown, kChild), fiber::ProtocolError);
  EXPECT_THROW(hub.add_producer(unknown, 5), fiber::ProtocolError);
  EXPECT_THROW(hub.close_producer(unknown, kMasterId, "closed"), fiber::ProtocolError);
  EXPECT_NO_THROW(hub.process_ended(5, "Process-5 exited"));
  EXPECT_EQ(hub.size(known), 0u);
}

// ---- fiber::Queue: bounded puts, task_done and join ----

Call put_wait(QueueHub& hub, uint64_t queue, uint64_t requester, const std::string& text,
              std::optional<Clock::time_point> deadline = std::nullopt) {
  Call call;
  hub.put_wait(queue, requester, item(text), deadline, call.completion());
  return call;
}

Call join(QueueHub& hub, uint64_t queue, uint64_t requester,
          std::optional<Clock::time_point> deadline = std::nullopt) {
  Call call;
  hub.join(queue, requester, deadline, call.completion());
  return call;
}

TEST(QueueHubTest, BoundedPutWaitsForRoomInOrder) {
  QueueHub hub;
  const uint64_t queue = hub.create(false, true, 2);
  expect_outcome(put_wait(hub, queue, kChild, "a"), Outcome::kItem);
  expect_outcome(put_wait(hub, queue, kChild, "b"), Outcome::kItem);
  Call third = put_wait(hub, queue, kChild, "c");
  Call fourth = put_wait(hub, queue, kChild + 1, "d");
  EXPECT_FALSE(third.done());
  EXPECT_EQ(hub.size(queue), 2u);
  expect_item(get(hub, queue, kMasterId), "a");
  expect_outcome(third, Outcome::kItem);  // the first waiting put gets the room
  EXPECT_FALSE(fourth.done());
  expect_item(get(hub, queue, kMasterId), "b");
  expect_outcome(fourth, Outcome::kItem);
  expect_item(get(hub, queue, kMasterId), "c");
  expect_item(get(hub, queue, kMasterId), "d");
}

TEST(QueueHubTest, WaitingGetTakesTheItemOfAWaitingPut) {
  QueueHub hub;
  const uint64_t queue = hub.create(false, true, 1);
  expect_outcome(put_wait(hub, queue, kChild, "a"), Outcome::kItem);
  Call waiting_put = put_wait(hub, queue, kChild, "b");
  expect_item(get(hub, queue, kMasterId), "a");
  expect_outcome(waiting_put, Outcome::kItem);
  expect_item(get(hub, queue, kMasterId), "b");
  EXPECT_EQ(hub.size(queue), 0u);
}

TEST(QueueHubTest, FullQueueTimesOutAPutNowaitAndAWaitingPut) {
  QueueHub hub;
  const uint64_t queue = hub.create(false, true, 1);
  expect_outcome(put_wait(hub, queue, kChild, "a"), Outcome::kItem);
  expect_outcome(put_wait(hub, queue, kChild, "b", Clock::now()), Outcome::kTimeout);
  const auto soon = Clock::now() + 10ms;
  Call waiting = put_wait(hub, queue, kChild, "c", soon);
  EXPECT_EQ(hub.expire(Clock::now()), soon);
  EXPECT_FALSE(waiting.done());
  hub.expire(soon);
  expect_outcome(waiting, Outcome::kTimeout);
  EXPECT_EQ(hub.size(queue), 1u);  // neither timed-out item went in
}

TEST(QueueHubTest, JoinEndsWhenEveryItemIsDone) {
  QueueHub hub;
  const uint64_t queue = hub.create(false, true, 0);
  expect_outcome(join(hub, queue, kMasterId), Outcome::kItem);  // nothing unfinished
  hub.put(queue, item("a"));
  hub.put(queue, item("b"));
  Call joined = join(hub, queue, kMasterId);
  expect_item(get(hub, queue, kChild), "a");
  expect_item(get(hub, queue, kChild + 1), "b");
  EXPECT_EQ(hub.task_done(queue, kChild), std::nullopt);
  EXPECT_FALSE(joined.done());
  EXPECT_EQ(hub.task_done(queue, kChild + 1), std::nullopt);
  expect_outcome(joined, Outcome::kItem);
  const auto problem = hub.task_done(queue, kChild);
  ASSERT_TRUE(problem.has_value());
  EXPECT_NE(problem->find("more times than items were put"), std::string::npos) << *problem;
}

TEST(QueueHubTest, JoinGetsEofWhenTheConsumerOfAnUnfinishedItemEnded) {
  QueueHub hub;
  const uint64_t queue = hub.create(false, true, 0);
  hub.put(queue, item("a"));
  hub.put(queue, item("b"));
  expect_item(get(hub, queue, kChild), "a");
  Call joined = join(hub, queue, kMasterId);
  hub.process_ended(kChild, "Process-7 (pid 70) was killed by signal 9");
  EXPECT_FALSE(joined.done());  // "b" can still be taken and done
  expect_item(get(hub, queue, kChild + 1), "b");
  EXPECT_EQ(hub.task_done(queue, kChild + 1), std::nullopt);
  ASSERT_TRUE(joined.done());
  EXPECT_EQ(joined.result().outcome, Outcome::kEof);
  EXPECT_NE(joined.result().reason.find("Process-7 (pid 70) was killed by signal 9"),
            std::string::npos)
      << joined.result().reason;
}

TEST(QueueHubTest, TaskDoneByAnotherProcessCountsForTheTaker) {
  QueueHub hub;
  const uint64_t queue = hub.create(false, true, 0);
  hub.put(queue, item("a"));
  expect_item(get(hub, queue, kChild), "a");
  // The taker handed the item on; the other process marks it done.
  EXPECT_EQ(hub.task_done(queue, kChild + 1), std::nullopt);
  hub.process_ended(kChild, "Process-7 ended");
  expect_outcome(join(hub, queue, kMasterId), Outcome::kItem);
}

TEST(QueueHubTest, EndedProcessDropsItsWaitingPut) {
  QueueHub hub;
  const uint64_t queue = hub.create(false, true, 1);
  hub.add_producer(queue, kChild);
  expect_outcome(put_wait(hub, queue, kChild, "a"), Outcome::kItem);
  Call waiting = put_wait(hub, queue, kChild, "b");
  hub.process_ended(kChild, "Process-7 ended");
  EXPECT_FALSE(waiting.done());
  expect_item(get(hub, queue, kMasterId), "a");
  EXPECT_EQ(hub.size(queue), 0u);  // the dead producer's item never went in
}

}  // namespace
