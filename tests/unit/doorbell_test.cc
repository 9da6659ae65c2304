// The doorbell that wakes a sleeping poller: rings go through real FIFOs and a shared word,
// within one process and across a fork.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "mpi_bridge/doorbell.h"

using namespace std::chrono_literals;
using fiber::bridge::Doorbell;

namespace {

// A directory of doorbells, removed at the end.
class DoorbellTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/fibermpi-doorbell-test-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_F(DoorbellTest, OpeningCreatesTheFifoAndTheSharedWord) {
  Doorbell bell;
  ASSERT_TRUE(bell.open(dir_, 1001));
  EXPECT_TRUE(std::filesystem::is_fifo(Doorbell::path_for(dir_, 1001)));
  EXPECT_TRUE(std::filesystem::is_regular_file(Doorbell::sleepers_path_for(dir_, 1001)));
}

TEST_F(DoorbellTest, ARingToAPeerThatIsNotAboutToSleepWritesNothing) {
  Doorbell receiver;
  Doorbell sender;
  ASSERT_TRUE(receiver.open(dir_, 1001));
  sender.ring(dir_, 1001);
  // Nothing was written, so this sleep runs to its end.
  receiver.prepare_sleep();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(receiver.sleep(20ms));
  EXPECT_GE(seconds_since(start), 0.019);
}

TEST_F(DoorbellTest, ARingAfterTheSleepWasAnnouncedWakesTheSleeper) {
  Doorbell receiver;
  Doorbell sender;
  ASSERT_TRUE(receiver.open(dir_, 1001));
  receiver.prepare_sleep();
  sender.ring(dir_, 1001);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(receiver.sleep(10s));
  EXPECT_LT(seconds_since(start), 1.0);
  // The ring was drained and the announcement ended: the next ring is not written.
  sender.ring(dir_, 1001);
  receiver.prepare_sleep();
  EXPECT_FALSE(receiver.sleep(10ms));
}

TEST_F(DoorbellTest, ACancelledSleepIsNoLongerRung) {
  Doorbell receiver;
  Doorbell sender;
  ASSERT_TRUE(receiver.open(dir_, 1001));
  receiver.prepare_sleep();
  receiver.cancel_sleep();
  sender.ring(dir_, 1001);
  receiver.prepare_sleep();
  EXPECT_FALSE(receiver.sleep(10ms));
}

TEST_F(DoorbellTest, ASleepAnnouncedBeforeTheDoorbellOpenedIsUncountedWhereItWasCounted) {
  Doorbell receiver;
  Doorbell sender;
  receiver.prepare_sleep();
  ASSERT_TRUE(receiver.open(dir_, 1001));
  receiver.cancel_sleep();
  // Had the cancel come off the shared word, it would read as 2^32 - 1 sleepers and every ring
  // would be written from now on.
  sender.ring(dir_, 1001);
  receiver.prepare_sleep();
  EXPECT_FALSE(receiver.sleep(10ms));
}

TEST_F(DoorbellTest, AThreadDoesNotRingItselfDuringItsLastLook) {
  Doorbell bell;
  ASSERT_TRUE(bell.open(dir_, 1001));
  bell.prepare_sleep();
  // What it changes during its last look it sees after the look: a ring would only end its sleep
  // at once (a busy loop when every look changes something).
  bell.ring_self();
  EXPECT_FALSE(bell.sleep(10ms));
}

TEST_F(DoorbellTest, ARingFromAnotherThreadWakesASleeperOfTheSameProcess) {
  Doorbell bell;
  ASSERT_TRUE(bell.open(dir_, 1001));
  std::atomic<bool> announced{false};
  std::atomic<bool> rung{false};
  std::thread sleeper([&] {
    bell.prepare_sleep();
    announced = true;
    rung = bell.sleep(10s);
  });
  while (!announced) std::this_thread::yield();
  const auto start = std::chrono::steady_clock::now();
  bell.ring_self();
  sleeper.join();
  EXPECT_TRUE(rung);
  EXPECT_LT(seconds_since(start), 5.0);
}

TEST_F(DoorbellTest, RingsReachASleeperInAnotherProcess) {
  int announced[2];
  ASSERT_EQ(::pipe(announced), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(announced[0]);
    Doorbell bell;
    if (!bell.open(dir_, static_cast<int>(::getpid()))) ::_exit(2);
    bell.prepare_sleep();
    const char byte = 1;
    if (::write(announced[1], &byte, 1) != 1) ::_exit(3);
    ::_exit(bell.sleep(30s) ? 0 : 1);
  }
  ::close(announced[1]);
  char byte = 0;
  ASSERT_EQ(::read(announced[0], &byte, 1), 1);
  ::close(announced[0]);
  const auto start = std::chrono::steady_clock::now();
  Doorbell sender;
  sender.ring(dir_, static_cast<int>(child));
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's sleep was not ended by the ring";
  EXPECT_LT(seconds_since(start), 5.0);
}
