// The handlers of a receiving side, one per message kind: each part of the runtime registers
// the kinds it serves where it is built, and the receiving loop runs the one a message's kind
// names. Internal.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

#include "fiber/wire/message_kind.h"
#include "mpi_bridge/transport.h"

namespace fiber::internal::wire {

/// Who sent a request to one of the master's services (queues, managers).
struct Requester {
  static constexpr uint64_t kNoProcess = UINT64_MAX;

  MPI_Comm comm = MPI_COMM_NULL;  ///< Where the answer goes...
  int source = 0;                 ///< ...and to which rank.
  uint64_t process = kNoProcess;  ///< The process the worker runs (none: between processes).
  std::string who;                ///< It, as messages name it.
};

/// Handlers keyed by message kind, each called with `Context...` and the message.
template <class... Context>
class HandlerTable {
 public:
  using Handler = std::function<void(Context..., bridge::Received&)>;

  /// Serves `kind` with `handler` from now on. A kind has one handler: a second one for the
  /// same kind is a programming error (std::logic_error).
  void add(Kind kind, Handler handler) {
    auto& slot = handlers_.at(static_cast<size_t>(kind));
    if (slot) {
      throw std::logic_error(std::string("two handlers for ") +
                             kind_name(static_cast<uint32_t>(kind)));
    }
    slot = std::move(handler);
  }

  /// Whether some handler serves `kind`.
  bool serves(uint32_t kind) const { return kind < handlers_.size() && handlers_[kind]; }

  /// Runs the handler of the message's kind; false (nothing run) where none serves it.
  bool dispatch(Context... context, bridge::Received& message) const {
    const uint32_t kind = message.envelope.kind;
    if (!serves(kind)) return false;
    handlers_[kind](context..., message);
    return true;
  }

 private:
  std::array<Handler, kKindCount + 1> handlers_{};
};

}  // namespace fiber::internal::wire
