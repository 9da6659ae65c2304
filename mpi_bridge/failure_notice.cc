#include "mpi_bridge/failure_notice.h"

// Open MPI's extensions (ULFM among them); MPICH has none, and its own ULFM needs an
// MPIR_CVAR_ENABLE_FT that fails its MPI_Init here, so under MPICH a lost peer shows only by
// its silence (heartbeats) and its broken link.
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include <numeric>

namespace fiber::bridge {

#if defined(OMPI_HAVE_MPI_EXT_FTMPI) && OMPI_HAVE_MPI_EXT_FTMPI

bool failure_notices_compiled() { return true; }

bool is_peer_failure(int code) {
  int error_class = code;
  MPI_Error_class(code, &error_class);
  return error_class == MPIX_ERR_PROC_FAILED || error_class == MPIX_ERR_PROC_FAILED_PENDING;
}

std::vector<int> acknowledge_failed_peers(MPI_Comm comm) {
  MPI_Group failed = MPI_GROUP_NULL;
  if (MPIX_Comm_get_failed(comm, &failed) != MPI_SUCCESS) return {};
  int count = 0;
  MPI_Group_size(failed, &count);
  int acknowledged = 0;
  MPIX_Comm_ack_failed(comm, count, &acknowledged);
  std::vector<int> ranks;
  if (count > 0) {
    int inter = 0;
    MPI_Comm_test_inter(comm, &inter);
    MPI_Group peers = MPI_GROUP_NULL;
    if (inter) {
      MPI_Comm_remote_group(comm, &peers);
    } else {
      MPI_Comm_group(comm, &peers);
    }
    std::vector<int> in_failed(static_cast<size_t>(count));
    std::iota(in_failed.begin(), in_failed.end(), 0);
    std::vector<int> in_peers(static_cast<size_t>(count), MPI_UNDEFINED);
    MPI_Group_translate_ranks(failed, count, in_failed.data(), peers, in_peers.data());
    for (const int rank : in_peers)
      if (rank != MPI_UNDEFINED) ranks.push_back(rank);
    MPI_Group_free(&peers);
  }
  MPI_Group_free(&failed);
  return ranks;
}

#else

bool failure_notices_compiled() { return false; }

bool is_peer_failure(int) { return false; }

std::vector<int> acknowledge_failed_peers(MPI_Comm) { return {}; }

#endif

}  // namespace fiber::bridge
