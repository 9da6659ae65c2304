// Move-only ownership of an MPI communicator.
#pragma once

#include <mpi.h>

namespace fiber::bridge {

/// Owns one communicator and frees it with MPI_Comm_free (never MPI_Comm_disconnect, which waits
/// for a peer that may be dead). Errors on it are returned, not fatal, so they become exceptions.
class Communicator {
 public:
  Communicator() = default;
  /// Takes ownership of `comm`.
  explicit Communicator(MPI_Comm comm);
  ~Communicator();
  Communicator(Communicator&& other) noexcept;
  Communicator& operator=(Communicator&& other) noexcept;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  /// Duplicates `comm` (collective over it) and owns the copy.
  static Communicator duplicate(MPI_Comm comm);
  /// Wraps a communicator MPI owns (such as the parent intercommunicator) without freeing it.
  static Communicator borrow(MPI_Comm comm);

  MPI_Comm get() const noexcept { return comm_; }
  bool valid() const noexcept { return comm_ != MPI_COMM_NULL; }
  bool is_inter() const;
  int rank() const;
  /// Size of the local group.
  int size() const;
  /// Size of the remote group of an intercommunicator.
  int remote_size() const;
  /// Frees the communicator now (safe to call twice).
  void reset() noexcept;
  /// Gives the communicator up without freeing it (left to MPI or to the process exit).
  MPI_Comm release() noexcept {
    const MPI_Comm comm = comm_;
    comm_ = MPI_COMM_NULL;
    return comm;
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owned_ = true;
};

}  // namespace fiber::bridge
