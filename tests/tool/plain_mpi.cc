// An MPI program that does not use fibermpi, for `fibermpi run`: rank 0 says the world's size.
#include <mpi.h>

#include <cstdio>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank == 0) std::printf("plain_mpi: a world of %d\n", size);
  MPI_Finalize();
  return 0;
}
