// Turns for jobs joining a master through one rendezvous port. Open MPI 4.1 mixes up jobs that
// connect to the same port at the same moment: they hang in MPI_Comm_connect or exchange
// messages with the wrong peer (seen with worker pods that start together). Its name server
// cannot serve as a lock (a name published twice is overwritten, one published by another job
// cannot be withdrawn), so the master hands out turns itself, over a TCP socket: a joining job
// asks, waits for its turn, connects, and then closes the socket, which passes the turn on. A
// turn not given back within a time limit (its job vanished while joining) passes on too. Internal.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

namespace fiber::detail {

class JoinTurns {
 public:
  /// Listens on `host` (an address of this machine; empty: all) at a port the kernel picks.
  /// `on_begin` runs (on the turns' thread) as a turn is given, `on_end` as it ends.
  JoinTurns(const std::string& host, std::chrono::seconds turn_limit,
            std::function<void()> on_begin = {}, std::function<void()> on_end = {});
  ~JoinTurns();
  JoinTurns(const JoinTurns&) = delete;
  JoinTurns& operator=(const JoinTurns&) = delete;

  /// "host:port" a joining job asks at.
  const std::string& address() const noexcept { return address_; }

 private:
  void loop();

  int listener_ = -1;
  int wake_[2] = {-1, -1};
  std::string address_;
  std::chrono::seconds turn_limit_;
  std::function<void()> on_begin_;
  std::function<void()> on_end_;
  std::thread thread_;
};

/// Asks the master at `address` ("host:port") for a turn and waits until it is given, at most
/// until `limit` has passed. Returns the socket to close once connected; throws fiber::Error
/// when the master cannot be reached or the wait runs out.
int wait_for_join_turn(const std::string& address, std::chrono::seconds limit);

}  // namespace fiber::detail
