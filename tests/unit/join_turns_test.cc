// Join turns over real TCP sockets on this machine's loopback: IPv4, IPv6 and the dual-stack
// listener a pod without a known address gets; addresses as pods' status.podIP gives them.
#include "fiber/kubernetes/join_turns.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fiber/errors.h"

namespace fiber::internal {
namespace {

using namespace std::chrono_literals;

// Machines (and containers) with IPv6 switched off have no ::1 to listen on.
bool has_ipv6_loopback() {
  try {
    JoinTurns probe("::1", 1s);
    return true;
  } catch (const Error&) {
    return false;
  }
}

#define REQUIRE_IPV6() \
  if (!has_ipv6_loopback()) GTEST_SKIP() << "this machine has no IPv6 loopback (::1)"

std::string port_of(const std::string& address) { return split_join_turn_address(address).second; }

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(JoinTurnAddress, IPv6HostsAreBracketedAndSplitBack) {
  EXPECT_EQ(join_turn_address("10.1.2.3", 4000), "10.1.2.3:4000");
  EXPECT_EQ(join_turn_address("fd00:10:244::5", 4000), "[fd00:10:244::5]:4000");
  EXPECT_EQ(join_turn_address("[::1]", 7), "[::1]:7");
  EXPECT_EQ(join_turn_address("launcher.ns.svc", 80), "launcher.ns.svc:80");
  EXPECT_EQ(split_join_turn_address("[fd00:10:244::5]:4000"),
            (std::pair<std::string, std::string>{"fd00:10:244::5", "4000"}));
  EXPECT_EQ(split_join_turn_address("10.1.2.3:65535"),
            (std::pair<std::string, std::string>{"10.1.2.3", "65535"}));
}

TEST(JoinTurnAddress, MalformedAddressesAreRefusedNamingTheProblem) {
  EXPECT_EQ(error_of([] { split_join_turn_address("fd00::5:4000"); }),
            "fibermpi: bad join-turn address 'fd00::5:4000': an IPv6 address must be in [ ]");
  EXPECT_EQ(error_of([] { split_join_turn_address("[fd00::5:4000"); }),
            "fibermpi: bad join-turn address '[fd00::5:4000': an IPv6 address in [ ] has no ]");
  EXPECT_EQ(error_of([] { split_join_turn_address("[fd00::5]4000"); }),
            "fibermpi: bad join-turn address '[fd00::5]4000': no :port after ]");
  EXPECT_EQ(error_of([] { split_join_turn_address("10.1.2.3"); }),
            "fibermpi: bad join-turn address '10.1.2.3': no :port");
  EXPECT_EQ(error_of([] { split_join_turn_address("10.1.2.3:0"); }),
            "fibermpi: bad join-turn address '10.1.2.3:0': the port is not a number from 1 to "
            "65535");
  EXPECT_EQ(error_of([] { split_join_turn_address("10.1.2.3:http"); }),
            "fibermpi: bad join-turn address '10.1.2.3:http': the port is not a number from 1 to "
            "65535");
  EXPECT_EQ(error_of([] { split_join_turn_address(":4000"); }),
            "fibermpi: bad join-turn address ':4000': no host");
  EXPECT_EQ(error_of([] { JoinTurns turns("10.1.2.300", 60s); }),
            "fibermpi: '10.1.2.300' is not an IPv4 or IPv6 address to hand out join turns at");
}

TEST(JoinTurns, AnIPv4ListenerGivesTurns) {
  JoinTurns turns("127.0.0.1", 60s);
  EXPECT_EQ(turns.address().rfind("127.0.0.1:", 0), 0u) << turns.address();
  const int fd = wait_for_join_turn(turns.address(), 10s).fd;
  EXPECT_GE(fd, 0);
  ::close(fd);
}

TEST(JoinTurns, AnIPv6ListenerGivesTurnsAtABracketedAddress) {
  REQUIRE_IPV6();
  JoinTurns turns("::1", 60s);
  EXPECT_EQ(turns.address().rfind("[::1]:", 0), 0u) << turns.address();
  const int fd = wait_for_join_turn(turns.address(), 10s).fd;
  EXPECT_GE(fd, 0);
  ::close(fd);
  JoinTurns bracketed("[::1]", 60s);
  ::close(wait_for_join_turn(bracketed.address(), 10s).fd);
}

TEST(JoinTurns, AListenerOnNoAddressTakesBothFamilies) {
  REQUIRE_IPV6();
  JoinTurns turns("", 60s);
  const std::string port = port_of(turns.address());
  ::close(wait_for_join_turn("127.0.0.1:" + port, 10s).fd);
  ::close(wait_for_join_turn("[::1]:" + port, 10s).fd);
  ::close(wait_for_join_turn("localhost:" + port, 10s).fd);
}

TEST(JoinTurns, OneTurnAtATimeAndAClosedSocketPassesItOn) {
  std::atomic<int> begun{0}, ended{0};
  JoinTurns turns(
      "127.0.0.1", 60s, [&] { ++begun; }, [&] { ++ended; });
  const int first = wait_for_join_turn(turns.address(), 10s).fd;
  auto second =
      std::async(std::launch::async, [&] { return wait_for_join_turn(turns.address(), 10s); });
  EXPECT_EQ(second.wait_for(500ms), std::future_status::timeout);  // waits while the first holds
  ::close(first);
  ASSERT_EQ(second.wait_for(5s), std::future_status::ready);
  ::close(second.get().fd);
  for (int i = 0; i < 50 && ended < 2; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(begun, 2);
  EXPECT_EQ(ended, 2);
}

TEST(JoinTurns, APodThatJoinedIsWatchedAndItsEndIsHeardAtOnce) {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> gone;
  JoinTurns turns("127.0.0.1", 60s, {}, {}, [&](const std::string& pod, int pid) {
    std::lock_guard lock(mutex);
    gone.push_back(pod + " " + std::to_string(pid));
    changed.notify_all();
  });
  const int first = wait_for_join_turn(turns.address(), 10s).fd;
  hand_back_join_turn(first, "job-worker-0/0f3a-77", 4242);
  // The turn passed on although the first pod's socket stays open.
  const int second = wait_for_join_turn(turns.address(), 5s).fd;
  hand_back_join_turn(second, "job-worker-1", 17);
  {
    std::unique_lock lock(mutex);
    EXPECT_FALSE(changed.wait_for(lock, 300ms, [&] { return !gone.empty(); }));
  }
  const auto closed = std::chrono::steady_clock::now();
  ::close(first);  // as the kernel does when the pod's processes die
  {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(changed.wait_for(lock, 5s, [&] { return !gone.empty(); }));
    EXPECT_EQ(gone, (std::vector<std::string>{"job-worker-0/0f3a-77 4242"}));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - closed, 1s);
  ::close(second);
  std::unique_lock lock(mutex);
  ASSERT_TRUE(changed.wait_for(lock, 5s, [&] { return gone.size() == 2; }));
  EXPECT_EQ(gone[1], "job-worker-1 17");
}

TEST(JoinTurns, AMalformedJoinNoticeClosesTheConnectionAndPassesTheTurn) {
  std::atomic<int> gone{0};
  JoinTurns turns("127.0.0.1", 60s, {}, {}, [&](const std::string&, int) { ++gone; });
  const int first = wait_for_join_turn(turns.address(), 10s).fd;
  const std::string bad = "jNot_A_Pod 12\n";
  ASSERT_EQ(::send(first, bad.data(), bad.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bad.size()));
  const int second = wait_for_join_turn(turns.address(), 5s).fd;  // the turn passed on
  char byte = 0;
  EXPECT_EQ(::recv(first, &byte, 1, 0), 0);  // the launcher closed the first one
  ::close(first);
  ::close(second);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(gone, 0);  // neither said it joined: nothing to watch
}

TEST(JoinTurns, NobodyListeningIsAnErrorNamingTheAddress) {
  std::string address;
  {
    JoinTurns gone("127.0.0.1", 60s);
    address = gone.address();
  }
  const std::string error = error_of([&] { wait_for_join_turn(address, 2s); });
  EXPECT_EQ(error.rfind("fibermpi: cannot reach the master at " + address + ": ", 0), 0u) << error;
}

}  // namespace
}  // namespace fiber::internal
