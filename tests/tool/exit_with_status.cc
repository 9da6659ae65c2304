// A fibermpi program for the fibermpi command's tests: maps over a pool of every worker it has
// (the static world's ranks, or spawned ones), checks each result, prints where it ran, and exits
// with the status given as its argument.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "fiber/fiber.h"

int square(int x) { return x * x; }

int main(int argc, char** argv) {
  fiber::init(argc, argv);
  const int status = argc > 1 ? std::atoi(argv[1]) : 0;
  fiber::Pool pool(2);
  std::vector<int> inputs;
  for (int i = 0; i < 100; ++i) inputs.push_back(i);
  const std::vector<int> results = pool.map(square, inputs);
  for (int i = 0; i < 100; ++i) {
    if (results[i] != i * i) {
      std::printf("exit_with_status: result %d is %d\n", i, results[i]);
      return 99;
    }
  }
  const char* world = std::getenv("OMPI_COMM_WORLD_SIZE");
  std::printf("exit_with_status: map ok, MPI world of %s, exiting with %d\n", world ? world : "1",
              status);
  std::fflush(stdout);
  pool.close();
  pool.join();
  return status;
}
