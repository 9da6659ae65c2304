// The plain-MPI peer of group_bench's allreduce: the same timed loop, under mpirun. Also the
// start-up peer: run with "startup" it only initialises, barriers and finalises, and the driver
// times the whole mpirun command.
//   multiple  MPI at MPI_THREAD_MULTIPLE, the level fibermpi runs at (its calls take locks the
//             single-threaded level skips)
//   beside    the loop runs on ranks 1..N-1 while rank 0 idles, as a fibermpi master does beside
//             a group on the static world's ranks (a third process on the node slows a 2-rank
//             allreduce even when it sleeps: measured here)
// Usage: mpirun -n N raw_allreduce [bytes iterations [multiple] [beside] | startup]
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "allreduce_timing.h"

namespace {

bool has_flag(int argc, char** argv, const char* flag) {
  for (int i = 3; i < argc; ++i)
    if (std::strcmp(argv[i], flag) == 0) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  const bool multiple = has_flag(argc, argv, "multiple");
  const bool beside = has_flag(argc, argv, "beside");
  int provided = 0;
  if (multiple) {
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  } else {
    MPI_Init(&argc, &argv);
  }
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc > 1 && std::strcmp(argv[1], "startup") == 0) {
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
  }
  const int bytes = argc > 1 ? std::atoi(argv[1]) : 1024;
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 1000;
  MPI_Comm comm = MPI_COMM_WORLD;
  if (beside) MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 1, rank, &comm);
  if (beside && rank == 0) {
    // Idle without spinning (MPI's blocking calls busy-wait) until the others are done.
    int done = 0, flag = 0;
    MPI_Request request;
    MPI_Irecv(&done, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, &request);
    while (!flag) {
      ::usleep(1000);
      MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
    }
  } else {
    const double us = fiber::bench::median_allreduce_us(comm, bytes, iterations);
    int comm_rank = 0, comm_size = 0;
    MPI_Comm_rank(comm, &comm_rank);
    MPI_Comm_size(comm, &comm_size);
    if (comm_rank == 0) {
      std::printf(
          "{\"bench\":\"allreduce\",\"impl\":\"raw MPI mpirun%s%s\",\"size\":%d,\"bytes\":%d,"
          "\"median_us\":%.2f}\n",
          multiple ? " multiple" : "", beside ? " beside" : "", comm_size, bytes, us);
      std::fflush(stdout);
      if (beside) MPI_Send(&comm_rank, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    }
  }
  MPI_Finalize();
  return 0;
}
