#include "mpi_bridge/group_communicator.h"

#include <atomic>
#include <functional>
#include <utility>

#include "mpi_bridge/error.h"

namespace fiber::bridge {
namespace {

std::atomic<FatalMpiError> g_fatal{nullptr};

void call_fatal(MPI_Comm*, int* code, ...) {
  const FatalMpiError fatal = g_fatal.load();
  if (fatal) fatal(*code, mpi_error_text(*code));
}

}  // namespace

std::vector<std::string> open_ports(int count) {
  std::vector<std::string> ports;
  for (int i = 0; i < count; ++i) {
    char port[MPI_MAX_PORT_NAME] = {};
    FIBER_MPI_CHECK(MPI_Open_port(MPI_INFO_NULL, port));
    ports.emplace_back(port);
  }
  return ports;
}

void close_ports(const std::vector<std::string>& ports) {
  for (const auto& port : ports) MPI_Close_port(port.c_str());
}

GroupCommunicator GroupCommunicator::island(const std::vector<int>& world_ranks,
                                            const std::string& tag) {
  MPI_Group world = MPI_GROUP_NULL;
  FIBER_MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world));
  MPI_Group members = MPI_GROUP_NULL;
  int code =
      MPI_Group_incl(world, static_cast<int>(world_ranks.size()), world_ranks.data(), &members);
  MPI_Group_free(&world);
  check_mpi(code, "MPI_Group_incl");
  MPI_Comm island = MPI_COMM_NULL;
#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5
  // With Open MPI 5's fault tolerance, the death of any process of the world (a member of a
  // failed attempt) disables every collective on MPI_COMM_WORLD, communicator creation over it
  // included (MPI_ERR_PROC_FAILED; only MPIX_Comm_shrink, collective over all survivors, would
  // mend it). MPI_Comm_create_from_group needs no parent communicator.
  code =
      MPI_Comm_create_from_group(members, tag.c_str(), MPI_INFO_NULL, MPI_ERRORS_RETURN, &island);
  MPI_Group_free(&members);
  check_mpi(code, "MPI_Comm_create_from_group");
#else
  // Tags tell apart creations by disjoint members of one world that overlap in time.
  code =
      MPI_Comm_create_group(MPI_COMM_WORLD, members,
                            static_cast<int>(std::hash<std::string>{}(tag) % 32000) + 1, &island);
  MPI_Group_free(&members);
  check_mpi(code, "MPI_Comm_create_group");
#endif
  GroupCommunicator group;
  group.comm_ = Communicator(island);
  return group;
}

GroupCommunicator::~GroupCommunicator() { abandon(); }

void GroupCommunicator::accept(const std::string& port) {
  MPI_Comm join = MPI_COMM_NULL;
  FIBER_MPI_CHECK(MPI_Comm_accept(port.c_str(), MPI_INFO_NULL, 0, comm_.get(), &join));
  merge(join, /*after=*/false);
}

void GroupCommunicator::connect(const std::string& port) {
  MPI_Comm join = MPI_COMM_NULL;
  FIBER_MPI_CHECK(MPI_Comm_connect(port.c_str(), MPI_INFO_NULL, 0, comm_.get(), &join));
  merge(join, /*after=*/true);
}

void GroupCommunicator::merge(MPI_Comm join, bool after) {
  joins_.push_back(join);
  MPI_Comm_set_errhandler(join, MPI_ERRORS_RETURN);
  MPI_Comm merged = MPI_COMM_NULL;
  FIBER_MPI_CHECK(MPI_Intercomm_merge(join, after ? 1 : 0, &merged));
  comm_ = Communicator(merged);
}

void GroupCommunicator::disconnect() {
  FIBER_MPI_CHECK(MPI_Barrier(comm_.get()));
  comm_.reset();
  // Every member holds the joins from its own island's on, in the same order, so each
  // disconnect (collective over the two sides of that join) finds its partners.
  for (MPI_Comm& join : joins_) FIBER_MPI_CHECK(MPI_Comm_disconnect(&join));
  joins_.clear();
}

void GroupCommunicator::abandon() noexcept {
  comm_.release();
  joins_.clear();
}

void end_process_on_errors(MPI_Comm comm, FatalMpiError fatal) {
  g_fatal.store(fatal);
  MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
  FIBER_MPI_CHECK(MPI_Comm_create_errhandler(call_fatal, &handler));
  FIBER_MPI_CHECK(MPI_Comm_set_errhandler(comm, handler));
  MPI_Errhandler_free(&handler);
}

}  // namespace fiber::bridge
