// One way to time MPI_Allreduce, shared by the fiber::Group benchmark and its plain-MPI peer so
// that both measure exactly the same loop: a barrier, then `iterations` timed allreduces of
// `bytes` bytes; the median per call, in microseconds, on rank 0 (other ranks return 0).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <vector>

namespace fiber::bench {

inline double median_allreduce_us(MPI_Comm comm, int bytes, int iterations) {
  const int count = std::max(1, bytes / static_cast<int>(sizeof(float)));
  std::vector<float> in(static_cast<size_t>(count), 1.0f), out(static_cast<size_t>(count));
  for (int i = 0; i < 10; ++i)
    MPI_Allreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM, comm);
  MPI_Barrier(comm);
  std::vector<double> samples;
  samples.reserve(static_cast<size_t>(iterations));
  for (int i = 0; i < iterations; ++i) {
    const double start = MPI_Wtime();
    MPI_Allreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM, comm);
    samples.push_back((MPI_Wtime() - start) * 1e6);
  }
  // Every rank took part in each call; rank 0's view is the one reported.
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank != 0) return 0;
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

}  // namespace fiber::bench
