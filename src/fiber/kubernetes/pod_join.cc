#include "fiber/kubernetes/pod_join.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <string>
#include <thread>

#include "fiber/base/exit_status_report.h"
#include "fiber/base/launch_site.h"
#include "fiber/base/log.h"
#include "fiber/errors.h"
#include "fiber/kubernetes/fiberjob_scaler.h"
#include "fiber/kubernetes/join_handshake.h"
#include "fiber/kubernetes/join_host.h"
#include "fiber/kubernetes/join_service.h"
#include "mpi_bridge/environment.h"
#include "mpi_bridge/launch_environment.h"
#include "mpi_bridge/rendezvous.h"

namespace fiber::internal {
namespace {

using Clock = std::chrono::steady_clock;

// Set once this worker pod's rank has joined its launcher.
std::atomic<bool> g_pod_joined{false};

// Ends this worker pod's MPI job, not this rank alone: with recovery on, mpirun outlives a rank
// that exits, and the pod's other ranks wait in collectives that rank would have joined. mpirun
// (this rank's parent in a pod, relaunch_under_mpirun) ends them all on SIGTERM.
[[noreturn]] void end_worker_pod(const std::string& why) {
  FIBER_LOG_WARNING("%s; this worker pod ends", why.c_str());
  std::fflush(nullptr);
  if (const pid_t mpirun = ::getppid(); mpirun > 1) ::kill(mpirun, SIGTERM);
  std::this_thread::sleep_for(std::chrono::seconds(5));
  std::_Exit(1);
}

void exit_unless_joined(const KubernetesPod& pod, std::chrono::seconds limit) {
  std::thread([limit, what = pod.describe()] {
    const auto give_up = Clock::now() + limit;
    while (!g_pod_joined.load() && Clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (g_pod_joined.load()) return;
    end_worker_pod("this worker pod has not joined the launcher of " + what + " within " +
                   std::to_string(limit.count()) + " s");
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

// The turn's connection, kept open, ends when the launcher does. A launcher that ends normally
// shuts its workers down within moments of closing it; one that died or hung up leaves them
// waiting in MPI calls that never return (Open MPI 4.1 reports no lost peer), so after
// kLauncherGoneGrace the pod ends itself instead of running until someone deletes it.
constexpr auto kLauncherGoneGrace = std::chrono::seconds(5);

void end_when_launcher_closes(int turn, const std::string& what) {
  std::thread([turn, what] {
    for (;;) {
      char scratch[64];
      const ssize_t got = ::recv(turn, scratch, sizeof(scratch), 0);
      if (got > 0 || (got < 0 && errno == EINTR)) continue;
      break;
    }
    std::this_thread::sleep_for(kLauncherGoneGrace);
    end_worker_pod("the launcher of " + what + " is gone (its join connection closed " +
                   std::to_string(kLauncherGoneGrace.count()) + " s ago)");
  }).detach();
}

}  // namespace

void prepare_pod_process(const KubernetesPod& pod, int argc, char** argv) {
  if (!bridge::Environment::has_standalone_name_server()) {
    throw UsageError("fibermpi runs in a pod of " + pod.describe() + " but was built against " +
                     std::string(internal::family_name(bridge::built_against_mpi())) +
                     ", whose separately started jobs cannot meet through the job's name service "
                     "(ompi-server): build it with -DFIBER_MPI=openmpi4 for Kubernetes");
  }
  // The pod's own MPI job: the program runs again under mpirun, which finds the job's name
  // service (the user's pod template names only the program).
  if (!started_by_launcher()) relaunch_under_mpirun(pod, argc, argv);
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

namespace {

// Rank 0 of a worker pod whose launcher guards its turns with the job's token: takes a turn at
// the join address found on the name service, looking again when the peer there does not prove
// the token or cannot be reached (someone else published under the launcher's name), until
// `limit`.
JoinTurn take_guarded_turn(const KubernetesPod& pod, const JoinToken& token,
                           std::chrono::seconds limit) {
  const auto give_up = Clock::now() + limit;
  std::string address = bridge::Environment::connect_address();
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::seconds>(give_up - Clock::now());
    if (left.count() <= 0) {
      throw Error("no launcher of " + pod.describe() + " that proves the job's join token within " +
                  std::to_string(limit.count()) + " s");
    }
    try {
      if (!is_join_uri(address)) {
        throw JoinRefused("fibermpi: the launcher of " + pod.describe() + " published '" + address +
                          "' under '" + pod.service_name() +
                          "', an MPI port and no join address: it cannot prove the job's join "
                          "token; refusing to join it");
      }
      return wait_for_join_turn(turn_address_of(address), left, &token);
    } catch (const UsageError&) {
      throw;
    } catch (const Error& e) {
      FIBER_LOG_WARNING("%s; looking on the name service again", e.what());
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
    address = lookup_launcher(pod, std::max(left, std::chrono::seconds(1)));
  }
}

}  // namespace

bridge::Communicator connect_to_launcher(const KubernetesPod& pod, std::chrono::seconds limit,
                                         const std::optional<JoinToken>& token) {
  JoinTurn turn;
  std::string port = bridge::Environment::connect_address();
  if (bridge::Environment::world_rank() == 0) {
    try {
      if (token) {
        turn = take_guarded_turn(pod, *token, limit);
        port = turn.port;
      } else {
        if (is_join_uri(port)) {
          throw UsageError("the launcher of " + pod.describe() +
                           " asks for a join token, and this pod has no FIBER_JOIN_TOKEN_FILE");
        }
        warn_join_without_token("this worker pod", pod.describe());
        const std::string turns = bridge::lookup_name(pod.turns_name());
        if (turns.empty())
          throw Error("the launcher of " + pod.describe() + " published no join turns");
        turn = wait_for_join_turn(turns, limit);
      }
    } catch (const std::exception& e) {
      end_worker_pod(e.what());
    }
  }
  // MPI_Comm_connect reads the port at rank 0 alone.
  bridge::Communicator comm;
  try {
    comm = bridge::connect(port);
  } catch (...) {
    if (turn.fd >= 0) ::close(turn.fd);
    g_pod_joined.store(true);
    throw;
  }
  g_pod_joined.store(true);
  if (turn.fd >= 0) {
    if (hand_back_join_turn(turn.fd, fiberjob_pod_identity(), static_cast<int>(::getpid())))
      end_when_launcher_closes(turn.fd, pod.describe());
  }
  return comm;
}

bool joined_launcher() { return g_pod_joined.load(); }

std::unique_ptr<JoinTurns> serve_worker_pods(const KubernetesPod& pod, JoinHost& master,
                                             const std::optional<JoinToken>& token) {
  auto turns = serve_join_turns(master, pod.pod_ip, token);
  if (token) {
    // The turns alone: the master's port reaches a worker only in its turn's grant.
    bridge::publish_name(pod.service_name(), join_uri(turns->address()));
  } else {
    // Turns first: a worker that finds the rendezvous finds its turns too.
    warn_join_without_token("this launcher", turns->address());
    bridge::publish_name(pod.turns_name(), turns->address());
    bridge::publish_name(pod.service_name(), master.listen());
  }
  master.provision_pods(std::make_unique<FiberJobScaler>(pod.ns, pod.job), pod.slots_per_worker);
  return turns;
}

}  // namespace fiber::internal
