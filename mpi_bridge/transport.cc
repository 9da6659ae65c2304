#include "mpi_bridge/transport.h"

#include <algorithm>
#include <cstring>

#include "mpi_bridge/error.h"
#include "mpi_bridge/failure_notice.h"

namespace fiber::bridge {

namespace {

// Receives what MPI_Improbe found (`found`), or nothing.
bool receive_probed(int found, MPI_Message& message, const MPI_Status& status, Received& out) {
  if (!found) return false;
  int count = 0;
  FIBER_MPI_CHECK(MPI_Get_count(&status, MPI_BYTE, &count));
  std::vector<std::byte> bytes(static_cast<size_t>(count));
  FIBER_MPI_CHECK(MPI_Mrecv(bytes.data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE));
  out = unframe(bytes, status.MPI_SOURCE);
  return true;
}

}  // namespace

bool try_receive(MPI_Comm comm, Received& out) {
  int found = 0;
  MPI_Message message = MPI_MESSAGE_NULL;
  MPI_Status status;
  const int code = MPI_Improbe(MPI_ANY_SOURCE, kRuntimeTag, comm, &found, &message, &status);
  if (code != MPI_SUCCESS && is_peer_failure(code))
    throw PeersFailed("MPI_Improbe", code, acknowledge_failed_peers(comm));
  check_mpi(code, "MPI_Improbe");
  return receive_probed(found, message, status, out);
}

bool try_receive_from(MPI_Comm comm, int source, Received& out) {
  int found = 0;
  MPI_Message message = MPI_MESSAGE_NULL;
  MPI_Status status;
  const int code = MPI_Improbe(source, kRuntimeTag, comm, &found, &message, &status);
  if (code != MPI_SUCCESS && is_peer_failure(code)) {
    acknowledge_failed_peers(comm);
    throw PeersFailed("MPI_Improbe", code, {source});
  }
  check_mpi(code, "MPI_Improbe");
  return receive_probed(found, message, status, out);
}

int peer_count(MPI_Comm comm) {
  int inter = 0;
  FIBER_MPI_CHECK(MPI_Comm_test_inter(comm, &inter));
  int count = 0;
  if (inter) {
    FIBER_MPI_CHECK(MPI_Comm_remote_size(comm, &count));
  } else {
    FIBER_MPI_CHECK(MPI_Comm_size(comm, &count));
  }
  return count;
}

Outbox::~Outbox() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  std::lock_guard lock(mutex_);
  for (auto& pending : pending_) MPI_Request_free(&pending.request);
}

void Outbox::post(MPI_Comm comm, int dest, std::vector<std::byte> frame) {
  if (frame.size() > static_cast<size_t>(INT32_MAX)) {
    throw Error("message of " + std::to_string(frame.size()) +
                " bytes exceeds the 2 GiB limit of one MPI send");
  }
  Pending pending{MPI_REQUEST_NULL, comm, dest, std::move(frame)};
  std::lock_guard lock(mutex_);
  // Sends queued earlier go first so that messages to one peer keep their order.
  if (held_ || !queued_.empty()) {
    queued_.push_back(std::move(pending));
    return;
  }
  FIBER_MPI_CHECK(MPI_Isend(pending.buffer.data(), static_cast<int>(pending.buffer.size()),
                            MPI_BYTE, dest, kRuntimeTag, comm, &pending.request));
  pending_.push_back(std::move(pending));
}

void Outbox::hold(bool held) {
  std::lock_guard lock(mutex_);
  held_ = held;
}

size_t Outbox::progress() {
  std::lock_guard lock(mutex_);
  if (!held_) {
    for (auto& queued : queued_) {
      FIBER_MPI_CHECK(MPI_Isend(queued.buffer.data(), static_cast<int>(queued.buffer.size()),
                                MPI_BYTE, queued.dest, kRuntimeTag, queued.comm, &queued.request));
      pending_.push_back(std::move(queued));
    }
    queued_.clear();
  }
  size_t done = 0;
  for (size_t i = 0; i < pending_.size();) {
    int complete = 0;
    const int code = MPI_Test(&pending_[i].request, &complete, MPI_STATUS_IGNORE);
    // A send to a peer that died is over: its loss is seen (and its work redone) by the layer
    // above; the request is complete as far as MPI is concerned.
    if (code != MPI_SUCCESS && is_peer_failure(code)) {
      complete = 1;
    } else {
      check_mpi(code, "MPI_Test");
    }
    if (complete) {
      pending_[i] = std::move(pending_.back());
      pending_.pop_back();
      ++done;
    } else {
      ++i;
    }
  }
  return done;
}

bool Outbox::empty() {
  std::lock_guard lock(mutex_);
  return pending_.empty() && queued_.empty();
}

bool Outbox::has_sends(MPI_Comm comm) {
  std::lock_guard lock(mutex_);
  auto on_comm = [comm](const Pending& send) { return send.comm == comm; };
  return std::any_of(pending_.begin(), pending_.end(), on_comm) ||
         std::any_of(queued_.begin(), queued_.end(), on_comm);
}

void Outbox::abandon(MPI_Comm comm, int dest) {
  std::lock_guard lock(mutex_);
  std::erase_if(queued_, [comm, dest](const Pending& queued) {
    return queued.comm == comm && queued.dest == dest;
  });
  for (size_t i = 0; i < pending_.size();) {
    if (pending_[i].comm == comm && pending_[i].dest == dest) {
      MPI_Request_free(&pending_[i].request);
      abandoned_.push_back(std::move(pending_[i].buffer));
      pending_[i] = std::move(pending_.back());
      pending_.pop_back();
    } else {
      ++i;
    }
  }
}

}  // namespace fiber::bridge
