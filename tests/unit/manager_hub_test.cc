#include "fiber/manager/manager_hub.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fiber/errors.h"
#include "fiber/function_ref.h"
#include "fiber/serialization.h"

namespace {

using fiber::detail::ObjectOp;
using fiber::detail::ObjectType;
using fiber::internal::Failure;
using fiber::internal::ManagerHub;
using fiber::internal::ObjectResult;
using fiber::internal::Outcome;
using Clock = ManagerHub::Clock;
using Bytes = ManagerHub::Bytes;
using namespace std::chrono_literals;

constexpr uint64_t kAlice = 7;
constexpr uint64_t kBob = 8;

// The outcomes one call reported; shared, so it outlives the hub's copy of the completion.
class Call {
 public:
  Call() : results_(std::make_shared<std::vector<ObjectResult>>()) {}
  ManagerHub::Completion completion() const {
    return [results = results_](ObjectResult result) { results->push_back(std::move(result)); };
  }
  bool done() const { return !results_->empty(); }
  size_t times() const { return results_->size(); }
  const ObjectResult& result() const { return results_->front(); }

 private:
  std::shared_ptr<std::vector<ObjectResult>> results_;
};

Bytes words(uint64_t first, std::optional<uint8_t> flag = std::nullopt) {
  fiber::serial::Writer writer;
  fiber::serial::save(writer, first);
  if (flag) fiber::serial::save(writer, *flag);
  return writer.take();
}

class ManagerHubTest : public ::testing::Test {
 protected:
  ManagerHubTest() : hub_([this](const std::string& line) { log_.push_back(line); }) {}

  Call call(uint64_t object, ObjectOp op, uint64_t who, Bytes args = {},
            std::optional<Clock::time_point> deadline = std::nullopt) {
    Call c;
    hub_.call(object, op, who, "Process-" + std::to_string(who), args, deadline, c.completion());
    return c;
  }
  ObjectResult now(uint64_t object, ObjectOp op, uint64_t who = kAlice, Bytes args = {}) {
    Call c = call(object, op, who, std::move(args));
    EXPECT_TRUE(c.done());
    EXPECT_EQ(c.times(), 1u);
    return c.done() ? c.result() : ObjectResult{};
  }
  static Bytes key_value(const std::string& key, int value) {
    fiber::serial::Writer writer;
    const auto key_bytes = fiber::serial::to_bytes(key);
    writer.write_size(key_bytes.size());
    writer.write_bytes(key_bytes.data(), key_bytes.size());
    fiber::serial::save(writer, value);
    return writer.take();
  }

  ManagerHub hub_;
  std::vector<std::string> log_;
};

TEST_F(ManagerHubTest, DictKeepsInsertionOrderAndAnswersEachOperation) {
  const uint64_t dict = hub_.create(ObjectType::kDict, {});
  EXPECT_EQ(
      now(dict, ObjectOp::kDictGet, kAlice, fiber::serial::to_bytes(std::string("b"))).outcome,
      Outcome::kValue);  // absent
  now(dict, ObjectOp::kDictSet, kAlice, key_value("b", 2));
  now(dict, ObjectOp::kDictSet, kBob, key_value("a", 1));
  now(dict, ObjectOp::kDictSet, kAlice, key_value("b", 3));  // replaced in place
  const auto got = now(dict, ObjectOp::kDictGet, kAlice, fiber::serial::to_bytes(std::string("b")));
  EXPECT_EQ(got.outcome, Outcome::kItem);
  EXPECT_EQ(fiber::serial::from_bytes<int>(got.bytes), 3);
  EXPECT_EQ(now(dict, ObjectOp::kDictSize).value, 2u);
  const auto listed = now(dict, ObjectOp::kDictItems);
  fiber::serial::Reader items(listed.bytes);
  ASSERT_EQ(items.read_size(), 2u);
  EXPECT_EQ(fiber::serial::from_bytes<std::string>(items.read_span(items.read_size())), "b");
  items.read_span(items.read_size());
  EXPECT_EQ(fiber::serial::from_bytes<std::string>(items.read_span(items.read_size())), "a");
  EXPECT_EQ(
      now(dict, ObjectOp::kDictErase, kAlice, fiber::serial::to_bytes(std::string("b"))).value, 1u);
  EXPECT_EQ(
      now(dict, ObjectOp::kDictContains, kAlice, fiber::serial::to_bytes(std::string("b"))).value,
      0u);
  now(dict, ObjectOp::kDictClear);
  EXPECT_EQ(now(dict, ObjectOp::kDictSize).value, 0u);
}

TEST_F(ManagerHubTest, ListIndexOutOfRangeIsAUsageErrorNamingIndexAndSize) {
  const uint64_t list = hub_.create(ObjectType::kList, {});
  now(list, ObjectOp::kListAppend, kAlice, fiber::serial::to_bytes(4));
  const auto bad = now(list, ObjectOp::kListGet, kAlice, fiber::serial::to_bytes(uint64_t{5}));
  EXPECT_EQ(bad.outcome, Outcome::kError);
  EXPECT_EQ(bad.failure, Failure::kUsage);
  EXPECT_NE(bad.reason.find("index 5"), std::string::npos) << bad.reason;
  EXPECT_NE(bad.reason.find("1 items"), std::string::npos) << bad.reason;
  EXPECT_EQ(now(list, ObjectOp::kListSize).value, 1u);
}

TEST_F(ManagerHubTest, WrongOperationAndUnknownObjectAreProtocolErrors) {
  const uint64_t dict = hub_.create(ObjectType::kDict, {});
  EXPECT_THROW(call(dict, ObjectOp::kLockAcquire, kAlice), fiber::ProtocolError);
  EXPECT_THROW(call(dict + 100, ObjectOp::kDictSize, kAlice), fiber::ProtocolError);
  EXPECT_THROW(call(dict, ObjectOp::kDictSet, kAlice, Bytes(3)), fiber::ProtocolError);
  EXPECT_THROW(hub_.create(ObjectType::kHosted, {}), fiber::ProtocolError);
  EXPECT_THROW(hub_.create(ObjectType::kBarrier, fiber::serial::to_bytes(uint64_t{0})),
               fiber::UsageError);
}

TEST_F(ManagerHubTest, LockIsGrantedInArrivalOrderAndReleasedWhenItsHolderEnds) {
  const uint64_t lock = hub_.create(ObjectType::kLock, {});
  EXPECT_EQ(now(lock, ObjectOp::kLockAcquire, kAlice).outcome, Outcome::kItem);
  Call bob = call(lock, ObjectOp::kLockAcquire, kBob);
  Call carol = call(lock, ObjectOp::kLockAcquire, kBob + 1);
  EXPECT_FALSE(bob.done());
  hub_.process_ended(kAlice, "Process-7 (pid 70) was killed by signal 9");
  ASSERT_TRUE(bob.done());
  EXPECT_EQ(bob.result().outcome, Outcome::kItem);
  EXPECT_FALSE(carol.done());
  ASSERT_EQ(log_.size(), 1u);
  EXPECT_NE(log_[0].find("was killed by signal 9"), std::string::npos) << log_[0];
  now(lock, ObjectOp::kLockRelease, kBob);
  ASSERT_TRUE(carol.done());
  now(lock, ObjectOp::kLockRelease, kAlice);  // any process may release
  const auto unheld = now(lock, ObjectOp::kLockRelease, kAlice);
  EXPECT_EQ(unheld.failure, Failure::kUsage);
}

TEST_F(ManagerHubTest, LockWaitTimesOutAndADeadWaiterIsDropped) {
  const uint64_t lock = hub_.create(ObjectType::kLock, {});
  now(lock, ObjectOp::kLockAcquire, kAlice);
  EXPECT_EQ(call(lock, ObjectOp::kLockAcquire, kBob, {}, Clock::now()).result().outcome,
            Outcome::kTimeout);
  const auto soon = Clock::now() + 5ms;
  Call bob = call(lock, ObjectOp::kLockAcquire, kBob, {}, soon);
  Call dead = call(lock, ObjectOp::kLockAcquire, kBob + 1);
  EXPECT_EQ(hub_.expire(Clock::now()), soon);
  hub_.expire(soon);
  EXPECT_EQ(bob.result().outcome, Outcome::kTimeout);
  hub_.process_ended(kBob + 1, "ended");
  now(lock, ObjectOp::kLockRelease, kAlice);
  EXPECT_FALSE(dead.done());  // nobody is left to answer
  EXPECT_EQ(now(lock, ObjectOp::kLockHeld).value, 0u);
}

TEST_F(ManagerHubTest, AnEventWaitFromAGenerationSeesASetThatAClearUndid) {
  const uint64_t event = hub_.create(ObjectType::kEvent, {});
  const uint64_t state = now(event, ObjectOp::kEventState).value;
  EXPECT_EQ(state % 2, 0u);
  now(event, ObjectOp::kEventSet);
  now(event, ObjectOp::kEventClear);
  EXPECT_EQ(now(event, ObjectOp::kEventWait, kAlice, words(state / 2)).outcome, Outcome::kItem);
  const uint64_t later = now(event, ObjectOp::kEventState).value;
  EXPECT_EQ(later, state + 2);
  EXPECT_EQ(
      call(event, ObjectOp::kEventWait, kAlice, words(later / 2), Clock::now()).result().outcome,
      Outcome::kTimeout);
}

TEST_F(ManagerHubTest, EventWakesEveryWaiter) {
  const uint64_t event = hub_.create(ObjectType::kEvent, {});
  Call first = call(event, ObjectOp::kEventWait, kAlice);
  Call second = call(event, ObjectOp::kEventWait, kBob);
  EXPECT_FALSE(first.done());
  now(event, ObjectOp::kEventSet);
  EXPECT_EQ(first.result().outcome, Outcome::kItem);
  EXPECT_EQ(second.result().outcome, Outcome::kItem);
  EXPECT_EQ(now(event, ObjectOp::kEventIsSet).value, 1u);
  now(event, ObjectOp::kEventClear);
  EXPECT_EQ(call(event, ObjectOp::kEventWait, kAlice, {}, Clock::now()).result().outcome,
            Outcome::kTimeout);
}

TEST_F(ManagerHubTest, BarrierPassesWithArrivalIndicesAndBreaksWhenAWaitingPartyEnds) {
  const uint64_t barrier = hub_.create(ObjectType::kBarrier, fiber::serial::to_bytes(uint64_t{3}));
  Call a = call(barrier, ObjectOp::kBarrierWait, kAlice);
  Call b = call(barrier, ObjectOp::kBarrierWait, kBob);
  EXPECT_EQ(now(barrier, ObjectOp::kBarrierWaiting).value, 2u);
  const auto last = now(barrier, ObjectOp::kBarrierWait, kBob + 1);
  EXPECT_EQ(last.value, 2u);
  EXPECT_EQ(a.result().value, 0u);
  EXPECT_EQ(b.result().value, 1u);
  // A second round: a party that ends while waiting breaks it for the others.
  Call c = call(barrier, ObjectOp::kBarrierWait, kAlice);
  Call d = call(barrier, ObjectOp::kBarrierWait, kBob);
  hub_.process_ended(kAlice, "Process-7 (pid 70) was killed by signal 9");
  ASSERT_TRUE(d.done());
  EXPECT_EQ(d.result().failure, Failure::kBrokenBarrier);
  EXPECT_NE(d.result().reason.find("killed by signal 9"), std::string::npos);
  EXPECT_FALSE(c.done());  // the dead party gets no answer
  EXPECT_EQ(now(barrier, ObjectOp::kBarrierWait, kBob).failure, Failure::kBrokenBarrier);
  now(barrier, ObjectOp::kBarrierReset);
  EXPECT_EQ(now(barrier, ObjectOp::kBarrierBroken).value, 0u);
}

TEST_F(ManagerHubTest, BarrierTimeoutBreaksItForEveryWaiter) {
  const uint64_t barrier = hub_.create(ObjectType::kBarrier, fiber::serial::to_bytes(uint64_t{3}));
  const auto soon = Clock::now() + 5ms;
  Call patient = call(barrier, ObjectOp::kBarrierWait, kAlice);
  Call hasty = call(barrier, ObjectOp::kBarrierWait, kBob, {}, soon);
  hub_.expire(soon);
  EXPECT_EQ(patient.result().failure, Failure::kBrokenBarrier);
  EXPECT_EQ(hasty.result().failure, Failure::kBrokenBarrier);
  EXPECT_NE(hasty.result().reason.find("timed out"), std::string::npos);
}

TEST_F(ManagerHubTest, BarrierSliceThatEndsWithdrawsThePartyWithoutBreakingIt) {
  const uint64_t barrier = hub_.create(ObjectType::kBarrier, fiber::serial::to_bytes(uint64_t{2}));
  const auto soon = Clock::now() + 5ms;
  const Bytes slice{std::byte{1}};
  Call sliced = call(barrier, ObjectOp::kBarrierWait, kAlice, slice, soon);
  hub_.expire(soon);
  EXPECT_EQ(sliced.result().outcome, Outcome::kTimeout);
  EXPECT_EQ(now(barrier, ObjectOp::kBarrierBroken).value, 0u);
  EXPECT_EQ(now(barrier, ObjectOp::kBarrierWaiting).value, 0u);
  Call again = call(barrier, ObjectOp::kBarrierWait, kAlice, slice);
  EXPECT_EQ(now(barrier, ObjectOp::kBarrierWait, kBob).value, 1u);
  EXPECT_EQ(again.result().value, 0u);
}

TEST_F(ManagerHubTest, BarrierPartyThatEndsBetweenSlicesBreaksIt) {
  const uint64_t barrier = hub_.create(ObjectType::kBarrier, fiber::serial::to_bytes(uint64_t{3}));
  const auto soon = Clock::now() + 5ms;
  Call bob = call(barrier, ObjectOp::kBarrierWait, kBob);
  Call sliced = call(barrier, ObjectOp::kBarrierWait, kAlice, Bytes{std::byte{1}}, soon);
  hub_.expire(soon);
  ASSERT_EQ(sliced.result().outcome, Outcome::kTimeout);
  EXPECT_FALSE(bob.done());
  hub_.process_ended(kAlice, "Process-7 (pid 70) was killed by signal 9");
  ASSERT_TRUE(bob.done());
  EXPECT_EQ(bob.result().failure, Failure::kBrokenBarrier);
}

TEST_F(ManagerHubTest, SemaphoreCountsAndItsBoundRefusesAnExtraRelease) {
  fiber::serial::Writer payload;
  fiber::serial::save(payload, uint64_t{1});
  fiber::serial::save(payload, uint64_t{2});
  const uint64_t semaphore = hub_.create(ObjectType::kSemaphore, payload.take());
  EXPECT_EQ(now(semaphore, ObjectOp::kSemaphoreAcquire).outcome, Outcome::kItem);
  EXPECT_EQ(call(semaphore, ObjectOp::kSemaphoreAcquire, kBob, {}, Clock::now()).result().outcome,
            Outcome::kTimeout);
  Call waiting = call(semaphore, ObjectOp::kSemaphoreAcquire, kBob);
  EXPECT_FALSE(waiting.done());
  now(semaphore, ObjectOp::kSemaphoreRelease, kAlice, words(2));
  EXPECT_EQ(waiting.result().outcome, Outcome::kItem);
  EXPECT_EQ(now(semaphore, ObjectOp::kSemaphoreValue).value, 1u);
  const auto extra = now(semaphore, ObjectOp::kSemaphoreRelease, kAlice, words(2));
  EXPECT_EQ(extra.failure, Failure::kUsage);
  EXPECT_NE(extra.reason.find("released too many times"), std::string::npos) << extra.reason;
  EXPECT_EQ(now(semaphore, ObjectOp::kSemaphoreValue).value, 1u);
  fiber::serial::Writer above;
  fiber::serial::save(above, uint64_t{3});
  fiber::serial::save(above, uint64_t{2});
  EXPECT_THROW(hub_.create(ObjectType::kSemaphore, above.take()), fiber::UsageError);
  // A bound of 0 is a bound (BoundedSemaphore(0)); none is kUnbounded.
  fiber::serial::Writer zero;
  fiber::serial::save(zero, uint64_t{0});
  fiber::serial::save(zero, uint64_t{0});
  const uint64_t empty = hub_.create(ObjectType::kSemaphore, zero.take());
  EXPECT_EQ(now(empty, ObjectOp::kSemaphoreRelease, kAlice, words(1)).failure, Failure::kUsage);
  fiber::serial::Writer open;
  fiber::serial::save(open, uint64_t{0});
  fiber::serial::save(open, fiber::detail::kUnbounded);
  const uint64_t unbounded = hub_.create(ObjectType::kSemaphore, open.take());
  EXPECT_EQ(now(unbounded, ObjectOp::kSemaphoreRelease, kAlice, words(5)).outcome, Outcome::kItem);
  EXPECT_EQ(now(unbounded, ObjectOp::kSemaphoreValue).value, 5u);
}

TEST_F(ManagerHubTest, ConditionWakesTicketsOldestFirstAndRemembersAnEarlyNotify) {
  const uint64_t condition = hub_.create(ObjectType::kCondition, {});
  const uint64_t first = now(condition, ObjectOp::kConditionEnqueue, kAlice).value;
  const uint64_t second = now(condition, ObjectOp::kConditionEnqueue, kBob).value;
  Call bob = call(condition, ObjectOp::kConditionWait, kBob, words(second));
  EXPECT_EQ(now(condition, ObjectOp::kConditionWaiting).value, 2u);
  // Alice is notified before she waits (she was between unlocking and waiting).
  EXPECT_EQ(now(condition, ObjectOp::kConditionNotify, kBob + 1, words(1)).value, 1u);
  EXPECT_FALSE(bob.done());
  EXPECT_EQ(now(condition, ObjectOp::kConditionWait, kAlice, words(first)).outcome, Outcome::kItem);
  EXPECT_EQ(now(condition, ObjectOp::kConditionNotify, kBob + 1, words(5)).value, 1u);
  EXPECT_EQ(bob.result().outcome, Outcome::kItem);
  EXPECT_EQ(now(condition, ObjectOp::kConditionWait, kAlice, words(first)).failure,
            Failure::kUsage);
}

TEST_F(ManagerHubTest, ConditionSliceKeepsTheTicketAndADeadWaitersTicketGoes) {
  const uint64_t condition = hub_.create(ObjectType::kCondition, {});
  const uint64_t ticket = now(condition, ObjectOp::kConditionEnqueue, kAlice).value;
  const auto soon = Clock::now() + 5ms;
  Call slice = call(condition, ObjectOp::kConditionWait, kAlice, words(ticket, 1), soon);
  hub_.expire(soon);
  EXPECT_EQ(slice.result().outcome, Outcome::kTimeout);
  EXPECT_EQ(now(condition, ObjectOp::kConditionWaiting).value, 1u);
  // A whole wait that times out gives its ticket up: notify does not count it.
  Call last = call(condition, ObjectOp::kConditionWait, kAlice, words(ticket), Clock::now());
  EXPECT_EQ(last.result().outcome, Outcome::kTimeout);
  EXPECT_EQ(now(condition, ObjectOp::kConditionWaiting).value, 0u);
  const uint64_t bobs = now(condition, ObjectOp::kConditionEnqueue, kBob).value;
  Call bob = call(condition, ObjectOp::kConditionWait, kBob, words(bobs));
  hub_.process_ended(kBob, "ended");
  EXPECT_EQ(now(condition, ObjectOp::kConditionWaiting).value, 0u);
  EXPECT_EQ(now(condition, ObjectOp::kConditionNotify, kAlice, words(1)).value, 0u);
  EXPECT_FALSE(bob.done());
}

void double_it(Bytes& value, fiber::serial::Reader& argument) {
  const int factor = fiber::serial::read<int>(argument);
  value = fiber::serial::to_bytes(fiber::serial::from_bytes<int>(value) * factor);
}

TEST_F(ManagerHubTest, ValueApplyRunsTheUpdaterAndAnswersTheOldValue) {
  const uint64_t value = hub_.create(ObjectType::kValue, fiber::serial::to_bytes(21));
  fiber::serial::Writer args;
  const auto ref =
      fiber::detail::ModuleTable::instance().encode(reinterpret_cast<const void*>(&double_it));
  fiber::serial::save(args, ref.module_id);
  fiber::serial::save(args, ref.offset);
  fiber::serial::save(args, 2);
  const auto old = now(value, ObjectOp::kValueApply, kAlice, args.take());
  EXPECT_EQ(fiber::serial::from_bytes<int>(old.bytes), 21);
  EXPECT_EQ(fiber::serial::from_bytes<int>(now(value, ObjectOp::kValueGet).bytes), 42);
}

}  // namespace
