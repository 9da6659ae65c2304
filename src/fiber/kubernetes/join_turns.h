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
// "peer hung up" event, and heartbeats take heartbeat_timeout). With a join token (JoinGuard)
// every connection first proves it, and the master proves it back (join_handshake.h), before it
// may wait for a turn, and the turn's grant carries the master's MPI port: a connection that
// does not prove it is refused, logged and closed. Internal.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "fiber/kubernetes/join_token.h"

namespace fiber::internal {

/// How long each step of the join handshake may take: a peer that stalls or sends half a
/// message is dropped after this.
inline constexpr std::chrono::milliseconds kJoinHandshakeLimit{10000};

/// What guards the turns: the token each joining job must prove, and the MPI port its grant
/// hands over. Without a token, turns are given to whoever asks (and the port is found
/// elsewhere: the name service, FIBER_CONNECT).
struct JoinGuard {
  std::optional<JoinToken> token;
  std::string port;
  std::chrono::milliseconds handshake_limit = kJoinHandshakeLimit;
};

class JoinTurns {
 public:
  /// Listens on `host` (an IPv4 or IPv6 address of this machine, the latter bare or in [ ];
  /// empty: every address, IPv6 and IPv4 where the machine has IPv6) at a port the kernel picks.
  /// Throws fiber::Error naming `host` when it is no address or cannot be listened on.
  /// `on_begin` runs (on the turns' thread) as a turn is given, `on_end` as it ends.
  /// `on_pod_gone` runs (on the turns' thread) with the pod's identity ("name/uid") and the pid
  /// of the process that held the connection when the connection of a pod that joined closes.
  /// `guard`: with a token, who may wait for a turn (see JoinGuard).
  JoinTurns(const std::string& host, std::chrono::seconds turn_limit,
            std::function<void()> on_begin = {}, std::function<void()> on_end = {},
            std::function<void(const std::string&, int)> on_pod_gone = {}, JoinGuard guard = {});
  ~JoinTurns();
  JoinTurns(const JoinTurns&) = delete;
  JoinTurns& operator=(const JoinTurns&) = delete;

  /// "host:port" a joining job asks at; "[v6]:port" for an IPv6 host.
  const std::string& address() const noexcept { return address_; }
  /// The port it listens at.
  int port() const noexcept { return port_; }

 private:
  void loop();

  int listener_ = -1;
  int wake_[2] = {-1, -1};
  std::string address_;
  int port_ = 0;
  JoinGuard guard_;
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
/// of pod `pod` ("name/uid", fiberjob_pod_identity()) joined, and keeps the socket open
/// for the life of the process (its end tells the launcher that worker is gone). A malformed
/// identity or a failed send closes it instead. Returns whether the socket is kept.
bool hand_back_join_turn(int turn, const std::string& pod, int pid);

/// A turn given: the socket to hand back (close it, or hand_back_join_turn), and with a token the
/// MPI port the grant carried (empty without one).
struct JoinTurn {
  int fd = -1;
  std::string port;
};

/// Asks the master at `address` ("host:port", "[v6]:port", a host name of either family) for a turn
/// and waits until it is given, at most until `limit` has passed (the TCP connect included).
/// With `token`, first proves it to the master and checks the master's proof, each handshake
/// step within `handshake_limit`. Throws JoinRefused (join_handshake.h) when the master does not
/// prove the token, fiber::UsageError when the master asks for a token and there is none, and
/// fiber::Error when the master cannot be reached, stalls or the wait runs out.
JoinTurn wait_for_join_turn(const std::string& address, std::chrono::seconds limit,
                            const JoinToken* token = nullptr,
                            std::chrono::milliseconds handshake_limit = kJoinHandshakeLimit);

/// The scheme of the address fiber::listen() returns when the master has a join token:
/// "fiber-join://host:port" (its join turns), not an MPI port.
inline constexpr std::string_view kJoinUriScheme = "fiber-join://";
/// Whether `address` is such a join address.
bool is_join_uri(const std::string& address);
/// "fiber-join://" + `turn_address`.
std::string join_uri(const std::string& turn_address);
/// The join-turn address in a join address; throws fiber::Error naming it when it is none.
std::string turn_address_of(const std::string& join_uri);

}  // namespace fiber::internal
