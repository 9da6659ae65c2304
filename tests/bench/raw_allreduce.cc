// The plain-MPI peer of group_bench's allreduce: the same timed loop over MPI_COMM_WORLD, under
// mpirun -n N. Also the start-up peer: run with "startup" it only initialises, barriers and
// finalises, and the driver times the whole mpirun command. With "multiple" MPI is initialised
// at MPI_THREAD_MULTIPLE, the level fibermpi runs at (its calls take locks the single-threaded
// level skips).
// Usage: mpirun -n N raw_allreduce [bytes iterations [multiple] | startup]
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "allreduce_timing.h"

int main(int argc, char** argv) {
  const bool multiple = argc > 3 && std::strcmp(argv[3], "multiple") == 0;
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
  const double us = fiber::bench::median_allreduce_us(MPI_COMM_WORLD, bytes, iterations);
  if (rank == 0) {
    std::printf(
        "{\"bench\":\"allreduce\",\"impl\":\"raw MPI mpirun%s\",\"size\":%d,\"bytes\":%d,"
        "\"median_us\":%.2f}\n",
        multiple ? " multiple" : "", size, bytes, us);
  }
  MPI_Finalize();
  return 0;
}
