// The floor for round trips: plain MPI_Send/MPI_Recv between a parent and a child it spawned
// (the same TCP path a fibermpi master uses to reach spawned workers), or, under mpirun -n 2,
// between two ranks of one world (shared memory). Busy-polling, as MPI does.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

// Waits for one int by polling (MPI_Improbe), the way a runtime that must not block does.
void receive_polling(MPI_Comm comm, int* value) {
  for (;;) {
    int flag = 0;
    MPI_Message message;
    MPI_Improbe(MPI_ANY_SOURCE, 0, comm, &flag, &message, MPI_STATUS_IGNORE);
    if (flag) {
      MPI_Mrecv(value, 1, MPI_INT, &message, MPI_STATUS_IGNORE);
      return;
    }
  }
}

// Ranks 0 and 1 of one mpirun world: the shared-memory path to static-world workers.
int static_world_pingpong(int round_trips) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::vector<double> rtts;
  for (int i = -100; i < round_trips; ++i) {
    int value = i;
    if (rank == 0) {
      const auto start = std::chrono::steady_clock::now();
      MPI_Send(&value, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
      receive_polling(MPI_COMM_WORLD, &value);
      if (i >= 0)
        rtts.push_back(
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                .count());
    } else if (rank == 1) {
      receive_polling(MPI_COMM_WORLD, &value);
      MPI_Send(&value, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    }
  }
  if (rank == 0) {
    std::sort(rtts.begin(), rtts.end());
    std::printf(
        "{\"bench\":\"latency\",\"impl\":\"raw MPI static\",\"p50_us\":%.1f,\"p99_us\":%.1f}\n",
        rtts[rtts.size() / 2], rtts[rtts.size() * 99 / 100]);
  }
  MPI_Finalize();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int world = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (world > 1) return static_world_pingpong(argc > 1 ? std::atoi(argv[1]) : 2000);
  MPI_Comm parent;
  MPI_Comm_get_parent(&parent);
  if (parent != MPI_COMM_NULL) {
    for (;;) {
      int value = 0;
      MPI_Recv(&value, 1, MPI_INT, 0, 0, parent, MPI_STATUS_IGNORE);
      MPI_Send(&value, 1, MPI_INT, 0, 0, parent);
      if (value < 0) break;
    }
    MPI_Comm_disconnect(&parent);
    MPI_Finalize();
    return 0;
  }
  const int round_trips = argc > 1 ? std::atoi(argv[1]) : 2000;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "map_by", ":OVERSUBSCRIBE");
  MPI_Comm child;
  const auto spawn_start = std::chrono::steady_clock::now();
  MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 1, info, 0, MPI_COMM_SELF, &child, MPI_ERRCODES_IGNORE);
  const double spawn_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - spawn_start).count();
  std::vector<double> rtts;
  for (int i = -100; i < round_trips; ++i) {
    int value = i < 0 ? 0 : i;
    const auto start = std::chrono::steady_clock::now();
    MPI_Send(&value, 1, MPI_INT, 0, 0, child);
    MPI_Recv(&value, 1, MPI_INT, 0, 0, child, MPI_STATUS_IGNORE);
    if (i >= 0)
      rtts.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
              .count());
  }
  int stop = -1;
  MPI_Send(&stop, 1, MPI_INT, 0, 0, child);
  MPI_Recv(&stop, 1, MPI_INT, 0, 0, child, MPI_STATUS_IGNORE);
  std::sort(rtts.begin(), rtts.end());
  std::printf(
      "{\"bench\":\"start_processes\",\"impl\":\"raw "
      "MPI_Comm_spawn\",\"processes\":1,\"median_s\":%.4f}\n",
      spawn_s);
  std::printf(
      "{\"bench\":\"queue_round_trip\",\"impl\":\"raw MPI "
      "ping-pong\",\"p50_us\":%.1f,\"p99_us\":%.1f}\n",
      rtts[rtts.size() / 2], rtts[rtts.size() * 99 / 100]);
  std::printf(
      "{\"bench\":\"latency\",\"impl\":\"raw MPI spawned\",\"p50_us\":%.1f,\"p99_us\":%.1f}\n",
      rtts[rtts.size() / 2], rtts[rtts.size() * 99 / 100]);
  MPI_Comm_disconnect(&child);
  MPI_Finalize();
  return 0;
}
