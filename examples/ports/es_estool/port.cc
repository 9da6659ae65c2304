// es_estool_port: es_estool_legacy (legacy.cc beside this file) on fibermpi. The master's ES
// loop is the legacy's; its hand-written scatter of solutions to the workers and gather of
// their fitnesses (MPI_Send, MPI_Probe, MPI_Recv and the stop packet) become one
// fiber::Pool::starmap over (solution, episode seed) pairs, and the worker loop goes: the pool's
// workers run evaluate itself. Fitnesses depend on the solution and seed alone, so a seed gives
// the legacy's run with any number of workers.
//
// Usage: es_estool_port [--workers N] [--iterations N] [--population N] [--seed N]
//            [--eval-every N] [--target N]
// The same binary under mpirun -n N+1: ranks 1..N are the pool's workers.
// --iterations 2 is the smoke budget CI runs.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <span>
#include <tuple>
#include <vector>

#include "fiber/fiber.h"
#include "rl/cartpole.h"
#include "rl/mlp.h"
#include "rl/open_es.h"
#include "rl/options.h"
#include "rl/policy.h"

namespace {

constexpr int kEvaluationEpisodes = 10;

// The policy: 4 observations, 16 tanh units, one score per action.
const rl::Mlp& policy() {
  static const rl::Mlp net({rl::CartPole::kObservationSize, 16, rl::CartPole::kActionCount});
  return net;
}

// The fitness of one solution: the return of one CartPole episode started from `seed`.
double evaluate(const std::vector<double>& params, std::uint64_t seed) {
  return rl::greedy_episode_return<rl::CartPole>(policy(), params, seed);
}

struct Settings {
  std::int64_t iterations = 200;
  std::int64_t population = 128;
  std::int64_t seed = 0;
  std::int64_t eval_every = 1;
  std::int64_t target = 475;
};

// Master: the fitness of every row of `solutions`, row i played from seeds[i], on the pool's
// workers.
std::vector<double> evaluate_on_workers(fiber::Pool& pool, std::span<const double> solutions,
                                        std::span<const std::uint64_t> seeds) {
  const std::size_t n = solutions.size() / seeds.size();
  std::vector<std::tuple<std::vector<double>, std::uint64_t>> jobs;
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    const std::span<const double> row = solutions.subspan(i * n, n);
    jobs.emplace_back(std::vector<double>(row.begin(), row.end()), seeds[i]);
  }
  return pool.starmap(evaluate, jobs);
}

// Master: the average return of `mean` over kEvaluationEpisodes fresh episodes.
double evaluate_mean(fiber::Pool& pool, const std::vector<double>& mean, std::mt19937_64& seeder) {
  std::vector<double> copies;
  std::vector<std::uint64_t> seeds;
  for (int e = 0; e < kEvaluationEpisodes; ++e) {
    copies.insert(copies.end(), mean.begin(), mean.end());
    seeds.push_back(seeder());
  }
  const std::vector<double> returns = evaluate_on_workers(pool, copies, seeds);
  return std::accumulate(returns.begin(), returns.end(), 0.0) / kEvaluationEpisodes;
}

// Master: the ES loop, printing the mean's evaluations and the final line.
void master(fiber::Pool& pool, const Settings& settings) {
  const auto seed = static_cast<std::uint64_t>(settings.seed);
  rl::OpenEs es(policy().initial_parameters(seed),
                rl::OpenEsOptions{.population = static_cast<int>(settings.population),
                                  .sigma = 0.2,
                                  .learning_rate = 0.1,
                                  .seed = seed + 1});
  // Episode seeds: both halves of an antithetic pair play the same start state, so that their
  // difference in fitness comes from the perturbation alone.
  std::mt19937_64 seeder(seed + 2);
  std::mt19937_64 evaluation_seeder(seed + 3);
  double average = 0;
  std::int64_t iteration = 0;
  const auto start = std::chrono::steady_clock::now();
  while (iteration < settings.iterations) {
    ++iteration;
    const std::vector<double>& solutions = es.ask();
    std::vector<std::uint64_t> seeds(es.population());
    const std::size_t half = seeds.size() / 2;
    for (std::size_t i = 0; i < half; ++i) seeds[i] = seeds[i + half] = seeder();
    const std::vector<double> fitness = evaluate_on_workers(pool, solutions, seeds);
    es.tell(fitness);
    if (iteration % settings.eval_every != 0 && iteration != settings.iterations) continue;
    average = evaluate_mean(pool, es.mean(), evaluation_seeder);
    std::printf("iteration %lld: population average %.1f, mean's average return %.1f\n",
                static_cast<long long>(iteration),
                std::accumulate(fitness.begin(), fitness.end(), 0.0) / fitness.size(), average);
    if (average >= static_cast<double>(settings.target)) break;
  }
  std::printf("training took %.2f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  std::printf("es_estool_port: final average return %.1f after %lld iterations\n", average,
              static_cast<long long>(iteration));
}

}  // namespace

int main(int argc, char** argv) {
  fiber::init(argc, argv);  // in a worker's process this serves the pool and never returns
  std::int64_t workers = 2;
  Settings settings;
  const rl::IntOption options[] = {
      {"workers", &workers, 1, 1024, "pool processes that play the episodes"},
      {"iterations", &settings.iterations, 1, 100000, "ES iterations at most"},
      {"population", &settings.population, 2, 100000, "solutions per iteration (even)"},
      {"seed", &settings.seed, 0, 1000000000, "seed of everything random"},
      {"eval-every", &settings.eval_every, 1, 100000, "iterations between evaluations"},
      {"target", &settings.target, 0, 1000,
       "average evaluation return to stop at; above 500 runs the whole budget"},
  };
  rl::ParseResult parsed = rl::parse_options(argc, argv, options);
  if (parsed.status == rl::ParseResult::Status::kOk && settings.population % 2 != 0)
    parsed = {rl::ParseResult::Status::kError, "--population must be even (antithetic pairs)"};
  if (parsed.status != rl::ParseResult::Status::kOk)
    return rl::reject(parsed, "es_estool_port", rl::usage("es_estool_port", options), true);
  fiber::Pool pool(static_cast<int>(workers));
  // The training time then leaves the workers' start out, as the legacy's leaves out mpirun's.
  pool.wait_ready();
  master(pool, settings);
  return 0;
}
