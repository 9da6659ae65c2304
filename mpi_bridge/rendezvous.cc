#include "mpi_bridge/rendezvous.h"

#include <mpi.h>

#include "mpi_bridge/error.h"

namespace fiber::bridge {

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
  return Communicator(joined);
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
  return Communicator(joined);
}

void publish_name(const std::string& service, const std::string& address) {
  int code = MPI_Publish_name(service.c_str(), MPI_INFO_NULL, address.c_str());
  if (code != MPI_SUCCESS) {
    // An entry left by an earlier launcher of the same job (it was killed before it could
    // unpublish): the name server refuses to publish twice, so the stale one goes first.
    char old_port[MPI_MAX_PORT_NAME] = {};
    if (MPI_Lookup_name(service.c_str(), MPI_INFO_NULL, old_port) == MPI_SUCCESS)
      MPI_Unpublish_name(service.c_str(), MPI_INFO_NULL, old_port);
    code = MPI_Publish_name(service.c_str(), MPI_INFO_NULL, address.c_str());
  }
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
