// ga_uber_port: ga_uber_legacy (legacy.cc beside this file) on fibermpi. The SPMD body, run(),
// is the legacy's unchanged: it runs in a fiber::Group of --members processes, on
// fiber::group_comm() where the legacy used MPI_COMM_WORLD, and member 0 hands the result to
// the master through a fiber::SimpleQueue. Every member computes the same selection from the
// one seed, so a seed gives the legacy's run, generation for generation.
//
// Usage: ga_uber_port [--members N] [--generations N] [--population N] [--parents N]
//            [--seed N] [--target N]
// The same binary under mpirun -n N+1: ranks 1..N are the members.
// --generations 2 is the smoke budget CI runs.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/mpi.h"
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

// One member of the group: the run on the group's communicator; member 0 reports its result.
void member(Settings settings, fiber::SimpleQueue<Result> results) {
  const Result result = run(fiber::group_comm(), settings);
  if (fiber::group_rank() == 0) results.put(result);
}

}  // namespace

int main(int argc, char** argv) {
  fiber::init(argc, argv);  // in a member's process this runs the member and never returns
  std::int64_t members = 2;
  Settings settings;
  const rl::IntOption options[] = {
      {"members", &members, 1, 1024, "processes of the group, the legacy's ranks"},
      {"generations", &settings.generations, 1, 100000, "generations at most"},
      {"population", &settings.population, 2, 100000, "genomes (a multiple of the members)"},
      {"parents", &settings.parents, 1, 100000, "best genomes kept as parents"},
      {"seed", &settings.seed, 0, 1000000000, "seed of everything random"},
      {"target", &settings.target, 0, 1000,
       "elite's average evaluation return to stop at; above 500 runs the whole budget"},
  };
  rl::ParseResult parsed = rl::parse_options(argc, argv, options);
  if (parsed.status == rl::ParseResult::Status::kOk && settings.population % members != 0)
    parsed = {rl::ParseResult::Status::kError,
              "--population must be a multiple of the " + std::to_string(members) + " members"};
  if (parsed.status == rl::ParseResult::Status::kOk && settings.parents > settings.population)
    parsed = {rl::ParseResult::Status::kError, "--parents must not exceed --population"};
  if (parsed.status != rl::ParseResult::Status::kOk)
    return rl::reject(parsed, "ga_uber_port", rl::usage("ga_uber_port", options), true);
  fiber::SimpleQueue<Result> results;
  fiber::Group group(fiber::Group::Options{.size = static_cast<int>(members)}, member, settings,
                     results);
  group.start();
  group.join();
  int failed = 0;
  for (const std::optional<int>& code : group.exitcodes()) failed += code != 0;
  if (failed > 0) {
    std::fprintf(stderr, "ga_uber_port: %d of %lld members failed\n", failed,
                 static_cast<long long>(members));
    return 1;
  }
  const Result result = results.get();
  std::printf("ga_uber_port: final average return %.1f after %lld generations\n", result.average,
              static_cast<long long>(result.generations));
  return 0;
}
