// The messages that open, keep up and close a worker's link to its master: the handshake,
// heartbeats, a joined worker's wish to leave, and the last words. Internal.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "fiber/wire/message_codec.h"

namespace fiber::internal::wire {

/// Worker -> master, its first message.
struct Hello {
  FIBER_WIRE_MESSAGE(Hello, Kind::kHello)
  uint32_t protocol = 0;  ///< The sender's protocol_version().
  uint64_t module = 0;    ///< Identity of the worker's main executable (detail::ModuleTable).
  int pid = 0;
  std::string host;
  /// Its Kubernetes pod, "name/uid" (a replacement of the same name is another pod), or empty.
  std::string pod;

  /// A hello of another protocol is read as far as its protocol only: it is refused for that.
  static void fields(auto& self, auto& f) {
    f.body(self.protocol);
    if (!f.current_protocol(self.protocol)) return;
    f.body(self.module);
    f.body(self.pid);
    f.body(self.host);
    f.body(self.pod);
  }
};

/// Master -> worker: accepted.
struct Welcome {
  FIBER_WIRE_MESSAGE(Welcome, Kind::kWelcome)
  int master_pid = 0;
  std::string master_host;
  std::string run_directory;  ///< Doorbells and fatal-signal reports.
  std::chrono::milliseconds heartbeat_interval{0};

  static void fields(auto& self, auto& f) {
    f.body(self.master_pid);
    f.body(self.master_host);
    f.body(self.run_directory);
    f.body(self.heartbeat_interval);
  }
};

/// Master -> worker: refused; the worker finishes.
struct Refuse {
  FIBER_WIRE_MESSAGE(Refuse, Kind::kRefuse)
  std::string reason;

  static void fields(auto& self, auto& f) { f.body(self.reason); }
};

/// Worker -> master, every Config::heartbeat_interval: alive, and how the message counts stand.
struct Heartbeat {
  FIBER_WIRE_MESSAGE(Heartbeat, Kind::kHeartbeat)
  /// Messages the worker sent before this one. The sender fills it in as it numbers the
  /// message (MasterLink::send), so it is exact whatever was sent meanwhile.
  uint64_t sent_before = 0;
  uint64_t received = 0;   ///< Messages of the master's that had arrived.
  int64_t sent_at_ns = 0;  ///< The worker's steady clock when sent.

  static void fields(auto& self, auto& f) {
    f.id(self.sent_before);
    f.aux(self.received);
    f.body(self.sent_at_ns);
  }
};

/// Worker -> master: a joined worker asks to leave once its work is done (its job got SIGTERM).
struct Leave {
  FIBER_WIRE_MESSAGE(Leave, Kind::kLeave)
  static void fields(auto&, auto&) {}
};

/// Master -> worker: finalise and exit once idle.
struct Shutdown {
  FIBER_WIRE_MESSAGE(Shutdown, Kind::kShutdown)
  /// The run ends: every idle worker is told at once, so the workers of one MPI job finalise
  /// together. Otherwise this worker leaves alone (the reserve trimmed, a pod released).
  bool run_ends = false;

  static void fields(auto& self, auto& f) { f.bits(self.run_ends); }
};

/// Worker -> master: its last message, answering Shutdown.
struct Goodbye {
  FIBER_WIRE_MESSAGE(Goodbye, Kind::kGoodbye)
  static void fields(auto&, auto&) {}
};

}  // namespace fiber::internal::wire
