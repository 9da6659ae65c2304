// The progress display, drawn on a real pseudo-terminal: its line, its redraws, its summary, and
// nothing at all where its output is no terminal.
#include "fiber/base/progress_display.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

namespace fiber::internal {
namespace {

using namespace std::chrono_literals;

TEST(ProgressLine, RunningAndDone) {
  EXPECT_EQ(ProgressDisplay::line(4210, 10000, 2s, 4, false, false),
            "fibermpi pool: 4,210/10,000 tasks (42%), 2105 tasks/s, 3 s left, 4 workers");
  EXPECT_EQ(ProgressDisplay::line(10000, 10000, 4s, 1, true, false),
            "fibermpi pool: 10,000/10,000 tasks (100%), 2500 tasks/s, done in 4 s, 1 worker");
  EXPECT_EQ(ProgressDisplay::line(3, 10, 150s, -1, true, true),
            "fibermpi pool: 3/10 tasks (30%), 0.0 tasks/s, stopped at an error after 2 min 30 s");
  EXPECT_EQ(ProgressDisplay::line(1, 7200, 1s, 2, false, false),
            "fibermpi pool: 1/7,200 tasks (0%), 1.0 tasks/s, 1 h 59 min left, 2 workers");
}

TEST(ProgressDisplayOutput, NothingWhereTheOutputIsNoTerminal) {
  int ends[2];
  ASSERT_EQ(::pipe(ends), 0);
  EXPECT_EQ(ProgressDisplay::start(10, nullptr, ends[1]), nullptr);
  ::close(ends[0]);
  ::close(ends[1]);
}

// A pseudo-terminal: the display draws on its follower side, the test reads the leader side.
struct Terminal {
  int leader = -1;
  int follower = -1;
  Terminal() {
    leader = ::posix_openpt(O_RDWR | O_NOCTTY);
    if (leader < 0 || ::grantpt(leader) != 0 || ::unlockpt(leader) != 0) return;
    follower = ::open(::ptsname(leader), O_RDWR | O_NOCTTY);
  }
  ~Terminal() {
    if (follower >= 0) ::close(follower);
    if (leader >= 0) ::close(leader);
  }
  std::string read_for(std::chrono::milliseconds limit) {
    std::string text;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    char buffer[4096];
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd ready{leader, POLLIN, 0};
      if (::poll(&ready, 1, 20) <= 0) continue;
      const ssize_t got = ::read(leader, buffer, sizeof buffer);
      if (got <= 0) break;
      text.append(buffer, static_cast<size_t>(got));
    }
    return text;
  }
};

TEST(ProgressDisplayOutput, RedrawsInPlaceAndEndsWithASummary) {
  Terminal terminal;
  ASSERT_GE(terminal.follower, 0);
  auto display = ProgressDisplay::start(
      100, [] { return 3; }, terminal.follower, 10ms);
  ASSERT_NE(display, nullptr);
  for (int step = 0; step < 5; ++step) {
    display->add(10);
    std::this_thread::sleep_for(30ms);
  }
  display->add(50);
  display->finish(false);
  display->finish(true);  // a second end changes nothing
  const std::string text = terminal.read_for(300ms);
  EXPECT_NE(text.find(" left, 3 workers\x1b[K"), std::string::npos) << text;
  const auto summary = text.rfind("\rfibermpi pool: 100/100 tasks (100%)");
  ASSERT_NE(summary, std::string::npos) << text;
  EXPECT_NE(text.find("done in", summary), std::string::npos);
  // The terminal turns the final newline into CR LF; nothing is drawn after it.
  EXPECT_TRUE(text.ends_with("3 workers\x1b[K\r\n")) << text;
  EXPECT_EQ(text.find("error"), std::string::npos);
}

TEST(ProgressDisplayOutput, AFailedJobSaysSoAndADroppedOneStops) {
  Terminal terminal;
  ASSERT_GE(terminal.follower, 0);
  {
    auto display = ProgressDisplay::start(10, nullptr, terminal.follower, 10ms);
    display->add(3);
    display->finish(true);
  }
  std::string text = terminal.read_for(100ms);
  EXPECT_NE(text.find("3/10 tasks (30%)"), std::string::npos) << text;
  EXPECT_NE(text.find("stopped at an error after"), std::string::npos) << text;
  {
    auto display = ProgressDisplay::start(10, nullptr, terminal.follower, 10ms);
    display->add(1);
    std::this_thread::sleep_for(50ms);
  }
  terminal.read_for(50ms);
  // Once the display is gone its thread draws nothing more.
  EXPECT_EQ(terminal.read_for(100ms), "");
}

}  // namespace
}  // namespace fiber::internal
