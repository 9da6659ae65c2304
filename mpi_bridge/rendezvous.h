// Letting independently started MPI jobs join: a port this process accepts connections on, and
// connecting a whole job to such a port. Under Open MPI 4.1 both jobs must be started by mpirun
// with the same --ompi-server (the name service that lets them find each other).
#pragma once

#include <string>

#include "mpi_bridge/communicator.h"

namespace fiber::bridge {

class Rendezvous {
 public:
  /// Opens a port (MPI_Open_port).
  Rendezvous();
  ~Rendezvous();
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;

  /// What a joining job passes to connect().
  const std::string& address() const noexcept { return port_; }
  /// Waits until a job connects; the intercommunicator's remote group is that job's ranks.
  Communicator accept();

 private:
  std::string port_;
};

/// Connects the whole job (collective over MPI_COMM_WORLD) to `address`; throws fiber::MpiError
/// naming the address when it cannot. Returns once the accepting side's MPI_Comm_accept has
/// returned too (it says so), so that nothing is sent to it before.
Communicator connect(const std::string& address);

/// Rank 0's `ok`, on every rank of the job (collective over MPI_COMM_WORLD): a joining job's rank
/// 0 says whether it may connect, so that every rank goes on to connect, or none does. Throws
/// fiber::MpiError when the broadcast fails.
bool root_decides(bool ok);

/// Publishes `address` under `service` on the job's name server (MPI_Publish_name; Open MPI
/// 4.1: the ompi-server mpirun was started with), replacing what was published under that name
/// before. Throws fiber::MpiError naming the service.
void publish_name(const std::string& service, const std::string& address);

/// The address published under `service`, or empty when nothing is published under it yet.
/// Throws fiber::MpiError when the name server cannot be asked.
std::string lookup_name(const std::string& service);

}  // namespace fiber::bridge
