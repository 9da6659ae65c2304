// Moving framed messages (framing.h) over MPI without blocking.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "mpi_bridge/framing.h"

namespace fiber::bridge {

/// The tag every runtime message uses; runtime traffic stays on communicators of its own.
inline constexpr int kRuntimeTag = 7117;

/// Receives one runtime message from any source on `comm` if one is waiting (MPI_Improbe +
/// MPI_Mrecv, so a concurrent receiver cannot steal it). Throws ProtocolError on a message too
/// short to hold an envelope, and PeersFailed (failures acknowledged) when MPI reports that
/// members of `comm` died.
bool try_receive(MPI_Comm comm, Received& out);
/// try_receive() of a message from rank `source` of `comm` only (the remote group's rank on an
/// intercommunicator). Throws PeersFailed naming `source` when MPI reports that it died.
bool try_receive_from(MPI_Comm comm, int source, Received& out);
/// The ranks a message on `comm` can come from: its remote group's size on an
/// intercommunicator, its size otherwise.
int peer_count(MPI_Comm comm);

/// Sends in flight. post() starts a non-blocking send and keeps its buffer alive until MPI is
/// done with it; progress() retires finished sends. Safe to use from several threads.
class Outbox {
 public:
  Outbox() = default;
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;
  ~Outbox();

  /// Starts the send, or queues it while the outbox is held.
  void post(MPI_Comm comm, int dest, std::vector<std::byte> frame);
  /// While held, post() only queues: no MPI call is made (Open MPI 4.1 can hang an MPI_Comm_spawn
  /// when other threads call into MPI meanwhile). Releasing does not start the queued sends;
  /// the next progress() does.
  void hold(bool held);
  /// Starts queued sends (unless held) and retires completed ones; returns how many completed.
  size_t progress();
  bool empty();
  /// True while a send on `comm` is queued or in flight: the communicator must not be freed.
  bool has_sends(MPI_Comm comm);
  /// Abandons sends to a peer that is gone (they can never complete); the buffers are kept until
  /// MPI is finalised because MPI may still read them.
  void abandon(MPI_Comm comm, int dest);

 private:
  struct Pending {
    MPI_Request request;
    MPI_Comm comm;
    int dest;
    std::vector<std::byte> buffer;
  };
  std::mutex mutex_;
  std::vector<Pending> pending_;
  std::vector<Pending> queued_;
  bool held_ = false;
  std::vector<std::vector<std::byte>> abandoned_;
};

}  // namespace fiber::bridge
