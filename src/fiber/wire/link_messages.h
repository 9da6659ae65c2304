// The messages that open, keep up and close a worker's link to its master: the handshake,
// heartbeats, a joined worker's wish to leave, and the last words. Internal.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "fiber/wire/outgoing.h"

namespace fiber::internal::wire {

/// Worker -> master, its first message.
struct Hello {
  uint32_t protocol = kProtocolVersion;
  uint64_t module = 0;  ///< Identity of the worker's main executable (detail::ModuleTable).
  int pid = 0;
  std::string host;
  /// Its Kubernetes pod, "name/uid" (a replacement of the same name is another pod), or empty.
  std::string pod;

  Outgoing encode() const;
  /// A hello of another protocol is read as far as its protocol only: it is refused for that.
  static Hello decode(const bridge::Received& in);
};

/// Master -> worker: accepted.
struct Welcome {
  int master_pid = 0;
  std::string master_host;
  std::string run_directory;  ///< Doorbells and fatal-signal reports.
  std::chrono::milliseconds heartbeat_interval{0};

  Outgoing encode() const;
  static Welcome decode(const bridge::Received& in);
};

/// Master -> worker: refused; the worker finishes.
struct Refuse {
  std::string reason;

  Outgoing encode() const;
  static Refuse decode(const bridge::Received& in);
};

/// Worker -> master, every Config::heartbeat_interval: alive, and how the message counts stand.
struct Heartbeat {
  /// Messages the worker sent before this one. The sender fills it in as it numbers the
  /// message (MasterLink::send), so it is exact whatever was sent meanwhile.
  uint64_t sent_before = 0;
  uint64_t received = 0;   ///< Messages of the master's that had arrived.
  int64_t sent_at_ns = 0;  ///< The worker's steady clock when sent.

  Outgoing encode() const;
  static Heartbeat decode(const bridge::Received& in);
};

/// Worker -> master: a joined worker asks to leave once its work is done (its job got SIGTERM).
struct Leave {
  Outgoing encode() const { return Outgoing(Kind::kLeave); }
};

/// Master -> worker: finalise and exit once idle.
struct Shutdown {
  /// The run ends: every idle worker is told at once, so the workers of one MPI job finalise
  /// together. Otherwise this worker leaves alone (the reserve trimmed, a pod released).
  bool run_ends = false;

  Outgoing encode() const;
  static Shutdown decode(const bridge::Received& in);
};

/// Worker -> master: its last message, answering Shutdown.
struct Goodbye {
  Outgoing encode() const { return Outgoing(Kind::kGoodbye); }
};

}  // namespace fiber::internal::wire
