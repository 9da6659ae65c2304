#include "fiber/kubernetes/pod_join.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>

#include "fiber/errors.h"
#include "fiber/kubernetes/fiberjob_scaler.h"
#include "fiber/master/master.h"
#include "mpi_bridge/environment.h"
#include "mpi_bridge/launch_environment.h"
#include "mpi_bridge/rendezvous.h"

namespace fiber::detail {
namespace {

using Clock = std::chrono::steady_clock;

// Set once this worker pod's rank has joined its launcher.
std::atomic<bool> g_pod_joined{false};

void exit_unless_joined(const KubernetesPod& pod, std::chrono::seconds limit) {
  std::thread([limit, what = pod.describe()] {
    const auto give_up = Clock::now() + limit;
    while (!g_pod_joined.load() && Clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (g_pod_joined.load()) return;
    std::fprintf(stderr,
                 "fibermpi: this worker pod has not joined the launcher of %s within %d s; "
                 "exiting\n",
                 what.c_str(), static_cast<int>(limit.count()));
    std::fflush(nullptr);
    std::_Exit(1);
  }).detach();
}

// The pods of a FiberJob start together, so the launcher may not have published its rendezvous
// yet: look again until it has, for at most `limit`.
std::string lookup_launcher(const KubernetesPod& pod, std::chrono::seconds limit) {
  const auto give_up = Clock::now() + limit;
  auto pause = std::chrono::milliseconds(20);
  for (;;) {
    std::string address = bridge::lookup_name(pod.service_name());
    if (!address.empty()) return address;
    if (Clock::now() > give_up) {
      throw Error("fibermpi: the launcher of " + pod.describe() + " has not published '" +
                  pod.service_name() + "' on the name service " + pod.name_service_uri +
                  " within " + std::to_string(limit.count()) + " s");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(500));
  }
}

}  // namespace

void prepare_pod_process(const KubernetesPod& pod, int argc, char** argv) {
  if (!bridge::Environment::has_standalone_name_server()) {
    throw UsageError("fibermpi runs in a pod of " + pod.describe() +
                     " but was built against Open MPI 5, which has no name server (ompi-server) "
                     "for separately started jobs: build it with -DFIBER_MPI=openmpi4 for "
                     "Kubernetes");
  }
  // The pod's own MPI job: the program runs again under mpirun, which finds the job's name
  // service (the user's pod template names only the program).
  if (!bridge::started_by_launcher()) relaunch_under_mpirun(pod, argc, argv);
  // The launcher's status for the pod, even if the program exits before init completes (a
  // handler registered later runs first and reports it too, before a shutdown that may end the
  // process early).
  if (pod.role == KubernetesPod::Role::kLauncher)
    ::on_exit([](int status, void*) { report_exit_status(status); }, nullptr);
}

void find_launcher(const KubernetesPod& pod, std::chrono::seconds limit) {
  exit_unless_joined(pod, limit + std::chrono::seconds(30));
  bridge::Environment::join(lookup_launcher(pod, limit));
}

bridge::Communicator connect_to_launcher(const KubernetesPod& pod, std::chrono::seconds limit) {
  int turn = -1;
  if (bridge::Environment::world_rank() == 0) {
    try {
      const std::string turns = bridge::lookup_name(pod.turns_name());
      if (turns.empty())
        throw Error("the launcher of " + pod.describe() + " published no join turns");
      turn = wait_for_join_turn(turns, limit);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fibermpi: %s\n", e.what());
      std::fflush(nullptr);
      std::_Exit(1);
    }
  }
  bridge::Communicator comm;
  try {
    comm = bridge::connect(bridge::Environment::connect_address());
  } catch (...) {
    if (turn >= 0) ::close(turn);
    g_pod_joined.store(true);
    throw;
  }
  g_pod_joined.store(true);
  if (turn >= 0)
    hand_back_join_turn(turn, pod_identity_from_environment(), static_cast<int>(::getpid()));
  return comm;
}

bool joined_launcher() { return g_pod_joined.load(); }

std::unique_ptr<JoinTurns> serve_worker_pods(const KubernetesPod& pod, Master& master) {
  // Turns first: a worker that finds the rendezvous finds its turns too. A turn is a
  // connect/accept (well under a second); one held for a minute belongs to a pod that vanished
  // without closing its socket.
  Master* m = &master;
  auto turns = std::make_unique<JoinTurns>(
      pod.pod_ip, std::chrono::seconds(60), [m] { m->begin_join_turn(); },
      [m] { m->end_join_turn(); },
      [m](const std::string& gone, int pid) { m->pod_connection_closed(gone, pid); });
  bridge::publish_name(pod.turns_name(), turns->address());
  bridge::publish_name(pod.service_name(), master.listen());
  master.provision_pods(std::make_unique<FiberJobScaler>(pod.ns, pod.job), pod.slots_per_worker);
  return turns;
}

}  // namespace fiber::detail
