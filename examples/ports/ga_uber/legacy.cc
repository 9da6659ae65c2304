// ga_uber_legacy: the deep-neuroevolution genetic algorithm (Such et al., 2017) on CartPole-v1
// as an SPMD MPI program. Every rank holds the whole population as seed lists (a genome's
// parameters are the network's initial parameters from its first seed plus sigma times the
// noise of each later seed), plays its own share of the population, and MPI_Allgather gives
// every rank every fitness. Selection then runs on every rank alike: truncation to the best
// --parents genomes, the best one kept unchanged (elitism), every other slot a copy of a parent
// drawn at random plus one fresh mutation seed. The random draws come from a generator seeded
// the same on every rank, so all ranks compute the same next generation and never send a
// genome. Each generation the elite plays 10 evaluation episodes, spread over the ranks and
// summed with MPI_Allreduce; the run stops once their average reaches the target.
//
// CartPole-v1 rather than Acrobot-v1: the three RL examples then share a task (their figures
// compare), and CartPole's return separates good policies from bad in one episode.
//
// Measured (RelWithDebInfo, 2 cores, defaults: population 64, 10 parents, sigma 0.1, seed 0):
// the elite's average over 10 evaluation episodes reaches 500.0 at generation 4, in 0.01 s of
// loop time with mpirun -n 2; -n 1, 2 and 4 give the same run to the last digit. Seeds 0-11 need
// 2 to 12 generations (median 3.5): CartPole is an easy task for a GA.
//
// Usage: mpirun -n 2 ga_uber_legacy [--generations N] [--population N] [--parents N] [--seed N]
//            [--target N]
// --generations 2 is the smoke budget CI runs.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include "rl/cartpole.h"
#include "rl/genome.h"
#include "rl/mlp.h"
#include "rl/options.h"
#include "rl/policy.h"

namespace {

constexpr double kSigma = 0.1;
constexpr int kEvaluationEpisodes = 10;

using Genome = std::vector<std::uint64_t>;

// The policy: 4 observations, 16 tanh units, one score per action.
const rl::Mlp& policy() {
  static const rl::Mlp net({rl::CartPole::kObservationSize, 16, rl::CartPole::kActionCount});
  return net;
}

// The fitness of one genome: the return of one CartPole episode started from `seed`.
double evaluate(const Genome& genome, std::uint64_t seed) {
  const std::vector<double> params = rl::decode_genome(policy(), genome, kSigma);
  return rl::greedy_episode_return<rl::CartPole>(policy(), params, seed);
}

struct Settings {
  std::int64_t generations = 100;
  std::int64_t population = 64;
  std::int64_t parents = 10;
  std::int64_t seed = 0;
  std::int64_t target = 475;
};

// Every genome's fitness on every rank: each rank plays a contiguous share, episode i from
// episode_seeds[i].
std::vector<double> evaluate_population(MPI_Comm comm, const std::vector<Genome>& population,
                                        const std::vector<std::uint64_t>& episode_seeds) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const std::size_t share = population.size() / size;
  std::vector<double> mine(share);
  for (std::size_t i = 0; i < share; ++i) {
    const std::size_t index = rank * share + i;
    mine[i] = evaluate(population[index], episode_seeds[index]);
  }
  std::vector<double> fitness(population.size());
  MPI_Allgather(mine.data(), static_cast<int>(share), MPI_DOUBLE, fitness.data(),
                static_cast<int>(share), MPI_DOUBLE, comm);
  return fitness;
}

// The elite's average return over kEvaluationEpisodes episodes, rank r playing episodes r,
// r + size, ...; the same value on every rank.
double evaluate_elite(MPI_Comm comm, const Genome& elite, std::uint64_t first_seed) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  double sum = 0;
  for (int episode = rank; episode < kEvaluationEpisodes; episode += size)
    sum += evaluate(elite, first_seed + episode);
  double total = 0;
  MPI_Allreduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, comm);
  return total / kEvaluationEpisodes;
}

// Truncation selection with one elite; `rng` must be in the same state on every rank.
std::vector<Genome> next_generation(const std::vector<Genome>& population,
                                    const std::vector<std::size_t>& ranking, std::size_t parents,
                                    std::mt19937_64& rng) {
  std::vector<Genome> next;
  next.push_back(population[ranking[0]]);
  std::uniform_int_distribution<std::size_t> pick(0, parents - 1);
  while (next.size() < population.size()) {
    Genome child = population[ranking[pick(rng)]];
    child.push_back(rng());
    next.push_back(std::move(child));
  }
  return next;
}

// The whole run on `comm`; every rank returns the same result.
struct Result {
  double average = 0;
  std::int64_t generations = 0;
};
Result run(MPI_Comm comm, const Settings& settings) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::mt19937_64 rng(static_cast<std::uint64_t>(settings.seed));
  std::vector<Genome> population(settings.population);
  for (Genome& genome : population) genome = {rng()};

  Result result;
  const double start = MPI_Wtime();
  while (result.generations < settings.generations) {
    ++result.generations;
    std::vector<std::uint64_t> episode_seeds(population.size());
    for (std::uint64_t& seed : episode_seeds) seed = rng();
    const std::vector<double> fitness = evaluate_population(comm, population, episode_seeds);
    // Best first; equal fitnesses keep their order, which every rank agrees on.
    std::vector<std::size_t> ranking(population.size());
    std::iota(ranking.begin(), ranking.end(), 0);
    std::stable_sort(ranking.begin(), ranking.end(),
                     [&](std::size_t a, std::size_t b) { return fitness[a] > fitness[b]; });
    result.average = evaluate_elite(comm, population[ranking[0]], rng());
    if (rank == 0) {
      const double parents_average =
          std::accumulate(ranking.begin(), ranking.begin() + settings.parents, 0.0,
                          [&](double sum, std::size_t i) { return sum + fitness[i]; }) /
          settings.parents;
      std::printf("generation %lld: best %.1f, parents' average %.1f, elite's average %.1f\n",
                  static_cast<long long>(result.generations), fitness[ranking[0]], parents_average,
                  result.average);
    }
    if (result.average >= static_cast<double>(settings.target)) break;
    population = next_generation(population, ranking, settings.parents, rng);
  }
  if (rank == 0) std::printf("training took %.2f s\n", MPI_Wtime() - start);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Settings settings;
  const rl::IntOption options[] = {
      {"generations", &settings.generations, 1, 100000, "generations at most"},
      {"population", &settings.population, 2, 100000, "genomes (a multiple of the ranks)"},
      {"parents", &settings.parents, 1, 100000, "best genomes kept as parents"},
      {"seed", &settings.seed, 0, 1000000000, "seed of everything random"},
      {"target", &settings.target, 0, 1000,
       "elite's average evaluation return to stop at; above 500 runs the whole budget"},
  };
  rl::ParseResult parsed = rl::parse_options(argc, argv, options);
  if (parsed.status == rl::ParseResult::Status::kOk && settings.population % size != 0)
    parsed = {rl::ParseResult::Status::kError,
              "--population must be a multiple of the " + std::to_string(size) + " ranks"};
  if (parsed.status == rl::ParseResult::Status::kOk && settings.parents > settings.population)
    parsed = {rl::ParseResult::Status::kError, "--parents must not exceed --population"};
  if (parsed.status != rl::ParseResult::Status::kOk) {
    const int status = rl::reject(parsed, "ga_uber_legacy",
                                  rl::usage("mpirun -n 2 ga_uber_legacy", options), rank == 0);
    MPI_Finalize();
    return status;
  }
  const Result result = run(MPI_COMM_WORLD, settings);
  if (rank == 0)
    std::printf("ga_uber_legacy: final average return %.1f after %lld generations\n",
                result.average, static_cast<long long>(result.generations));
  MPI_Finalize();
  return 0;
}
