// es_estool_legacy: OpenAI-ES on CartPole-v1 over plain MPI, laid out like estool's train.py.
// Rank 0 is the master: it holds the optimiser (antithetic sampling, centered ranks, Adam), cuts
// each population into one packet per worker and sends it with MPI_Send; ranks 1..N-1 are workers
// that receive a packet (the solutions and an episode seed for each), run one episode per
// solution and send the fitnesses back. After every --eval-every iterations (default 1) the
// master has the workers play the current mean for 10 episodes, and stops once their average
// reaches the target (475, CartPole-v1's reward threshold).
//
// Measured (RelWithDebInfo, mpirun -n 3 on 2 cores, defaults: population 128, sigma 0.2,
// learning rate 0.1, seed 0): the mean's average over 10 evaluation episodes first passes 475 at
// iteration 20 (500.0); the training loop takes 0.1-0.2 s of wall time, the whole mpirun 1.3 s.
// Seeds 0-15 need 4 to 34 iterations (median 17.5).
//
// Usage: mpirun -n 3 es_estool_legacy [--iterations N] [--population N] [--seed N]
//            [--eval-every N] [--target N]
// --iterations 2 is the smoke budget CI runs.
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include "rl/cartpole.h"
#include "rl/mlp.h"
#include "rl/open_es.h"
#include "rl/options.h"
#include "rl/policy.h"

namespace {

constexpr int kTagJobs = 1;
constexpr int kTagSolutions = 2;
constexpr int kTagFitness = 3;
constexpr int kEvaluationEpisodes = 10;

// The policy: 4 observations, 16 tanh units, one score per action.
const rl::Mlp& policy() {
  static const rl::Mlp net({rl::CartPole::kObservationSize, 16, rl::CartPole::kActionCount});
  return net;
}

// The fitness of one solution: the return of one CartPole episode started from `seed`.
double evaluate(std::span<const double> params, std::uint64_t seed) {
  return rl::greedy_episode_return<rl::CartPole>(policy(), params, seed);
}

struct Settings {
  std::int64_t iterations = 200;
  std::int64_t population = 128;
  std::int64_t seed = 0;
  std::int64_t eval_every = 1;
  std::int64_t target = 475;
};

// Worker: receives packets until an empty one, answers each with one fitness per solution.
// A packet is a job message (the episode seeds) followed by a solutions message (row-major).
void worker(MPI_Comm comm) {
  const std::size_t n = policy().parameter_count();
  while (true) {
    MPI_Status status;
    MPI_Probe(0, kTagJobs, comm, &status);
    int count = 0;
    MPI_Get_count(&status, MPI_UINT64_T, &count);
    std::vector<std::uint64_t> seeds(count);
    MPI_Recv(seeds.data(), count, MPI_UINT64_T, 0, kTagJobs, comm, MPI_STATUS_IGNORE);
    if (count == 0) return;
    std::vector<double> solutions(count * n);
    MPI_Recv(solutions.data(), static_cast<int>(solutions.size()), MPI_DOUBLE, 0, kTagSolutions,
             comm, MPI_STATUS_IGNORE);
    std::vector<double> fitness(count);
    for (int i = 0; i < count; ++i)
      fitness[i] = evaluate(std::span<const double>(solutions).subspan(i * n, n), seeds[i]);
    MPI_Send(fitness.data(), count, MPI_DOUBLE, 0, kTagFitness, comm);
  }
}

// Master: the fitness of every row of `solutions`, row i played from seeds[i]. The rows are cut
// into contiguous blocks, one per worker; the first workers take one more when they do not
// divide evenly, and a worker left without rows gets no packet (an empty one would stop it).
std::vector<double> evaluate_on_workers(MPI_Comm comm, std::span<const double> solutions,
                                        std::span<const std::uint64_t> seeds) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  const int workers = size - 1;
  const int jobs = static_cast<int>(seeds.size());
  const std::size_t n = solutions.size() / seeds.size();
  std::vector<int> first(workers + 1, 0);
  for (int w = 0; w < workers; ++w) first[w + 1] = first[w] + jobs / workers + (w < jobs % workers);
  for (int w = 0; w < workers; ++w) {
    const int count = first[w + 1] - first[w];
    if (count == 0) continue;
    MPI_Send(seeds.data() + first[w], count, MPI_UINT64_T, w + 1, kTagJobs, comm);
    MPI_Send(solutions.data() + first[w] * n, static_cast<int>(count * n), MPI_DOUBLE, w + 1,
             kTagSolutions, comm);
  }
  std::vector<double> fitness(jobs);
  for (int w = 0; w < workers; ++w) {
    const int count = first[w + 1] - first[w];
    if (count == 0) continue;
    MPI_Recv(fitness.data() + first[w], count, MPI_DOUBLE, w + 1, kTagFitness, comm,
             MPI_STATUS_IGNORE);
  }
  return fitness;
}

// Master: an empty packet tells every worker to return.
void stop_workers(MPI_Comm comm) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  for (int w = 1; w < size; ++w) MPI_Send(nullptr, 0, MPI_UINT64_T, w, kTagJobs, comm);
}

// Master: the average return of `mean` over kEvaluationEpisodes fresh episodes.
double evaluate_mean(MPI_Comm comm, const std::vector<double>& mean, std::mt19937_64& seeder) {
  std::vector<double> copies;
  std::vector<std::uint64_t> seeds;
  for (int e = 0; e < kEvaluationEpisodes; ++e) {
    copies.insert(copies.end(), mean.begin(), mean.end());
    seeds.push_back(seeder());
  }
  const std::vector<double> returns = evaluate_on_workers(comm, copies, seeds);
  return std::accumulate(returns.begin(), returns.end(), 0.0) / kEvaluationEpisodes;
}

// Master: the ES loop, printing the mean's evaluations and the final line.
void master(MPI_Comm comm, const Settings& settings) {
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
  const double start = MPI_Wtime();
  while (iteration < settings.iterations) {
    ++iteration;
    const std::vector<double>& solutions = es.ask();
    std::vector<std::uint64_t> seeds(es.population());
    const std::size_t half = seeds.size() / 2;
    for (std::size_t i = 0; i < half; ++i) seeds[i] = seeds[i + half] = seeder();
    const std::vector<double> fitness = evaluate_on_workers(comm, solutions, seeds);
    es.tell(fitness);
    if (iteration % settings.eval_every != 0 && iteration != settings.iterations) continue;
    average = evaluate_mean(comm, es.mean(), evaluation_seeder);
    std::printf("iteration %lld: population average %.1f, mean's average return %.1f\n",
                static_cast<long long>(iteration),
                std::accumulate(fitness.begin(), fitness.end(), 0.0) / fitness.size(), average);
    if (average >= static_cast<double>(settings.target)) break;
  }
  stop_workers(comm);
  std::printf("training took %.2f s\n", MPI_Wtime() - start);
  std::printf("es_estool_legacy: final average return %.1f after %lld iterations\n", average,
              static_cast<long long>(iteration));
}

// The whole run on `comm`: rank 0 the master, the others workers.
void run(MPI_Comm comm, const Settings& settings) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0) {
    master(comm, settings);
  } else {
    worker(comm);
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Settings settings;
  const rl::IntOption options[] = {
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
  if (parsed.status == rl::ParseResult::Status::kOk && size < 2)
    parsed = {rl::ParseResult::Status::kError, "needs 2 or more ranks: a master and workers"};
  if (parsed.status != rl::ParseResult::Status::kOk) {
    const int status = rl::reject(parsed, "es_estool_legacy",
                                  rl::usage("mpirun -n 3 es_estool_legacy", options), rank == 0);
    MPI_Finalize();
    return status;
  }
  run(MPI_COMM_WORLD, settings);
  MPI_Finalize();
  return 0;
}
