#include "mpi_bridge/rendezvous.h"

#include <mpi.h>

#include "mpi_bridge/error.h"

namespace fiber::bridge {
namespace {

// The accepting side tells every rank of a joined job that its MPI_Comm_accept has returned; a
// joined rank sends nothing before. Open MPI 4.1 deadlocks otherwise: a joined rank's first
// message reaches the master while the master still accepts another job, the master's progress
// thread waits in PMIx for the new peer's address while the accepting thread waits in PMIx for
// the exchange with the other job, and neither returns (seen with four worker pods joining at
// once).
constexpr int kJoinReadyTag = 7118;

}  // namespace

Rendezvous::Rendezvous() {
  char port[MPI_MAX_PORT_NAME] = {};
  FIBER_MPI_CHECK(MPI_Open_port(MPI_INFO_NULL, port));
  port_ = port;
}

Rendezvous::~Rendezvous() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Close_port(port_.c_str());
}

Communicator Rendezvous::accept() {
  MPI_Comm joined = MPI_COMM_NULL;
  FIBER_MPI_CHECK(MPI_Comm_accept(port_.c_str(), MPI_INFO_NULL, 0, MPI_COMM_SELF, &joined));
  MPI_Comm_set_errhandler(joined, MPI_ERRORS_RETURN);
  Communicator communicator(joined);
  // Sent by this thread itself: the others may be holding their traffic (JoinAcceptor turns).
  const int ranks = communicator.remote_size();
  for (int rank = 0; rank < ranks; ++rank)
    FIBER_MPI_CHECK(MPI_Send(nullptr, 0, MPI_BYTE, rank, kJoinReadyTag, joined));
  return communicator;
}

Communicator connect(const std::string& address) {
  MPI_Comm joined = MPI_COMM_NULL;
  const int code = MPI_Comm_connect(address.c_str(), MPI_INFO_NULL, 0, MPI_COMM_WORLD, &joined);
  if (code != MPI_SUCCESS) {
    throw MpiError("MPI_Comm_connect to " + address +
                       " (are both jobs started by mpirun with the same --ompi-server?)",
                   code, mpi_error_text(code));
  }
  MPI_Comm_set_errhandler(joined, MPI_ERRORS_RETURN);
  Communicator communicator(joined);
  const int ready = MPI_Recv(nullptr, 0, MPI_BYTE, 0, kJoinReadyTag, joined, MPI_STATUS_IGNORE);
  if (ready != MPI_SUCCESS) {
    throw MpiError("waiting for the master at " + address + " to take this job", ready,
                   mpi_error_text(ready));
  }
  return communicator;
}

bool root_decides(bool ok) {
  int decided = ok ? 1 : 0;
  FIBER_MPI_CHECK(MPI_Bcast(&decided, 1, MPI_INT, 0, MPI_COMM_WORLD));
  return decided != 0;
}

void publish_name(const std::string& service, const std::string& address) {
  const int code = MPI_Publish_name(service.c_str(), MPI_INFO_NULL, address.c_str());
  if (code != MPI_SUCCESS) {
    throw MpiError("MPI_Publish_name of '" + service + "' on the name server", code,
                   mpi_error_text(code));
  }
}

std::string lookup_name(const std::string& service) {
  char port[MPI_MAX_PORT_NAME] = {};
  const int code = MPI_Lookup_name(service.c_str(), MPI_INFO_NULL, port);
  if (code == MPI_SUCCESS) return port;
  int error_class = 0;
  MPI_Error_class(code, &error_class);
  if (error_class == MPI_ERR_NAME) return {};
  throw MpiError("MPI_Lookup_name of '" + service + "' on the name server", code,
                 mpi_error_text(code));
}

}  // namespace fiber::bridge
