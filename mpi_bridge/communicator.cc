#include "mpi_bridge/communicator.h"

#include <utility>

#include "mpi_bridge/error.h"

namespace fiber::bridge {

Communicator::Communicator(MPI_Comm comm) : comm_(comm) {
  if (comm_ != MPI_COMM_NULL) FIBER_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
}

Communicator::~Communicator() { reset(); }

Communicator::Communicator(Communicator&& other) noexcept
    : comm_(std::exchange(other.comm_, MPI_COMM_NULL)), owned_(other.owned_) {}

Communicator& Communicator::operator=(Communicator&& other) noexcept {
  if (this != &other) {
    reset();
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    owned_ = other.owned_;
  }
  return *this;
}

Communicator Communicator::duplicate(MPI_Comm comm) {
  MPI_Comm copy = MPI_COMM_NULL;
  FIBER_MPI_CHECK(MPI_Comm_dup(comm, &copy));
  return Communicator(copy);
}

Communicator Communicator::borrow(MPI_Comm comm) {
  Communicator borrowed(comm);
  borrowed.owned_ = false;
  return borrowed;
}

bool Communicator::is_inter() const {
  int flag = 0;
  FIBER_MPI_CHECK(MPI_Comm_test_inter(comm_, &flag));
  return flag != 0;
}

int Communicator::rank() const {
  int rank = 0;
  FIBER_MPI_CHECK(MPI_Comm_rank(comm_, &rank));
  return rank;
}

int Communicator::size() const {
  int size = 0;
  FIBER_MPI_CHECK(MPI_Comm_size(comm_, &size));
  return size;
}

int Communicator::remote_size() const {
  int size = 0;
  FIBER_MPI_CHECK(MPI_Comm_remote_size(comm_, &size));
  return size;
}

void Communicator::reset() noexcept {
  if (comm_ == MPI_COMM_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owned_ && !finalized && comm_ != MPI_COMM_WORLD && comm_ != MPI_COMM_SELF)
    MPI_Comm_free(&comm_);
  comm_ = MPI_COMM_NULL;
}

}  // namespace fiber::bridge
