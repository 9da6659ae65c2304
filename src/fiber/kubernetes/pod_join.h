// The steps of the runtime's start that belong to a pod of a FiberJob: the pod's program running
// itself under mpirun, a worker pod finding its launcher on the job's name service and joining
// it in turn, and the launcher serving those turns and asking the job for pods. Runtime::begin
// calls them where the pod's part differs from a plain MPI program's. Internal.
#pragma once

#include <chrono>
#include <memory>
#include <optional>

#include "fiber/kubernetes/join_token.h"
#include "fiber/kubernetes/join_turns.h"
#include "fiber/kubernetes/kubernetes_pod.h"
#include "mpi_bridge/communicator.h"

namespace fiber::internal {

class JoinHost;

/// Before MPI starts: refuses an MPI without a standalone name server (fiber::UsageError),
/// runs the program again under mpirun unless mpirun started it, and has the launcher report
/// its exit status to the waiting parent (relaunch_under_mpirun).
void prepare_pod_process(const KubernetesPod& pod, int argc, char** argv);

/// A worker pod, once MPI has started: finds the launcher's rendezvous on the name service
/// (waiting up to `limit` for it to be published) and makes it this job's connect address.
/// The process ends with status 1 unless it has joined (joined_launcher()) within `limit` + 30 s,
/// so that its pod fails and is replaced instead of running for ever without serving.
void find_launcher(const KubernetesPod& pod, std::chrono::seconds limit);

/// A worker pod's MPI connect to its launcher: rank 0 waits for its join turn first (Open MPI
/// 4.1 mixes up jobs connecting at once) and, once connected, hands the turn back while keeping
/// its socket open for the life of the process (JoinTurns). With the job's `token`, rank 0
/// proves it and has the launcher prove it (a peer that cannot is refused, logged, and the name
/// service asked again) and connects to the MPI port the grant carries. Every rank calls it (the
/// connect is collective). A rank 0 that gets no turn within `limit` ends the whole pod (status
/// 1): the other ranks wait in the collective connect, and the pod is replaced.
bridge::Communicator connect_to_launcher(const KubernetesPod& pod, std::chrono::seconds limit,
                                         const std::optional<JoinToken>& token);

/// Whether this worker pod's rank has connected to its launcher (or given up trying).
bool joined_launcher();

/// The launcher: serves the join turns on the pod's address, publishes them on the job's name
/// service (with the job's `token`, their join address alone under the rendezvous's name; without,
/// the turns and the master's MPI port, with a warning), and gives the master's pools the job's
/// pods.
std::unique_ptr<JoinTurns> serve_worker_pods(const KubernetesPod& pod, JoinHost& master,
                                             const std::optional<JoinToken>& token);

}  // namespace fiber::internal
