// Building one intracommunicator out of processes of several MPI worlds, for a fiber::Group:
// members that share a world (ranks of the static world, one spawn batch, one joined job) form
// an island with MPI_Comm_create_group, which is collective over them alone and keeps shared
// memory between them; islands are joined one after another by MPI_Comm_accept /
// MPI_Comm_connect through ports the first island opens, then MPI_Intercomm_merge. The caller
// decides the order; these are the MPI steps.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "mpi_bridge/communicator.h"

namespace fiber::bridge {

/// Opens `count` ports for later islands to connect through (MPI_Open_port).
std::vector<std::string> open_ports(int count);
void close_ports(const std::vector<std::string>& ports);

/// The communicator of a group's members as it grows island by island, with the
/// intercommunicators of each join: they are what holds the jobs connected, and are
/// disconnected (oldest first) when the members end it together. Open MPI 5 hangs in a
/// disconnect of the merged communicator once those are freed (measured), and jobs still
/// connected wait for each other in MPI_Finalize.
class GroupCommunicator {
 public:
  /// The processes of this process's MPI_COMM_WORLD at `world_ranks`, ranked in that order
  /// (collective over them only). `tag` names this creation, unique in the run: creations by
  /// disjoint processes of one world may overlap in time.
  static GroupCommunicator island(const std::vector<int>& world_ranks, const std::string& tag);

  GroupCommunicator(GroupCommunicator&&) noexcept = default;
  GroupCommunicator& operator=(GroupCommunicator&&) noexcept = default;
  GroupCommunicator(const GroupCommunicator&) = delete;
  GroupCommunicator& operator=(const GroupCommunicator&) = delete;
  /// Leaves whatever was not disconnected to the process's end (see abandon()).
  ~GroupCommunicator();

  /// Accepts the next island on `port` (collective over this communicator; only the port of
  /// its rank 0 counts) and merges it in, ranked after the members so far.
  void accept(const std::string& port);
  /// Connects this island through `port` (collective over it; only the port of its rank 0
  /// counts) and merges it in, ranked after the members that accepted it.
  void connect(const std::string& port);

  MPI_Comm get() const noexcept { return comm_.get(); }
  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }

  /// Ends it once every member is done with it (collective): a barrier, the merged
  /// communicator freed, then each join disconnected.
  void disconnect();
  /// Gives everything up without freeing it: peers may still send on it after a member failed,
  /// and a message arriving for a freed communicator is handed to whichever one reuses its
  /// context id.
  void abandon() noexcept;

 private:
  GroupCommunicator() = default;
  /// Keeps `join` and becomes its merge: this side's members first, or `after` the other's.
  void merge(MPI_Comm join, bool after);

  Communicator comm_;
  std::vector<MPI_Comm> joins_;
};

/// Called for a failed MPI call on a communicator given to end_process_on_errors, with MPI's
/// text for the error; it must end the process.
using FatalMpiError = void (*)(int code, const std::string& text);

/// Makes every failed MPI call on `comm` call `fatal` instead of returning or aborting the job.
/// One `fatal` for the whole process (the last one given).
void end_process_on_errors(MPI_Comm comm, FatalMpiError fatal);

}  // namespace fiber::bridge
