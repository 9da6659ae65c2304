// ppo_spinningup_port: ppo_spinningup_legacy (legacy.cc beside this file) on fibermpi. The SPMD
// body, run(), is the legacy's unchanged, sync_params and mpi_avg_grads included: it runs in a
// fiber::Group of --members processes, on fiber::group_comm() where the legacy used
// MPI_COMM_WORLD, and member 0 hands the result to the master through a fiber::SimpleQueue.
// A seed and a member count give the legacy's run with as many ranks, epoch for epoch.
//
// Usage: ppo_spinningup_port [--members N] [--epochs N] [--steps N] [--seed N] [--target N]
// The same binary under mpirun -n N+1: ranks 1..N are the members.
// --epochs 2 --steps 1000 is the smoke budget CI runs.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/mpi.h"
#include "rl/adam.h"
#include "rl/cartpole.h"
#include "rl/categorical.h"
#include "rl/mlp.h"
#include "rl/options.h"
#include "rl/returns.h"

namespace {

constexpr double kGamma = 0.99;
constexpr double kLambda = 0.97;
constexpr double kClipRatio = 0.2;
constexpr double kPolicyLearningRate = 3e-4;
constexpr double kValueLearningRate = 1e-3;
constexpr int kPolicyIterations = 80;
constexpr int kValueIterations = 80;
constexpr double kTargetKl = 0.01;
constexpr int kObservationSize = rl::CartPole::kObservationSize;

struct Settings {
  std::int64_t epochs = 100;
  std::int64_t steps = 4000;  // an epoch's steps over all ranks
  std::int64_t seed = 0;
  std::int64_t target = 400;
};

// Replaces `params` on every rank by rank 0's.
void sync_params(MPI_Comm comm, std::vector<double>& params) {
  MPI_Bcast(params.data(), static_cast<int>(params.size()), MPI_DOUBLE, 0, comm);
}

// Replaces `gradient` on every rank by its average over the ranks.
void mpi_avg_grads(MPI_Comm comm, std::vector<double>& gradient) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  MPI_Allreduce(MPI_IN_PLACE, gradient.data(), static_cast<int>(gradient.size()), MPI_DOUBLE,
                MPI_SUM, comm);
  for (double& g : gradient) g /= size;
}

// The sums of `values` over the ranks.
template <std::size_t N>
std::array<double, N> mpi_sum(MPI_Comm comm, std::array<double, N> values) {
  MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(N), MPI_DOUBLE, MPI_SUM, comm);
  return values;
}

// The average of `value` over the ranks.
double mpi_avg(MPI_Comm comm, double value) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  return mpi_sum<1>(comm, {value})[0] / size;
}

// The actor (logits of the two actions) and the critic (the state's value).
struct ActorCritic {
  rl::Mlp pi{{kObservationSize, 64, 64, rl::CartPole::kActionCount}};
  rl::Mlp v{{kObservationSize, 64, 64, 1}};
  std::vector<double> pi_params;
  std::vector<double> v_params;
};

// One epoch of one rank's experience, with GAE-lambda advantages and rewards-to-go computed as
// each episode (or the epoch) ends.
class PpoBuffer {
 public:
  // A buffer for `size` steps.
  explicit PpoBuffer(std::size_t size) : capacity_(size) {}

  // Records one step: what was seen, done and earned, V(observation) and log pi(action).
  void store(std::span<const double> observation, int action, double reward, double value,
             double log_prob) {
    observations_.insert(observations_.end(), observation.begin(), observation.end());
    actions_.push_back(action);
    rewards_.push_back(reward);
    values_.push_back(value);
    log_probs_.push_back(log_prob);
  }

  // Ends the current path; `last_value` is 0 after a termination, V(s) of the state reached
  // when the time limit or the epoch cut the path short.
  void finish_path(double last_value) {
    const std::size_t begin = path_start_, end = rewards_.size();
    std::vector<double> deltas(end - begin), rewards(end - begin + 1);
    for (std::size_t t = begin; t < end; ++t) {
      const double next_value = t + 1 < end ? values_[t + 1] : last_value;
      deltas[t - begin] = rewards_[t] + kGamma * next_value - values_[t];
      rewards[t - begin] = rewards_[t];
    }
    rewards.back() = last_value;
    const std::vector<double> advantages = rl::discounted_cumsum(deltas, kGamma * kLambda);
    const std::vector<double> returns = rl::discounted_cumsum(rewards, kGamma);
    advantages_.insert(advantages_.end(), advantages.begin(), advantages.end());
    returns_.insert(returns_.end(), returns.begin(), returns.end() - 1);
    path_start_ = end;
  }

  // True once the epoch's steps are all in.
  bool full() const { return rewards_.size() == capacity_; }

  // Normalises the advantages with their mean and deviation over all ranks' buffers.
  void normalize_advantages(MPI_Comm comm) {
    double sum = 0;
    for (double a : advantages_) sum += a;
    const auto [total, count] = mpi_sum<2>(comm, {sum, static_cast<double>(advantages_.size())});
    const double mean = total / count;
    double square_sum = 0;
    for (double a : advantages_) square_sum += (a - mean) * (a - mean);
    const double deviation = std::sqrt(mpi_sum<1>(comm, {square_sum})[0] / count);
    for (double& a : advantages_) a = (a - mean) / deviation;
  }

  // Steps stored.
  std::size_t size() const { return actions_.size(); }
  // The observations, row-major, kObservationSize values a step.
  const std::vector<double>& observations() const { return observations_; }
  // The actions taken.
  const std::vector<int>& actions() const { return actions_; }
  // log pi(action | observation) under the policy that acted.
  const std::vector<double>& log_probs() const { return log_probs_; }
  // The GAE-lambda advantages (normalised once normalize_advantages ran).
  const std::vector<double>& advantages() const { return advantages_; }
  // The discounted rewards-to-go, the value function's targets.
  const std::vector<double>& returns() const { return returns_; }

 private:
  std::size_t capacity_;
  std::size_t path_start_ = 0;
  std::vector<double> observations_;
  std::vector<int> actions_;
  std::vector<double> rewards_, values_, log_probs_, advantages_, returns_;
};

// The clipped surrogate loss of the local batch, its gradient and what the log shows.
struct PolicyLoss {
  double loss = 0, kl = 0, entropy = 0, clip_fraction = 0;
  std::vector<double> gradient;
};
PolicyLoss compute_loss_pi(const ActorCritic& ac, const PpoBuffer& data) {
  const rl::MlpActivations forward = ac.pi.forward_batch(ac.pi_params, data.observations());
  const std::size_t n = data.size();
  const std::size_t k = rl::CartPole::kActionCount;
  std::vector<double> output_gradient(n * k, 0.0);
  PolicyLoss result;
  for (std::size_t i = 0; i < n; ++i) {
    const std::span<const double> logits = forward.outputs().subspan(i * k, k);
    const double log_prob = rl::log_softmax(logits)[data.actions()[i]];
    const double ratio = std::exp(log_prob - data.log_probs()[i]);
    const double advantage = data.advantages()[i];
    const double clipped = std::clamp(ratio, 1 - kClipRatio, 1 + kClipRatio) * advantage;
    result.loss -= std::min(ratio * advantage, clipped) / n;
    result.kl += (data.log_probs()[i] - log_prob) / n;
    result.entropy += rl::categorical_entropy(logits) / n;
    result.clip_fraction += (ratio > 1 + kClipRatio || ratio < 1 - kClipRatio) ? 1.0 / n : 0.0;
    // Where the clipped term is the smaller one, the loss does not depend on the parameters.
    if (ratio * advantage <= clipped) {
      rl::add_log_prob_gradient(logits, data.actions()[i], -ratio * advantage / n,
                                std::span<double>(output_gradient).subspan(i * k, k));
    }
  }
  result.gradient = ac.pi.backward(ac.pi_params, forward, output_gradient);
  return result;
}

// The gradient of the mean squared error of the values against the rewards-to-go.
std::vector<double> compute_loss_v_gradient(const ActorCritic& ac, const PpoBuffer& data) {
  const rl::MlpActivations forward = ac.v.forward_batch(ac.v_params, data.observations());
  const std::size_t n = data.size();
  std::vector<double> output_gradient(n);
  for (std::size_t i = 0; i < n; ++i)
    output_gradient[i] = 2 * (forward.outputs()[i] - data.returns()[i]) / n;
  return ac.v.backward(ac.v_params, forward, output_gradient);
}

// What one update did: policy steps taken before the early stop, the KL at the last check, the
// entropy before the first step.
struct UpdateInfo {
  int policy_steps = 0;
  double kl = 0, entropy = 0;
};
// One epoch's update of both networks from `data`, identical on every rank.
UpdateInfo update(MPI_Comm comm, ActorCritic& ac, rl::Adam& pi_optimizer, rl::Adam& v_optimizer,
                  PpoBuffer& data) {
  data.normalize_advantages(comm);
  UpdateInfo info;
  for (; info.policy_steps < kPolicyIterations; ++info.policy_steps) {
    PolicyLoss loss = compute_loss_pi(ac, data);
    if (info.policy_steps == 0) info.entropy = mpi_avg(comm, loss.entropy);
    info.kl = mpi_avg(comm, loss.kl);
    if (info.kl > 1.5 * kTargetKl) break;
    mpi_avg_grads(comm, loss.gradient);
    pi_optimizer.step(ac.pi_params, loss.gradient);
  }
  for (int i = 0; i < kValueIterations; ++i) {
    std::vector<double> gradient = compute_loss_v_gradient(ac, data);
    mpi_avg_grads(comm, gradient);
    v_optimizer.step(ac.v_params, gradient);
  }
  return info;
}

// The whole run on `comm`; every rank returns the same result.
struct Result {
  double average = 0;
  std::int64_t epochs = 0;
};
Result run(MPI_Comm comm, const Settings& settings) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const auto seed = static_cast<std::uint64_t>(settings.seed) + 10000 * rank;
  std::mt19937_64 rng(seed);
  ActorCritic ac;
  ac.pi_params = ac.pi.initial_parameters(seed);
  ac.v_params = ac.v.initial_parameters(seed + 1);
  sync_params(comm, ac.pi_params);
  sync_params(comm, ac.v_params);
  rl::Adam pi_optimizer(ac.pi_params.size(), {.learning_rate = kPolicyLearningRate});
  rl::Adam v_optimizer(ac.v_params.size(), {.learning_rate = kValueLearningRate});
  const auto local_steps = static_cast<std::size_t>(settings.steps / size);

  rl::CartPole env;
  std::vector<double> observation = env.reset(rng);
  double episode_return = 0;
  Result result;
  const double start = MPI_Wtime();
  while (result.epochs < settings.epochs) {
    ++result.epochs;
    PpoBuffer buffer(local_steps);
    double finished_return_sum = 0, finished_episodes = 0;
    while (!buffer.full()) {
      const std::vector<double> logits = ac.pi.forward(ac.pi_params, observation);
      const int action = rl::sample_categorical(logits, rng);
      const double value = ac.v.forward(ac.v_params, observation)[0];
      rl::StepResult step = env.step(action);
      episode_return += step.reward;
      buffer.store(observation, action, step.reward, value, rl::log_softmax(logits)[action]);
      observation = std::move(step.observation);
      if (!step.done() && !buffer.full()) continue;
      buffer.finish_path(step.terminated ? 0.0 : ac.v.forward(ac.v_params, observation)[0]);
      if (step.done()) {
        finished_return_sum += episode_return;
        finished_episodes += 1;
      }
      observation = env.reset(rng);
      episode_return = 0;
    }
    const UpdateInfo info = update(comm, ac, pi_optimizer, v_optimizer, buffer);
    const auto [return_sum, episodes] = mpi_sum<2>(comm, {finished_return_sum, finished_episodes});
    result.average = episodes > 0 ? return_sum / episodes : 0.0;
    if (rank == 0) {
      std::printf(
          "epoch %lld: average return %.1f over %.0f episodes, entropy %.3f, kl %.4f, %d "
          "policy steps\n",
          static_cast<long long>(result.epochs), result.average, episodes, info.entropy, info.kl,
          info.policy_steps);
      std::fflush(stdout);
    }
    if (result.average >= static_cast<double>(settings.target)) break;
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
      {"epochs", &settings.epochs, 1, 100000, "epochs at most"},
      {"steps", &settings.steps, 1, 100000000, "environment steps an epoch, over all members"},
      {"seed", &settings.seed, 0, 1000000000, "seed of everything random"},
      {"target", &settings.target, 0, 1000,
       "epoch's average return to stop at; above 500 runs the whole budget"},
  };
  rl::ParseResult parsed = rl::parse_options(argc, argv, options);
  if (parsed.status == rl::ParseResult::Status::kOk && settings.steps < members)
    parsed = {rl::ParseResult::Status::kError, "--steps must give every member a step"};
  if (parsed.status != rl::ParseResult::Status::kOk)
    return rl::reject(parsed, "ppo_spinningup_port", rl::usage("ppo_spinningup_port", options),
                      true);
  fiber::SimpleQueue<Result> results;
  fiber::Group group(fiber::Group::Options{.size = static_cast<int>(members)}, member, settings,
                     results);
  group.start();
  group.join();
  int failed = 0;
  for (const std::optional<int>& code : group.exitcodes()) failed += code != 0;
  if (failed > 0) {
    std::fprintf(stderr, "ppo_spinningup_port: %d of %lld members failed\n", failed,
                 static_cast<long long>(members));
    return 1;
  }
  const Result result = results.get();
  std::printf("ppo_spinningup_port: final average return %.1f after %lld epochs\n", result.average,
              static_cast<long long>(result.epochs));
  return 0;
}
