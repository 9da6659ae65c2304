// Jobs that join a running master through its rendezvous (run by join_test.sh, which starts an
// ompi-server, this program as the master, and a second mpirun of it with FIBER_CONNECT).
//   join_test join <port file>   the joined ranks take pool tasks, then leave when it ends
//   join_test leave <port file>  the joined ranks get SIGTERM mid-map: they finish their work,
//                                leave, and their job exits 0
//   join_test kill <port file>   the whole joined job is SIGKILLed mid-map: nothing is lost
//   join_test refused <port file> a job that cannot prove the join token is refused (the script
//                                writes <port file>.refused once it has ended): the map of the
//                                master's own pool is exact and the pool never grew
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fiber/fiber.h"

namespace {

bool in_joined_job(int) { return std::getenv("FIBER_CONNECT") != nullptr; }

// pid and parent pid (the joined job's mpirun) of the worker, 0s outside a joined job.
std::pair<int, int> joined_identity(int) {
  if (!in_joined_job(0)) return {0, 0};
  return {static_cast<int>(::getpid()), static_cast<int>(::getppid())};
}

long slow_square(long x) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(300);
  while (std::chrono::steady_clock::now() < until) {
  }
  return x * x;
}

int failures = 0;
void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "FAILED: %s\n", what);
    ++failures;
  }
}

// The map's results are all there and right, and the pool is back to its own single worker.
void check_squares_and_shrink_back(fiber::Pool& pool, const std::vector<long>& inputs,
                                   const std::vector<long>& values,
                                   std::chrono::steady_clock::time_point give_up) {
  bool all = values.size() == inputs.size();
  for (size_t i = 0; all && i < values.size(); ++i) all = values[i] == inputs[i] * inputs[i];
  check(all, "every result of the map arrived, exactly once and correct");
  while (pool.worker_pids().size() > 1 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  check(pool.worker_pids().size() == 1, "the pool shrank back to its own worker");
}

}  // namespace

int main(int argc, char** argv) {
  fiber::init(argc, argv);  // the joined ranks serve tasks in here and never return
  if (argc < 3) {
    std::fprintf(stderr, "usage: join_test join|leave|kill <port file>\n");
    return 2;
  }
  const std::string scenario = argv[1];
  const std::string port_file = argv[2];
  fiber::Pool pool(1);
  pool.wait_ready();
  {
    std::ofstream out(port_file + ".tmp");
    out << fiber::listen() << "\n";
  }
  std::filesystem::rename(port_file + ".tmp", port_file);

  const auto opened = std::chrono::steady_clock::now();
  const auto give_up = opened + std::chrono::seconds(90);
  if (scenario == "refused") {
    std::vector<long> inputs(400);
    std::iota(inputs.begin(), inputs.end(), 0L);
    auto squares = pool.map_async(slow_square, inputs, 1);
    while (!std::filesystem::exists(port_file + ".refused") &&
           std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    check(std::filesystem::exists(port_file + ".refused"), "the refused job ended");
    check_squares_and_shrink_back(pool, inputs, squares.get(), give_up);
    check(pool.size() == 1 && pool.worker_pids().size() == 1, "the pool never grew");
    std::printf(failures == 0 ? "join_test refused: OK\n" : "join_test refused: FAILED\n");
    return failures == 0 ? 0 : 1;
  }
  while (pool.worker_pids().size() < 3 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  check(pool.worker_pids().size() == 3, "the two ranks of the joined job became pool workers");
  std::printf(
      "joined workers ready %.3f s after the address was published (includes mpirun "
      "start-up of the joining job)\n",
      std::chrono::duration<double>(std::chrono::steady_clock::now() - opened).count());

  if (scenario == "join") {
    const auto where = pool.map(in_joined_job, std::vector<int>(300), 1);
    const auto joined = std::count(where.begin(), where.end(), true);
    std::printf("%ld of 300 tasks ran in the joined job\n", static_cast<long>(joined));
    check(joined > 0, "the joined job took tasks");
  } else if (scenario == "leave") {
    std::set<int> joined;
    for (const auto& id : pool.map(joined_identity, std::vector<int>(60), 1))
      if (id.first != 0) joined.insert(id.first);
    check(joined.size() == 2, "both joined ranks ran tasks");
    std::vector<long> inputs(3000);
    std::iota(inputs.begin(), inputs.end(), 0L);
    auto squares = pool.map_async(slow_square, inputs, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    // What a stopping pod does to its processes.
    for (int pid : joined) ::kill(pid, SIGTERM);
    std::printf("asked the joined job to leave mid-map\n");
    check_squares_and_shrink_back(pool, inputs, squares.get(), give_up);
    check(pool.size() == 1, "the pool's size went back to 1");
  } else {
    std::set<std::pair<int, int>> identities;
    for (const auto& id : pool.map(joined_identity, std::vector<int>(60), 1))
      if (id.first != 0) identities.insert(id);
    check(identities.size() == 2, "both joined ranks ran tasks");
    std::vector<long> inputs(6000);
    std::iota(inputs.begin(), inputs.end(), 0L);
    auto squares = pool.map_async(slow_square, inputs, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    for (const auto& [pid, launcher] : identities) {
      ::kill(launcher, SIGKILL);
      ::kill(pid, SIGKILL);
    }
    std::printf("killed the joined job mid-map\n");
    check_squares_and_shrink_back(pool, inputs, squares.get(), give_up);
    check(pool.apply(slow_square, 12L) == 144, "the pool goes on");
  }
  std::printf(failures == 0 ? "join_test %s: OK\n" : "join_test %s: FAILED\n", scenario.c_str());
  return failures == 0 ? 0 : 1;
}
