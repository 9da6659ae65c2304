// A fiber::Group: four processes that run one SPMD function and average their "gradients" with
// MPI_Allreduce over fiber::group_comm(), the way a data-parallel trainer uses MPI_COMM_WORLD.
// Runs as ./04_group (the members are spawned) or mpirun -n 5 ./04_group (ranks 1..4 are the
// members and talk over shared memory).
#include <mpi.h>

#include <cstdio>
#include <numeric>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/mpi.h"

// Each member computes a gradient of its own shard, averages it with the others, and takes the
// same step: their parameters stay identical without a parameter server.
void train(int steps, fiber::SimpleQueue<double> out) {
  MPI_Comm comm = fiber::group_comm();  // was MPI_COMM_WORLD
  const int rank = fiber::group_rank();
  const int size = fiber::group_size();
  std::vector<double> params(8, 0.0);
  std::vector<double> grad(params.size()), avg(params.size());
  for (int step = 0; step < steps; ++step) {
    for (size_t i = 0; i < params.size(); ++i) grad[i] = params[i] - (rank + 1.0);  // shard target
    MPI_Allreduce(grad.data(), avg.data(), static_cast<int>(grad.size()), MPI_DOUBLE, MPI_SUM,
                  comm);
    for (size_t i = 0; i < params.size(); ++i) params[i] -= 0.5 * avg[i] / size;
  }
  if (rank == 0) out.put(params[0]);
}

int main(int argc, char** argv) {
  fiber::init(argc, argv);  // in a worker process this serves and never returns
  fiber::SimpleQueue<double> out;
  fiber::Group group(4, train, 50, out);
  group.start();
  const double learned = out.get();
  group.join();
  int failed = 0;
  for (const auto& code : group.exitcodes()) failed += code != 0;
  // The mean of the shard targets 1..4.
  std::printf("4 members learned %.4f (the mean of their targets is 2.5), %d failed\n", learned,
              failed);
  return failed == 0 ? 0 : 1;
}
