// The liveness and delivery checks, on fake slots and a clock given by the test: no MPI, no
// processes.
#include "fiber/master/liveness_monitor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <set>
#include <vector>

namespace fiber::internal {
namespace {

using namespace std::chrono_literals;

class LivenessMonitorTest : public ::testing::Test {
 protected:
  LivenessMonitorTest()
      : monitor_(settings_, [this](int pid) { return dead_pids_.count(pid) != 0; }) {
    settings_.liveness_interval = 20ms;
    settings_.heartbeat_interval = 500ms;
    settings_.heartbeat_timeout = 5000ms;
  }

  Slot& add_slot(int pid, bool local) {
    auto slot = std::make_unique<Slot>();
    slot->link = &link_;
    slot->pid = pid;
    slot->host = local ? "here" : "elsewhere";
    slot->local = local;
    slot->last_heard = start_;
    slots_.push_back(std::move(slot));
    return *slots_.back();
  }
  std::vector<Slot*> all() const {
    std::vector<Slot*> slots;
    for (const auto& slot : slots_) slots.push_back(slot.get());
    return slots;
  }
  std::vector<LivenessMonitor::Verdict> check_at(Clock::duration after) {
    return monitor_.check(all(), start_ + after, start_);
  }
  static int64_t stamp(Clock::time_point at) { return at.time_since_epoch().count(); }

  Settings settings_;
  std::set<int> dead_pids_;
  LivenessMonitor monitor_;
  Link link_;
  std::vector<std::unique_ptr<Slot>> slots_;
  const Clock::time_point start_ = Clock::now();
};

TEST_F(LivenessMonitorTest, LocalWorkerWhosePidIsGoneIsDeadAfterTwoRounds) {
  Slot& slot = add_slot(101, true);
  add_slot(102, true);
  dead_pids_.insert(101);
  // Messages it sent just before dying may still be in transit: not at the first look.
  EXPECT_TRUE(check_at(10ms).empty());
  EXPECT_TRUE(check_at(25ms).empty());
  const auto verdicts = check_at(50ms);
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_EQ(verdicts[0].slot, &slot);
  EXPECT_TRUE(verdicts[0].dead);
  EXPECT_TRUE(verdicts[0].why.empty());
}

TEST_F(LivenessMonitorTest, PidThatComesBackClearsTheSuspicion) {
  add_slot(101, true);
  dead_pids_.insert(101);
  EXPECT_TRUE(check_at(10ms).empty());
  dead_pids_.clear();
  EXPECT_TRUE(check_at(40ms).empty());
  dead_pids_.insert(101);
  EXPECT_TRUE(check_at(45ms).empty()) << "the two rounds start again";
}

TEST_F(LivenessMonitorTest, RemoteWorkerIsDeadOnlyAfterHeartbeatTimeoutOfSilence) {
  Slot& slot = add_slot(201, false);
  dead_pids_.insert(201);  // another host's pid says nothing
  EXPECT_TRUE(check_at(4900ms).empty());
  const auto verdicts = check_at(5100ms);
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_EQ(verdicts[0].slot, &slot);
  EXPECT_TRUE(verdicts[0].dead);
  EXPECT_NE(verdicts[0].why.find("heartbeat timeout"), std::string::npos) << verdicts[0].why;
}

TEST_F(LivenessMonitorTest, SilenceCountsFromWhenReceivingResumed) {
  add_slot(201, false);
  // The master did not read anything for 4 s (a spawn held its traffic): the worker's
  // heartbeats of that time are still to be read.
  const auto resumed = start_ + 4000ms;
  EXPECT_TRUE(monitor_.check(all(), start_ + 6000ms, resumed).empty());
  EXPECT_EQ(monitor_.check(all(), start_ + 9100ms, resumed).size(), 1u);
}

TEST_F(LivenessMonitorTest, LiveButSilentLocalWorkerIsCutOff) {
  Slot& slot = add_slot(301, true);
  const auto verdicts = check_at(5100ms);
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_EQ(verdicts[0].slot, &slot);
  EXPECT_FALSE(verdicts[0].dead) << "its process lives: it is cut off, not dead";
  EXPECT_NE(verdicts[0].why.find("alive but nothing from it arrived"), std::string::npos);
}

TEST_F(LivenessMonitorTest, WithoutPidChecksOnlySilenceTells) {
  settings_.pid_checks = false;
  add_slot(401, true);
  dead_pids_.insert(401);
  EXPECT_TRUE(check_at(100ms).empty());
  EXPECT_EQ(check_at(5100ms).size(), 1u);
}

TEST_F(LivenessMonitorTest, GoneSlotsAreNotChecked) {
  Slot& slot = add_slot(501, false);
  slot.state = Slot::State::kGone;
  EXPECT_TRUE(check_at(60s).empty());
}

TEST_F(LivenessMonitorTest, HeartbeatSayingMoreWasSentThanArrivedCutsTheWorkerOff) {
  Slot& slot = add_slot(601, false);
  slot.messages_received = 5;
  const auto now = start_ + 1s;
  // It had sent 7 messages before this heartbeat, and only 5 arrived.
  const auto verdict = monitor_.on_heartbeat(slot, 7, 0, stamp(now), now, all());
  ASSERT_TRUE(verdict.has_value());
  EXPECT_FALSE(verdict->dead);
  EXPECT_NE(verdict->why.find("2 of its 7 messages to the master never arrived"), std::string::npos)
      << verdict->why;
}

TEST_F(LivenessMonitorTest, MessagesOwedForLongerThanTheTimeoutCutTheWorkerOff) {
  Slot& slot = add_slot(701, false);
  slot.messages_received = 100;
  slot.messages_sent = 10;
  auto beat = [&](Clock::duration at, uint64_t received) {
    const auto now = start_ + at;
    return monitor_.on_heartbeat(slot, 0, received, stamp(now), now, all());
  };
  // All 10 arrived: nothing owed.
  EXPECT_FALSE(beat(0ms, 10));
  slot.messages_sent = 14;
  EXPECT_FALSE(beat(500ms, 10));   // the 4 new ones had no time yet
  EXPECT_FALSE(beat(1000ms, 11));  // 3 owed since now
  EXPECT_FALSE(beat(5500ms, 11));  // owed for 4.5 s
  const auto verdict = beat(6500ms, 11);
  ASSERT_TRUE(verdict.has_value());
  EXPECT_FALSE(verdict->dead);
  EXPECT_NE(verdict->why.find("still lacks 3 message(s)"), std::string::npos) << verdict->why;
}

TEST_F(LivenessMonitorTest, OwedMessagesThatArriveClearTheDebt) {
  Slot& slot = add_slot(801, false);
  slot.messages_received = 100;
  slot.messages_sent = 14;
  auto beat = [&](Clock::duration at, uint64_t received) {
    const auto now = start_ + at;
    return monitor_.on_heartbeat(slot, 0, received, stamp(now), now, all());
  };
  EXPECT_FALSE(beat(0ms, 10));
  EXPECT_FALSE(beat(500ms, 11));
  EXPECT_TRUE(slot.owing_since.has_value());
  EXPECT_FALSE(beat(1000ms, 14));
  EXPECT_FALSE(slot.owing_since.has_value());
  EXPECT_FALSE(beat(9000ms, 14));
}

TEST_F(LivenessMonitorTest, HeartbeatReadLateSaysNothingAboutDelivery) {
  Slot& slot = add_slot(901, false);
  slot.messages_received = 100;
  slot.messages_sent = 20;
  // The first heartbeats set the quickest delivery (lag 0).
  EXPECT_FALSE(monitor_.on_heartbeat(slot, 0, 20, stamp(start_), start_, all()));
  slot.messages_sent = 30;
  EXPECT_FALSE(monitor_.on_heartbeat(slot, 0, 20, stamp(start_ + 500ms), start_ + 500ms, all()));
  // Read 7 s after it was sent (the master was busy): stale, so the owed count is not trusted.
  const auto sent = start_ + 1000ms;
  EXPECT_FALSE(monitor_.on_heartbeat(slot, 0, 20, stamp(sent), sent + 7s, all()));
  EXPECT_EQ(slot.sent_at_last_beat, 30u) << "a stale heartbeat does not move the mark";
}

TEST_F(LivenessMonitorTest, ManyWorkersOwingAtOnceIsTheMastersProblemNotTheirs) {
  std::vector<Slot*> owing;
  for (int pid = 1001; pid <= 1003; ++pid) {
    Slot& slot = add_slot(pid, false);
    slot.messages_received = 100;
    slot.messages_sent = 10;
    owing.push_back(&slot);
  }
  auto beat = [&](Slot& slot, Clock::duration at) {
    const auto now = start_ + at;
    return monitor_.on_heartbeat(slot, 0, 5, stamp(now), now, all());
  };
  for (Slot* slot : owing) EXPECT_FALSE(beat(*slot, 0ms));
  for (Slot* slot : owing) EXPECT_FALSE(beat(*slot, 500ms));
  for (Slot* slot : owing) EXPECT_FALSE(beat(*slot, 6000ms));
  EXPECT_FALSE(beat(*owing[0], 6500ms));
  EXPECT_TRUE(monitor_.sending_stuck());
}

}  // namespace
}  // namespace fiber::internal
