// pbt: Population-Based Training (Jaderberg et al., 2017) in the small, on nested pools. A
// population of --members members trains CartPole-v1 policies (4-16-2 MLPs) with OpenAI-ES,
// each with hyper-parameters of its own (the ES learning rate and noise sigma), in rounds:
//
//   controller (main)            fiber::Pool of members: one task per member and round
//     apply_async(train_round) ──>  train_round: reads its member from the population,
//                                     fiber::Pool of --rollout-workers (nested), --iterations
//                                     ES steps, every ES population scored there
//     fiber::Dict<int, Member> <──>   the population, kept by a fiber::Manager: each member's
//                                     score, parameters and hyper-parameters, written back
//     rank the population; the bottom quarter copies the parameters of a top-quarter member
//     (exploit) and takes its hyper-parameters times 0.8 or 1.2 each (explore); next round.
//
// A round starts from the parameters in hand, with a fresh optimiser: what a member carries
// from round to round is its parameters and hyper-parameters, as in the paper. Every random draw
// comes from the seed (a member's noise and episodes from seed, member and round; the
// controller's choices from the seed), and each member is kept under its id whatever order
// they arrive in, so a seed gives the same run with any number of rollout workers and under any
// launcher.
//
// Usage: pbt [--members N] [--rollout-workers N] [--rounds N] [--iterations N]
//            [--population N] [--seed N] [--target N]
// The same binary under mpirun -n N: ranks 1..N-1 take the member and rollout processes first.
// --members 2 --rollout-workers 2 --rounds 2 is the smoke budget CI runs.
//
// Measured with the defaults (4 members x 2 rollout workers, 5 ES iterations of 32 episodes
// per round; 2 cores shared with other builds, RelWithDebInfo, Open MPI 5.0.11): seeds 0 to 4
// reach a best average return of 500.0 (>= 475) after 3, 3, 5, 4 and 5 rounds. As ./pbt a run
// takes 4.5-7.2 s: about 3 s to start the runtime and the 4 member processes, 1.5-3 s for the
// first round, which spawns the 8 rollout workers, and 0.03-0.15 s for each later round, whose
// rollout pools get those workers back from the warm reserve. Under mpirun -n 13 (1 + 4 + 8:
// every process a rank of the static world) a run takes 1.8-3.2 s, all its rounds 0.07-0.28 s.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fiber/fiber.h"
#include "rl/cartpole.h"
#include "rl/mlp.h"
#include "rl/open_es.h"
#include "rl/options.h"
#include "rl/policy.h"

namespace {

constexpr int kEvaluationEpisodes = 10;

// The independent random streams a seed is split into.
enum class Stream : std::uint32_t { kInitial, kNoise, kEpisodes, kEvaluation, kController };

// A seed of its own for `stream` of `member` in `round`.
std::uint64_t derive_seed(std::int64_t seed, Stream stream, std::int64_t member,
                          std::int64_t round) {
  std::seed_seq sequence{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
                         static_cast<std::uint32_t>(stream), static_cast<std::uint32_t>(member),
                         static_cast<std::uint32_t>(round)};
  std::mt19937_64 generator(sequence);
  return generator();
}

// The policy: 4 observations, 16 tanh units, one score per action.
const rl::Mlp& policy() {
  static const rl::Mlp net({rl::CartPole::kObservationSize, 16, rl::CartPole::kActionCount});
  return net;
}

// A rollout: the return of one CartPole episode under `params`, started from `seed`.
double episode_return(const std::vector<double>& params, std::uint64_t seed) {
  return rl::greedy_episode_return<rl::CartPole>(policy(), params, seed);
}

// What PBT explores.
struct Hyper {
  double learning_rate = 0;
  double sigma = 0;
};

// A member as the controller knows it; after a round, the member's report.
struct Member {
  int member = 0;
  double score = 0;  // average return of the ES mean over the round's evaluation episodes
  std::vector<double> params;
  Hyper hyper;

  template <class Archive>
  void serialize(Archive& archive, unsigned /*version*/) {
    archive& member& score& params& hyper.learning_rate& hyper.sigma;
  }
};

// The run's options; every member's round has the same shape.
struct Settings {
  std::int64_t members = 4;
  std::int64_t rollout_workers = 2;
  std::int64_t rounds = 30;
  std::int64_t iterations = 5;
  std::int64_t population = 32;
  std::int64_t seed = 0;
  std::int64_t target = 475;
};

// The return of each row of `rows` (row-major, one parameter vector per seed), row i played
// from seeds[i], on `rollouts`.
std::vector<double> play(fiber::Pool& rollouts, const std::vector<double>& rows,
                         const std::vector<std::uint64_t>& seeds) {
  const std::size_t n = rows.size() / seeds.size();
  std::vector<std::tuple<std::vector<double>, std::uint64_t>> jobs;
  for (std::size_t i = 0; i < seeds.size(); ++i)
    jobs.emplace_back(std::vector<double>(rows.begin() + i * n, rows.begin() + (i + 1) * n),
                      seeds[i]);
  return rollouts.starmap(episode_return, jobs);
}

// A task of the members' pool: one round of `member`'s training from the parameters and
// hyper-parameters the population holds for it, its ES populations played on a rollout pool of
// its own (nested in this pool worker), then its score and new parameters written back.
void train_round(int member, Settings settings, std::int64_t round,
                 fiber::Dict<int, Member> population) {
  const std::optional<Member> start = population.get(member);
  if (!start)
    throw std::runtime_error("member " + std::to_string(member) + " is not in the population");
  const Hyper hyper = start->hyper;
  std::vector<double> params = start->params;
  fiber::Pool rollouts(static_cast<int>(settings.rollout_workers));
  rl::OpenEs es(
      std::move(params),
      rl::OpenEsOptions{.population = static_cast<int>(settings.population),
                        .sigma = hyper.sigma,
                        .sigma_decay = 1.0,  // sigma is the member's to explore
                        .learning_rate = hyper.learning_rate,
                        .seed = derive_seed(settings.seed, Stream::kNoise, member, round)});
  std::mt19937_64 episodes(derive_seed(settings.seed, Stream::kEpisodes, member, round));
  for (std::int64_t i = 0; i < settings.iterations; ++i) {
    const std::vector<double>& solutions = es.ask();
    // Both halves of an antithetic pair play the same start, so their difference comes from
    // the perturbation alone.
    std::vector<std::uint64_t> seeds(static_cast<std::size_t>(es.population()));
    const std::size_t half = seeds.size() / 2;
    for (std::size_t p = 0; p < half; ++p) seeds[p] = seeds[p + half] = episodes();
    es.tell(play(rollouts, solutions, seeds));
  }
  // Every member plays the round's same evaluation starts: the ranking compares policies, not
  // their luck with start states.
  std::mt19937_64 evaluation(derive_seed(settings.seed, Stream::kEvaluation, 0, round));
  std::vector<std::uint64_t> seeds(kEvaluationEpisodes);
  std::vector<double> copies;
  for (std::uint64_t& seed : seeds) {
    seed = evaluation();
    copies.insert(copies.end(), es.mean().begin(), es.mean().end());
  }
  const std::vector<double> returns = play(rollouts, copies, seeds);
  population.set(member, Member{.member = member,
                                .score = std::accumulate(returns.begin(), returns.end(), 0.0) /
                                         kEvaluationEpisodes,
                                .params = es.mean(),
                                .hyper = hyper});
}

// Members ordered best first (the lower id on a tie).
std::vector<int> ranking(const std::vector<Member>& members) {
  std::vector<int> order(members.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return members[a].score > members[b].score; });
  return order;
}

// The controller's step between rounds: each member of the bottom quarter (one at least, from
// two members up) copies the parameters of a top-quarter member drawn at random (exploit) and
// takes its hyper-parameters, each multiplied by 0.8 or 1.2 (explore).
void exploit_and_explore(std::vector<Member>& members, std::mt19937_64& rng) {
  if (members.size() < 2) return;
  const std::vector<int> order = ranking(members);
  const std::size_t quarter = std::max<std::size_t>(1, members.size() / 4);
  std::uniform_int_distribution<std::size_t> top(0, quarter - 1);
  std::bernoulli_distribution up(0.5);
  for (std::size_t i = members.size() - quarter; i < members.size(); ++i) {
    Member& loser = members[order[i]];
    const Member& winner = members[order[top(rng)]];
    loser.params = winner.params;
    loser.hyper = {.learning_rate = winner.hyper.learning_rate * (up(rng) ? 1.2 : 0.8),
                   .sigma = winner.hyper.sigma * (up(rng) ? 1.2 : 0.8)};
    std::printf("  member %d exploits member %d: learning rate %.4f, sigma %.4f\n", loser.member,
                winner.member, loser.hyper.learning_rate, loser.hyper.sigma);
  }
}

// The first round's members: initial parameters of their own, hyper-parameters drawn
// log-uniformly (learning rate in [0.003, 0.3), sigma in [0.02, 0.5)).
std::vector<Member> initial_members(const Settings& settings, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<Member> members(static_cast<std::size_t>(settings.members));
  for (std::size_t m = 0; m < members.size(); ++m) {
    members[m].member = static_cast<int>(m);
    members[m].params =
        policy().initial_parameters(derive_seed(settings.seed, Stream::kInitial, m, 0));
    members[m].hyper = {.learning_rate = 0.003 * std::pow(100.0, unit(rng)),
                        .sigma = 0.02 * std::pow(25.0, unit(rng))};
  }
  return members;
}

// The controller: rounds on `pool` until a member's score reaches the target or the budget
// ends; prints each round and the final line.
void train(fiber::Pool& pool, fiber::Manager& manager, const Settings& settings) {
  std::mt19937_64 rng(derive_seed(settings.seed, Stream::kController, 0, 0));
  fiber::Dict<int, Member> population = manager.dict<int, Member>();
  std::vector<Member> members = initial_members(settings, rng);
  for (const Member& m : members) population.set(m.member, m);
  std::int64_t round = 0;
  int best = 0;
  const auto start = std::chrono::steady_clock::now();
  while (round < settings.rounds) {
    ++round;
    std::vector<fiber::AsyncResult<void>> running;
    for (const Member& m : members)
      running.push_back(pool.apply_async(train_round, m.member, settings, round, population));
    // Every task has written its member back once it is done; get() rethrows a member's failure.
    for (const fiber::AsyncResult<void>& task : running) task.get();
    for (auto& [id, member] : population.items())
      members[static_cast<std::size_t>(id)] = std::move(member);
    best = ranking(members).front();
    std::printf("round %lld: scores", static_cast<long long>(round));
    for (const Member& m : members) std::printf(" %.1f", m.score);
    std::printf("; best member %d (learning rate %.4f, sigma %.4f)\n", best,
                members[best].hyper.learning_rate, members[best].hyper.sigma);
    std::fflush(stdout);  // a round's line as it ends, also into a pipe or a log
    if (members[best].score >= static_cast<double>(settings.target)) break;
    if (round < settings.rounds) {
      exploit_and_explore(members, rng);
      for (const Member& m : members) population.set(m.member, m);
    }
  }
  std::printf("training took %.2f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  std::printf("pbt: best member %d average return %.1f after %lld rounds\n", best,
              members[best].score, static_cast<long long>(round));
}

}  // namespace

int main(int argc, char** argv) {
  // In a member's or a rollout worker's process this serves the pool and never returns.
  fiber::init(argc, argv);
  Settings settings;
  const rl::IntOption options[] = {
      {"members", &settings.members, 1, 256, "population members, one pool process each"},
      {"rollout-workers", &settings.rollout_workers, 1, 256, "rollout processes per member"},
      {"rounds", &settings.rounds, 1, 100000, "PBT rounds at most"},
      {"iterations", &settings.iterations, 1, 100000, "ES iterations per member and round"},
      {"population", &settings.population, 2, 100000, "ES solutions per iteration (even)"},
      {"seed", &settings.seed, 0, 1000000000, "seed of everything random"},
      {"target", &settings.target, 0, 1000,
       "best member's average return to stop at; above 500 runs the whole budget"},
  };
  rl::ParseResult parsed = rl::parse_options(argc, argv, options);
  if (parsed.status == rl::ParseResult::Status::kOk && settings.population % 2 != 0)
    parsed = {rl::ParseResult::Status::kError, "--population must be even (antithetic pairs)"};
  if (parsed.status != rl::ParseResult::Status::kOk)
    return rl::reject(parsed, "pbt", rl::usage("pbt", options), true);
  fiber::Pool pool(static_cast<int>(settings.members));
  // One task per idle member process each round, and the training time leaves their start out.
  pool.wait_ready();
  fiber::Manager manager;
  train(pool, manager, settings);
  return 0;
}
