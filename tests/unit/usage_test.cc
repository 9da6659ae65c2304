#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "fiber/fiber.h"

void usage_test_task(int value) { (void)value; }

namespace {

// Checks both the exception type and that the message tells the user what to do.
void expect_needs_init(const std::function<void()>& action) {
  try {
    action();
    ADD_FAILURE() << "no exception thrown";
  } catch (const fiber::UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("fiber::init"), std::string::npos) << error.what();
  } catch (const std::exception& error) {
    ADD_FAILURE() << "expected fiber::UsageError, got: " << error.what();
  }
}

TEST(UsageTest, NotInitialized) { EXPECT_FALSE(fiber::is_initialized()); }

TEST(UsageTest, SimpleQueueNeedsInit) {
  expect_needs_init([] { fiber::SimpleQueue<int> queue; });
  expect_needs_init([] { fiber::SimpleQueue<std::string> queue; });
}

TEST(UsageTest, PipeNeedsInit) {
  expect_needs_init([] { fiber::Pipe<int>(); });
  expect_needs_init([] { fiber::Pipe<std::string>(false); });
}

TEST(UsageTest, ProcessNeedsInit) {
  expect_needs_init([] { fiber::Process process(usage_test_task, 1); });
  expect_needs_init([] { fiber::Process process([](int value) { return value * 2; }, 3); });
}

TEST(UsageTest, CurrentProcessNeedsInit) {
  expect_needs_init([] { fiber::current_process(); });
  expect_needs_init([] { fiber::active_children(); });
}

TEST(UsageTest, HandleFromTheWireNeedsInit) {
  const auto bytes = fiber::serial::to_bytes(uint64_t{1});
  fiber::serial::Reader reader(bytes);
  const auto queue = fiber::SimpleQueue<int>::fiber_load(reader);
  expect_needs_init([&queue] { queue.put(1); });
  expect_needs_init([&queue] { (void)queue.empty(); });
}

TEST(UsageTest, ShutdownWithoutInitDoesNothing) {
  EXPECT_NO_THROW(fiber::shutdown());
  EXPECT_FALSE(fiber::is_initialized());
}

TEST(UsageTest, FailedCallsLeaveRuntimeStopped) {
  EXPECT_THROW(fiber::SimpleQueue<int>(), fiber::UsageError);
  EXPECT_THROW(fiber::Pipe<int>(), fiber::UsageError);
  EXPECT_FALSE(fiber::is_initialized());
}

}  // namespace
