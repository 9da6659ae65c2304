#include "fiber/group/group_member.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "fiber/base/log.h"
#include "fiber/errors.h"
#include "fiber/group/group_inbox.h"
#include "fiber/invoke.h"
#include "fiber/worker/fatal_signal.h"
#include "fiber/worker/master_link.h"
#include "mpi_bridge/group_communicator.h"

namespace fiber::internal {
namespace {

std::atomic<const GroupMembership*> g_membership{nullptr};

// Open MPI now and then hangs the creation of a communicator when another thread of the process
// drives MPI meanwhile (measured: MPI_Comm_create_from_group beside a thread in MPI_Improbe hung
// within two rounds; Open MPI 4.1's connect/accept deadlocks likewise). The progress thread
// stands aside while a step runs, for at most half a heartbeat timeout: if a peer died and the
// step never ends, the group's stop must still get through, and heartbeats must not stop for
// so long that the member is taken for dead.
class StepWithTrafficHeld {
 public:
  StepWithTrafficHeld() : engine_(MasterLink::current().engine()) {
    engine_.hold_traffic_until(Clock::now() +
                               MasterLink::current().settings().heartbeat_timeout / 2);
  }
  ~StepWithTrafficHeld() { engine_.release_traffic(); }
  StepWithTrafficHeld(const StepWithTrafficHeld&) = delete;
  StepWithTrafficHeld& operator=(const StepWithTrafficHeld&) = delete;

 private:
  ProgressEngine& engine_;
};

// A failed MPI call on the group's communicator in code that checks nothing (most ported MPI
// code) must neither go on with garbage nor MPI_Abort the whole job: the member ends, its group
// learns of it and stops the others.
[[noreturn]] void end_member_on_mpi_error(int, const std::string& text) {
  FIBER_LOG_WARNING("group member pid %d: an MPI call on group_comm() failed: %s",
                    static_cast<int>(::getpid()), text.c_str());
  MasterLink::current().end_process_now(running_process(), 1,
                                        "an MPI call on group_comm() failed: " + text);
}

// The communicator of the plan's members: this member's island, then the islands after it
// joined one after another through the ports the first island's leader opened.
bridge::GroupCommunicator build_communicator(MasterLink& link, const wire::GroupPlan& plan) {
  const auto& island_ranks = plan.islands[static_cast<size_t>(plan.island)];
  int first_rank = 0;
  for (int i = 0; i < plan.island; ++i) first_rank += static_cast<int>(plan.islands[i].size());
  const bool leader = plan.rank == first_rank;
  const std::string tag = "fibermpi-group-" + std::to_string(plan.group) + "-attempt-" +
                          std::to_string(plan.attempt) + "-island-" + std::to_string(plan.island);
  auto comm = [&] {
    StepWithTrafficHeld held;
    return bridge::GroupCommunicator::island(island_ranks, tag);
  }();
  const int islands = static_cast<int>(plan.islands.size());
  if (islands == 1) return comm;
  std::vector<std::string> ports;
  if (plan.island == 0) {
    if (leader) {
      {
        StepWithTrafficHeld held;
        ports = bridge::open_ports(islands - 1);
      }
      link.send(wire::GroupPorts{plan.group, plan.attempt, ports}.encode());
    }
  } else {
    // Only the connecting island's leader needs the port; the others join its collective call.
    const std::string port =
        leader ? GroupInbox::current().wait_ports(plan.group, plan.attempt).front() : std::string();
    StepWithTrafficHeld held;
    comm.connect(port);
  }
  for (int next = plan.island + 1; next < islands; ++next) {
    const std::string port = plan.rank == 0 ? ports[static_cast<size_t>(next - 1)] : std::string();
    StepWithTrafficHeld held;
    comm.accept(port);
  }
  if (!ports.empty()) bridge::close_ports(ports);
  return comm;
}

}  // namespace

const GroupMembership* current_group_membership() { return g_membership.load(); }

void group_member_main(uint64_t group, uint32_t attempt, std::vector<std::byte> task_bytes) {
  MasterLink& link = MasterLink::current();
  GroupInbox& inbox = GroupInbox::current();
  const wire::GroupPlan plan = inbox.enter(group, attempt, running_process());
  bridge::GroupCommunicator comm = build_communicator(link, plan);
  if (comm.size() != plan.size() || comm.rank() != plan.rank)
    throw ProtocolError("the group's communicator has this member at rank " +
                        std::to_string(comm.rank()) + " of " + std::to_string(comm.size()) +
                        ", its plan at " + std::to_string(plan.rank) + " of " +
                        std::to_string(plan.size()));
  bridge::end_process_on_errors(comm.get(), end_member_on_mpi_error);
  GroupMembership membership{group, plan.rank, plan.size(), plan.restarts, comm.get()};
  serial::Reader reader(task_bytes);
  const detail::TaskSpec task = detail::load_task(reader);
  g_membership.store(&membership);
  try {
    detail::run_task(task, nullptr);
  } catch (...) {
    g_membership.store(nullptr);
    // The others may still send on it; the group stops them.
    comm.abandon();
    inbox.leave();
    throw;
  }
  g_membership.store(nullptr);
  // Every member is done with it (a member that failed instead gets the others stopped).
  comm.disconnect();
  inbox.leave();
}

}  // namespace fiber::internal
