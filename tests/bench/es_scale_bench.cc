// The seed's experiment at the size this machine allows: OpenAI-ES on CartPole-v1 with the port
// path's policy and fitness (examples/ports/es_estool: one episode per member, a 4-16-2 tanh
// network), a population of P for I iterations, once per worker count given. For each: the
// median time per iteration, the master's CPU per iteration (getrusage: the ES update, encoding
// and dispatching the members, decoding their fitnesses), and the time per iteration projected
// to more workers from these two: the workers' share shrinks as 1/N, the master's does not.
// Prints one JSON row per worker count, then one with the projection.
// Usage: es_scale_bench <population> <iterations> <workers>...   (e.g. 2048 50 1 2 4 8 16)
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "bench_support.h"
#include "fiber/fiber.h"
#include "rl/cartpole.h"
#include "rl/mlp.h"
#include "rl/open_es.h"
#include "rl/policy.h"

namespace {

using Clock = std::chrono::steady_clock;

const rl::Mlp& policy() {
  static const rl::Mlp net({rl::CartPole::kObservationSize, 16, rl::CartPole::kActionCount});
  return net;
}

double evaluate(const std::vector<double>& params, std::uint64_t seed) {
  return rl::greedy_episode_return<rl::CartPole>(policy(), params, seed);
}

struct Measured {
  int workers = 0;
  double seconds_per_iteration = 0;
  double master_cpu_per_iteration = 0;
  double final_average = 0;
};

Measured run_es(int workers, int population, int iterations) {
  fiber::Pool pool(workers);
  pool.wait_ready();
  rl::OpenEs es(
      policy().initial_parameters(1),
      rl::OpenEsOptions{.population = population, .sigma = 0.2, .learning_rate = 0.1, .seed = 2});
  std::mt19937_64 seeder(3);
  std::vector<double> per_iteration;
  std::vector<double> cpu_per_iteration;
  double average = 0;
  // One iteration more than measured: the first warms the workers up.
  for (int iteration = 0; iteration <= iterations; ++iteration) {
    const auto start = Clock::now();
    const double cpu_before = fiber::bench::own_cpu_seconds();
    const std::vector<double>& solutions = es.ask();
    const std::size_t n = solutions.size() / static_cast<std::size_t>(population);
    std::vector<std::tuple<std::vector<double>, std::uint64_t>> members;
    members.reserve(static_cast<std::size_t>(population));
    const int half = population / 2;
    std::vector<std::uint64_t> seeds(static_cast<std::size_t>(population));
    for (int i = 0; i < half; ++i) seeds[i] = seeds[i + half] = seeder();
    for (int i = 0; i < population; ++i) {
      const auto row = std::span<const double>(solutions).subspan(i * n, n);
      members.emplace_back(std::vector<double>(row.begin(), row.end()), seeds[i]);
    }
    const std::vector<double> fitness = pool.starmap(evaluate, members);
    es.tell(fitness);
    average = 0;
    for (double f : fitness) average += f / population;
    if (iteration == 0) continue;
    per_iteration.push_back(fiber::bench::seconds(Clock::now() - start));
    cpu_per_iteration.push_back(fiber::bench::own_cpu_seconds() - cpu_before);
  }
  return {workers, fiber::bench::median(per_iteration), fiber::bench::median(cpu_per_iteration),
          average};
}

int run(int argc, char** argv) {
  fiber::init(argc, argv);  // in a worker's process this serves the pool and never returns
  if (argc < 4) {
    std::fprintf(stderr, "usage: es_scale_bench <population> <iterations> <workers>...\n");
    return 2;
  }
  const int population = std::atoi(argv[1]);
  const int iterations = std::atoi(argv[2]);
  if (population < 2 || population % 2 != 0 || iterations < 1)
    throw fiber::UsageError(
        "es_scale_bench: an even population of at least 2 and at least one "
        "iteration, got " +
        std::string(argv[1]) + " and " + argv[2]);
  std::vector<Measured> measured;
  for (int i = 3; i < argc; ++i) {
    const int workers = std::atoi(argv[i]);
    if (workers < 1) throw fiber::UsageError("es_scale_bench: worker counts are positive");
    measured.push_back(run_es(workers, population, iterations));
    const Measured& m = measured.back();
    std::printf(
        "{\"bench\":\"es_scale\",\"impl\":\"fibermpi\",\"population\":%d,\"iterations\":%d,"
        "\"workers\":%d,\"seconds_per_iteration\":%.4f,\"master_cpu_s_per_iteration\":%.4f,"
        "\"population_average\":%.1f}\n",
        population, iterations, m.workers, m.seconds_per_iteration, m.master_cpu_per_iteration,
        m.final_average);
    std::fflush(stdout);
  }
  // The projection: the work the workers do in an iteration (the smallest pool's time less the
  // master's own, times its workers) spreads over N workers; the master's CPU per iteration
  // stays. Past population workers, each member has a worker of its own.
  const Measured& base =
      *std::min_element(measured.begin(), measured.end(),
                        [](const Measured& a, const Measured& b) { return a.workers < b.workers; });
  double master = 0;
  for (const Measured& m : measured) master = std::max(master, m.master_cpu_per_iteration);
  const double work = std::max(0.0, base.seconds_per_iteration - master) * base.workers;
  std::string curve;
  for (int workers = 1; workers <= 2048; workers *= 2) {
    const double seconds = master + work / std::min(workers, population);
    curve += (curve.empty() ? "" : ",") + std::string("\"") + std::to_string(workers) +
             "\":" + std::to_string(seconds);
  }
  std::printf(
      "{\"bench\":\"es_scale_projection\",\"impl\":\"fibermpi\",\"population\":%d,"
      "\"worker_work_s_per_iteration\":%.4f,\"master_s_per_iteration\":%.4f,"
      "\"speedup_limit\":%.0f,\"projected_seconds_per_iteration\":{%s}}\n",
      population, work, master, master > 0 ? (work + master) / master : 0.0, curve.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return fiber::bench::run_reporting_failures("es_scale", run, argc, argv);
}
