// Join turns for a master, and a job taking one: the part a FiberJob's launcher and its worker
// pods share with fiber::listen() and jobs started with FIBER_CONNECT. With a join token the
// address handed out is the turns' ("fiber-join://host:port"), and the master's MPI port reaches a
// joining job only in its turn's grant, after both proved the token. Internal.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "fiber/kubernetes/join_token.h"
#include "fiber/kubernetes/join_turns.h"
#include "mpi_bridge/communicator.h"

namespace fiber::internal {

class JoinHost;

/// Join turns for `master` on `host` (see JoinTurns), their turns holding the master's traffic
/// while a job connects, a pod's closed connection reported to the master. `guard`: with a token,
/// the master's MPI port (master.listen()) is what grants hand out.
std::unique_ptr<JoinTurns> serve_join_turns(JoinHost& master, const std::string& host,
                                            const std::optional<JoinToken>& token);

/// A job started with FIBER_CONNECT=`address` (no pod): connects every rank to the master.
/// With `token`, `address` must be a join address: rank 0 takes a turn (proving the token both
/// ways, waiting up to `limit`) and every rank then connects to the port its grant carries, or,
/// when rank 0 got none (refused, unreachable, no turn in time), rank 0 prints why and every
/// rank finalises MPI and exits with status 1, as a worker ends. Without a token,
/// `address` must be an MPI port (a warning says joining is unguarded). A token and an MPI port, or
/// a join address and no token: fiber::UsageError on every rank, before any MPI call.
bridge::Communicator join_master(const std::string& address, const std::optional<JoinToken>& token,
                                 std::chrono::seconds limit);

}  // namespace fiber::internal
