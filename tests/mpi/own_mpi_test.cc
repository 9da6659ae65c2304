// A program that initialises MPI itself (MPI_THREAD_MULTIPLE), uses fibermpi, and finalises MPI
// at the end of main(), before fibermpi's exit handler: fibermpi must end first, from inside
// MPI_Finalize, with none of its threads still calling MPI.
#include <mpi.h>

#include <cstdio>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/mpi.h"

namespace {
int square(int x) { return x * x; }
}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  FIBER_CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
  fiber::init(argc, argv);  // workers serve in here and never return
  if (fiber::owns_mpi()) {
    std::printf("own_mpi_test: fibermpi claims an MPI the program initialised\n");
    return 1;
  }
  std::vector<int> squares;
  {
    fiber::Pool pool(3);
    squares = pool.map(square, std::vector<int>{1, 2, 3, 4, 5, 6});
  }
  int rank = -1;
  FIBER_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  FIBER_CHECK_MPI(MPI_Finalize());
  const bool right = squares == std::vector<int>{1, 4, 9, 16, 25, 36} && rank == 0;
  std::printf("own_mpi_test: %s\n", right ? "OK" : "wrong results");
  return right ? 0 : 1;
}
