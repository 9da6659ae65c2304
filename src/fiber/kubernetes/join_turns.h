// Turns for jobs joining a master through one rendezvous port. Open MPI 4.1 mixes up jobs that
// connect to the same port at the same moment: they hang in MPI_Comm_connect or exchange
// messages with the wrong peer (seen with worker pods that start together). Its name server
// cannot serve as a lock (a name published twice is overwritten, one published by another job
// cannot be withdrawn), so the master hands out turns itself, over a TCP socket: a joining job
// asks, waits for its turn, connects, and then says so on the socket ("j<pod>/<uid> <pid>\n"),
// which passes the turn on (closing the socket does too). A turn not given back within a time limit
// (its job vanished while joining) passes on too. The socket of a pod that said it joined stays
// open for the life of that process (the pod's rank 0): when it closes (the process died and the
// kernel closed it) that worker is gone, which the launcher hears at once (Open MPI 4.1 gives it no
// "peer hung up" event, and heartbeats take heartbeat_timeout). Internal.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <utility>

namespace fiber::detail {

class JoinTurns {
 public:
  /// Listens on `host` (an IPv4 or IPv6 address of this machine, the latter bare or in [ ];
  /// empty: every address, IPv6 and IPv4 where the machine has IPv6) at a port the kernel picks.
  /// Throws fiber::Error naming `host` when it is no address or cannot be listened on.
  /// `on_begin` runs (on the turns' thread) as a turn is given, `on_end` as it ends.
  /// `on_pod_gone` runs (on the turns' thread) with the pod's identity ("name/uid") and the pid
  /// of the process that held the connection when the connection of a pod that joined closes.
  JoinTurns(const std::string& host, std::chrono::seconds turn_limit,
            std::function<void()> on_begin = {}, std::function<void()> on_end = {},
            std::function<void(const std::string&, int)> on_pod_gone = {});
  ~JoinTurns();
  JoinTurns(const JoinTurns&) = delete;
  JoinTurns& operator=(const JoinTurns&) = delete;

  /// "host:port" a joining job asks at; "[v6]:port" for an IPv6 host.
  const std::string& address() const noexcept { return address_; }

 private:
  void loop();

  int listener_ = -1;
  int wake_[2] = {-1, -1};
  std::string address_;
  std::chrono::seconds turn_limit_;
  std::function<void()> on_begin_;
  std::function<void()> on_end_;
  std::function<void(const std::string&, int)> on_pod_gone_;
  std::thread thread_;
};

/// "host:port", with an IPv6 host in brackets ("[fd00::5]:4000").
std::string join_turn_address(const std::string& host, int port);

/// The host (brackets removed) and the port of a join-turn address; throws fiber::Error naming
/// the address and what is wrong with it.
std::pair<std::string, std::string> split_join_turn_address(const std::string& address);

/// Gives the turn back once this pod's job has connected: tells the launcher that process `pid`
/// of pod `pod` ("name/uid", pod_identity_from_environment()) joined, and keeps the socket open
/// for the life of the process (its end tells the launcher that worker is gone). A malformed
/// identity closes it instead.
void hand_back_join_turn(int turn, const std::string& pod, int pid);

/// Asks the master at `address` ("host:port", "[v6]:port", a host name of either family) for a turn
/// and waits until it is given, at most until `limit` has passed. Returns the socket to close once
/// connected; throws fiber::Error when the master cannot be reached or the wait runs out.
int wait_for_join_turn(const std::string& address, std::chrono::seconds limit);

}  // namespace fiber::detail
