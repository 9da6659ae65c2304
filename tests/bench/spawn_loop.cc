// The raw spawn loop that tells whether an MPI build can spawn dependably: the parent spawns
// `children` copies of this program, exchanges one int with each, disconnects, and does it again,
// `iterations` times. No fibermpi code is involved, so what this measures is the MPI alone.
//
// An iteration that takes longer than `stuck_after_s` seconds is taken as stuck (Open MPI 4.1.4
// with the external PMIx 4.2 never returns from some spawns): a watchdog thread prints the
// result line and ends the program, since a stuck MPI_Comm_spawn cannot be interrupted.
//
// Usage: spawn_loop [iterations=200] [children=8] [stuck_after_s=60]
// Prints one JSON line: {"bench":"spawn_loop","mpi":...,"completed":N,"iterations":M,
//                        "spawn_s_p50":..,"spawn_s_max":..,"stuck":true|false}
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string version(text, static_cast<size_t>(length));
  if (const auto end = version.find_first_of(",\n"); end != std::string::npos) version.resize(end);
  return version;
}

struct Progress {
  std::mutex mutex;
  int completed = 0;
  std::vector<double> spawn_seconds;
  std::string mpi;
  int iterations = 0;
};

void print_result(Progress& progress, bool stuck) {
  std::lock_guard lock(progress.mutex);
  std::vector<double> sorted = progress.spawn_seconds;
  std::sort(sorted.begin(), sorted.end());
  const double p50 = sorted.empty() ? 0.0 : sorted[sorted.size() / 2];
  const double max = sorted.empty() ? 0.0 : sorted.back();
  std::printf(
      "{\"bench\":\"spawn_loop\",\"mpi\":\"%s\",\"completed\":%d,\"iterations\":%d,"
      "\"spawn_s_p50\":%.3f,\"spawn_s_max\":%.3f,\"stuck\":%s}\n",
      progress.mpi.c_str(), progress.completed, progress.iterations, p50, max,
      stuck ? "true" : "false");
  std::fflush(stdout);
}

int child() {
  MPI_Comm parent = MPI_COMM_NULL;
  MPI_Comm_get_parent(&parent);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int value = 0;
  MPI_Recv(&value, 1, MPI_INT, 0, 0, parent, MPI_STATUS_IGNORE);
  value += rank;
  MPI_Send(&value, 1, MPI_INT, 0, 0, parent);
  MPI_Comm_disconnect(&parent);
  MPI_Finalize();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm parent = MPI_COMM_NULL;
  MPI_Comm_get_parent(&parent);
  if (parent != MPI_COMM_NULL) return child();

  const int iterations = argc > 1 ? std::atoi(argv[1]) : 200;
  const int children = argc > 2 ? std::atoi(argv[2]) : 8;
  const int stuck_after_s = argc > 3 ? std::atoi(argv[3]) : 60;
  if (iterations < 1 || children < 1 || stuck_after_s < 1) {
    std::fprintf(stderr, "usage: spawn_loop [iterations>=1] [children>=1] [stuck_after_s>=1]\n");
    return 2;
  }
  Progress progress;
  progress.mpi = mpi_library_version();
  progress.iterations = iterations;

  std::atomic<int64_t> iteration_started_ns{Clock::now().time_since_epoch().count()};
  std::atomic<bool> finished{false};
  std::thread watchdog([&] {
    while (!finished.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const auto started = Clock::time_point(Clock::duration(iteration_started_ns.load()));
      if (Clock::now() - started > std::chrono::seconds(stuck_after_s)) {
        print_result(progress, true);
        std::fprintf(stderr, "spawn_loop: iteration %d has not completed after %d s: stuck\n",
                     progress.completed + 1, stuck_after_s);
        std::_Exit(1);
      }
    }
  });

  int errors = 0;
  for (int i = 0; i < iterations && errors == 0; ++i) {
    iteration_started_ns.store(Clock::now().time_since_epoch().count());
    const auto spawn_start = Clock::now();
    MPI_Comm intercomm = MPI_COMM_NULL;
    std::vector<int> codes(static_cast<size_t>(children));
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "map_by", ":OVERSUBSCRIBE");
    const int rc = MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, children, info, 0, MPI_COMM_SELF,
                                  &intercomm, codes.data());
    MPI_Info_free(&info);
    const double spawn_s = std::chrono::duration<double>(Clock::now() - spawn_start).count();
    if (rc != MPI_SUCCESS) {
      std::fprintf(stderr, "spawn_loop: MPI_Comm_spawn failed in iteration %d\n", i + 1);
      ++errors;
      break;
    }
    for (int c = 0; c < children; ++c) {
      int value = i;
      MPI_Send(&value, 1, MPI_INT, c, 0, intercomm);
    }
    for (int c = 0; c < children; ++c) {
      int value = 0;
      MPI_Recv(&value, 1, MPI_INT, c, 0, intercomm, MPI_STATUS_IGNORE);
      if (value != i + c) {
        std::fprintf(stderr, "spawn_loop: child %d answered %d, expected %d\n", c, value, i + c);
        ++errors;
      }
    }
    MPI_Comm_disconnect(&intercomm);
    std::lock_guard lock(progress.mutex);
    progress.spawn_seconds.push_back(spawn_s);
    ++progress.completed;
  }
  finished.store(true);
  watchdog.join();
  print_result(progress, false);
  MPI_Finalize();
  return errors == 0 ? 0 : 1;
}
