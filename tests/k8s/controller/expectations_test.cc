#include "k8s/controller/expectations.h"

#include <gtest/gtest.h>

namespace fiber::k8s::controller {
namespace {

using namespace std::chrono_literals;

class ExpectationsTest : public ::testing::Test {
 protected:
  Expectations::Clock::time_point now_{};
  Expectations expectations_{5min, [this] { return now_; }};
};

TEST_F(ExpectationsTest, NothingExpectedIsSatisfied) {
  EXPECT_TRUE(expectations_.satisfied("ns/a"));
}

TEST_F(ExpectationsTest, CreationsWaitUntilEachIsObserved) {
  expectations_.expect_creations("ns/a", {"a-worker-0", "a-worker-1"});
  EXPECT_FALSE(expectations_.satisfied("ns/a"));
  EXPECT_TRUE(expectations_.satisfied("ns/b"));
  expectations_.creation_observed("ns/a", "a-worker-0");
  expectations_.creation_observed("ns/a", "a-worker-0");
  EXPECT_FALSE(expectations_.satisfied("ns/a"));
  expectations_.creation_observed("ns/b", "a-worker-1");  // another job's key changes nothing
  EXPECT_FALSE(expectations_.satisfied("ns/a"));
  expectations_.creation_observed("ns/a", "a-worker-1");
  EXPECT_TRUE(expectations_.satisfied("ns/a"));
}

TEST_F(ExpectationsTest, DeletionsWaitUntilEachIsObserved) {
  expectations_.expect_deletions("ns/a", {"a-worker-3"});
  expectations_.expect_creations("ns/a", {"a-launcher"});
  expectations_.creation_observed("ns/a", "a-launcher");
  EXPECT_FALSE(expectations_.satisfied("ns/a"));
  expectations_.deletion_observed("ns/a", "a-worker-3");
  EXPECT_TRUE(expectations_.satisfied("ns/a"));
}

TEST_F(ExpectationsTest, ExpireAfterTheirTtl) {
  expectations_.expect_creations("ns/a", {"a-worker-0"});
  now_ += 5min - 1ms;
  EXPECT_FALSE(expectations_.satisfied("ns/a"));
  now_ += 1ms;
  EXPECT_TRUE(expectations_.satisfied("ns/a"));
  EXPECT_TRUE(expectations_.satisfied("ns/a"));
}

TEST_F(ExpectationsTest, NewExpectationRestartsTheClock) {
  expectations_.expect_creations("ns/a", {"a-worker-0"});
  now_ += 4min;
  expectations_.expect_deletions("ns/a", {"a-worker-1"});
  now_ += 4min;
  EXPECT_FALSE(expectations_.satisfied("ns/a"));
}

TEST_F(ExpectationsTest, ForgetDropsTheJob) {
  expectations_.expect_creations("ns/a", {"a-worker-0"});
  expectations_.expect_newer_job("ns/a", "10");
  expectations_.forget("ns/a");
  EXPECT_TRUE(expectations_.satisfied("ns/a"));
  EXPECT_FALSE(expectations_.job_is_stale("ns/a", "10"));
}

TEST_F(ExpectationsTest, JobVersionWrittenOverIsStaleUntilANewerOneIsSeen) {
  expectations_.expect_newer_job("ns/a", "10");
  EXPECT_TRUE(expectations_.job_is_stale("ns/a", "10"));
  EXPECT_FALSE(expectations_.job_is_stale("ns/b", "10"));
  EXPECT_FALSE(expectations_.job_is_stale("ns/a", "11"));
  // Once a newer version was seen, the old one is not remembered any more.
  EXPECT_FALSE(expectations_.job_is_stale("ns/a", "10"));
}

TEST_F(ExpectationsTest, StaleJobVersionExpires) {
  expectations_.expect_newer_job("ns/a", "10");
  now_ += 5min;
  EXPECT_FALSE(expectations_.job_is_stale("ns/a", "10"));
}

}  // namespace
}  // namespace fiber::k8s::controller
