#include "fiber/kubernetes/join_service.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "fiber/base/log.h"
#include "fiber/errors.h"
#include "fiber/kubernetes/join_handshake.h"
#include "fiber/kubernetes/join_host.h"
#include "mpi_bridge/environment.h"
#include "mpi_bridge/rendezvous.h"

namespace fiber::internal {

std::unique_ptr<JoinTurns> serve_join_turns(JoinHost& master, const std::string& host,
                                            const std::optional<JoinToken>& token) {
  // A turn is a connect/accept (well under a second); one held for a minute belongs to a job that
  // vanished without closing its socket.
  JoinGuard guard;
  if (token) {
    guard.token = *token;
    guard.port = master.listen();
  }
  JoinHost* m = &master;
  return std::make_unique<JoinTurns>(
      host, std::chrono::seconds(60), [m] { m->begin_join_turn(); }, [m] { m->end_join_turn(); },
      [m](const std::string& gone, int pid) { m->pod_connection_closed(gone, pid); },
      std::move(guard));
}

bridge::Communicator join_master(const std::string& address, const std::optional<JoinToken>& token,
                                 std::chrono::seconds limit) {
  const bool rank0 = bridge::Environment::world_rank() == 0;
  if (!token) {
    if (is_join_uri(address)) {
      throw UsageError("fibermpi: the master at " + address +
                       " asks for a join token, and FIBER_JOIN_TOKEN_FILE is not set: set it to "
                       "the file holding the master's token");
    }
    if (rank0) warn_join_without_token("this joining job", address);
    return bridge::connect(address);
  }
  if (!is_join_uri(address)) {
    throw UsageError("fibermpi: FIBER_JOIN_TOKEN_FILE is set, but FIBER_CONNECT '" + address +
                     "' is an MPI port, not the " + std::string(kJoinUriScheme) +
                     " address fiber::listen() returns on a master with a join token: the master "
                     "cannot prove the token there; refusing to join it");
  }
  JoinTurn turn;
  std::string why;
  if (rank0) {
    try {
      turn = wait_for_join_turn(turn_address_of(address), limit, &*token);
    } catch (const std::exception& e) {
      why = e.what();
    }
  }
  // Every rank connects (the connect is collective), or none: a rank left in MPI_Comm_connect
  // alone would wait for ever.
  if (!bridge::root_decides(why.empty())) {
    // A refused job ends as a worker does, with its reason said once and no core: its program
    // never gets past fiber::init in any case.
    if (rank0) FIBER_LOG_WARNING("%s", why.c_str());
    std::fflush(nullptr);
    bridge::Environment::finalize(/*always=*/true);
    std::exit(1);
  }
  // MPI_Comm_connect reads the port at rank 0 alone.
  bridge::Communicator comm;
  try {
    comm = bridge::connect(rank0 ? turn.port : address);
  } catch (...) {
    if (turn.fd >= 0) ::close(turn.fd);
    throw;
  }
  if (turn.fd >= 0) ::close(turn.fd);  // passes the turn on
  return comm;
}

}  // namespace fiber::internal
