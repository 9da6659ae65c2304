// The messages that turn a group's member processes into one MPI communicator, and end them
// together. Internal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fiber/wire/message_codec.h"

namespace fiber::internal::wire {

/// Master -> each member of an attempt, once all of them are placed: who the members are.
/// Members that share an MPI world (the static world's ranks, one spawn batch, one joined job)
/// form an island; islands are joined by connect/accept in their order.
struct GroupPlan {
  FIBER_WIRE_MESSAGE(GroupPlan, Kind::kGroupPlan)
  uint64_t group = 0;
  uint32_t attempt = 0;
  int restarts = 0;  ///< Attempts before this one (fiber::group_restarts()).
  int rank = 0;      ///< This member's rank in the group's communicator.
  int island = 0;    ///< The island this member is in.
  /// Each island's members as ranks of their MPI_COMM_WORLD, in group-rank order.
  std::vector<std::vector<int>> islands;

  static void fields(auto& self, auto& f) {
    f.id(self.group);
    f.aux(self.attempt);
    f.body(self.restarts);
    f.body(self.rank);
    f.body(self.island);
    f.body(self.islands);
  }
  void validate() const;
  int size() const;
};

/// The ports the islands after the first connect through: from the first island's leader to
/// the master (all of them), and from the master to each later island's leader (its own).
struct GroupPorts {
  FIBER_WIRE_MESSAGE(GroupPorts, Kind::kGroupPorts)
  uint64_t group = 0;
  uint32_t attempt = 0;
  std::vector<std::string> ports;

  static void fields(auto& self, auto& f) {
    f.id(self.group);
    f.aux(self.attempt);
    f.body(self.ports);
  }
};

/// Master -> member: the attempt ended for the group (another member failed, or terminate()):
/// the member's runtime ends its process now, whatever its code is doing.
struct GroupStop {
  FIBER_WIRE_MESSAGE(GroupStop, Kind::kGroupStop)
  uint64_t group = 0;
  uint32_t attempt = 0;
  std::string reason;

  static void fields(auto& self, auto& f) {
    f.id(self.group);
    f.aux(self.attempt);
    f.body(self.reason);
  }
};

}  // namespace fiber::internal::wire
