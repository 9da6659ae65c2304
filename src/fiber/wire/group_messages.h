// The messages that turn a group's member processes into one MPI communicator, and end them
// together. Internal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fiber/wire/outgoing.h"

namespace fiber::internal::wire {

/// Master -> each member of an attempt, once all of them are placed: who the members are.
/// Members that share an MPI world (the static world's ranks, one spawn batch, one joined job)
/// form an island; islands are joined by connect/accept in their order.
struct GroupPlan {
  uint64_t group = 0;
  uint32_t attempt = 0;
  int restarts = 0;  ///< Attempts before this one (fiber::group_restarts()).
  int rank = 0;      ///< This member's rank in the group's communicator.
  int island = 0;    ///< The island this member is in.
  /// Each island's members as ranks of their MPI_COMM_WORLD, in group-rank order.
  std::vector<std::vector<int>> islands;

  int size() const;
  Outgoing encode() const;
  static GroupPlan decode(const bridge::Received& in);
};

/// The ports the islands after the first connect through: from the first island's leader to
/// the master (all of them), and from the master to each later island's leader (its own).
struct GroupPorts {
  uint64_t group = 0;
  uint32_t attempt = 0;
  std::vector<std::string> ports;

  Outgoing encode() const;
  static GroupPorts decode(const bridge::Received& in);
};

/// Master -> member: the attempt ended for the group (another member failed, or terminate()):
/// the member's runtime ends its process now, whatever its code is doing.
struct GroupStop {
  uint64_t group = 0;
  uint32_t attempt = 0;
  std::string reason;

  Outgoing encode() const;
  static GroupStop decode(const bridge::Received& in);
};

}  // namespace fiber::internal::wire
