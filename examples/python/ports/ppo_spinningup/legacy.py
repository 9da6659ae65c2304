"""ppo_spinningup legacy: PPO with a clipped surrogate (Schulman et al., 2017) over mpi4py.

An SPMD program laid out like Spinning Up's ppo.py. Every rank collects its own share of an
epoch's steps with its own environment and random stream; ``sync_params`` broadcasts rank 0's
initial parameters (``comm.Bcast``), ``mpi_avg_grads`` averages the gradients over the ranks
after every gradient step (``comm.Allreduce``, then a division by the size), and advantage
normalisation, the KL of the early stop and the statistics are averaged with ``comm.Allreduce``
too. So every rank takes the same optimiser steps and holds the same parameters throughout.
An actor-critic of separate tanh MLPs (numpy, gradients written out) with their own Adam: a
categorical policy on a discrete action space, a Gaussian one (state-independent log-std) on a
continuous one; GAE-lambda advantages; full-batch updates, 80 for each network, the policy's
stopped early once the KL from the epoch's policy passes 1.5 times 0.01. After every epoch the
policy's mean action plays 10 evaluation episodes, spread over the ranks; the run stops once
their average reaches --target (the environment's reward threshold by default).

Usage: mpirun -n 2 python legacy.py [--env Pendulum-v1|CartPole-v1] [--epochs N] [--steps N]
           [--seed N] [--target X]
--epochs 2 --steps 1000 is the smoke budget CI runs.
"""

import functools
import os
import sys
import time
from pathlib import Path

# One BLAS thread a process, as Spinning Up's mpi_fork asks of MKL and OpenMP: the ranks are
# the parallelism.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # rl_common.py
import rl_common as rl  # noqa: E402

NAME = "ppo_spinningup_legacy"
CLIP_RATIO = 0.2
POLICY_ITERATIONS = 80
VALUE_ITERATIONS = 80
TARGET_KL = 0.01

# The PPO settings of each environment. Pendulum's rewards are scaled by 0.1 for the value
# function (the advantages are normalised anyway) and discounted more steeply.
SETTINGS = {
    "CartPole-v1": {"gamma": 0.99, "lam": 0.97, "policy_lr": 3e-4, "value_lr": 1e-3,
                    "reward_scale": 1.0, "hidden": (64, 64)},
    "Pendulum-v1": {"gamma": 0.95, "lam": 0.95, "policy_lr": 1e-3, "value_lr": 1e-3,
                    "reward_scale": 0.1, "hidden": (32, 32)},
}


def sync_params(comm, params):
    """Replaces ``params`` on every rank by rank 0's."""
    comm.Bcast(params, root=0)


def mpi_avg_grads(comm, gradient):
    """Replaces ``gradient`` on every rank by its average over the ranks."""
    comm.Allreduce(MPI.IN_PLACE, gradient, op=MPI.SUM)
    gradient /= comm.Get_size()


def mpi_avg(comm, value):
    """The average of a number over the ranks."""
    total = np.array([float(value)])
    comm.Allreduce(MPI.IN_PLACE, total, op=MPI.SUM)
    return total[0] / comm.Get_size()


def mpi_statistics_scalar(comm, x):
    """The mean and standard deviation of the values of ``x`` on all ranks."""
    sums = np.array([x.sum(), x.size], dtype=np.float64)
    comm.Allreduce(MPI.IN_PLACE, sums, op=MPI.SUM)
    mean = sums[0] / sums[1]
    squares = np.array([((x - mean) ** 2).sum()])
    comm.Allreduce(MPI.IN_PLACE, squares, op=MPI.SUM)
    return mean, np.sqrt(squares[0] / sums[1])


class ActorCritic:
    """The policy and the value function, each a flat parameter vector with its MLP's sizes;
    a Gaussian policy keeps its log-std at the end of its vector."""

    def __init__(self, env, hidden, rng):
        self.space = rl.environment(env).action_space
        self.discrete = isinstance(self.space, gym.spaces.Discrete)
        self.policy_sizes = rl.layer_sizes(env, hidden)
        self.value_sizes = (self.policy_sizes[0], *hidden, 1)
        actions = self.policy_sizes[-1]
        log_std = np.full(0 if self.discrete else actions, -0.5)
        self.policy = np.concatenate(
            [rl.initial_parameters(self.policy_sizes, rng, last_scale=0.01), log_std])
        self.value = rl.initial_parameters(self.value_sizes, rng)

    def split_policy(self):
        """The policy's layers and its log-std (None for a categorical policy)."""
        count = rl.parameter_count(self.policy_sizes)
        log_std = None if self.discrete else self.policy[count:]
        return rl.unflatten(self.policy_sizes, self.policy[:count]), log_std

    def values(self, observations):
        return rl.forward(rl.unflatten(self.value_sizes, self.value), observations)[..., 0]

    def step(self, observation, rng):
        """A sampled action, its log-probability and the observation's value."""
        layers, log_std = self.split_policy()
        output = rl.forward(layers, observation)
        if self.discrete:
            action = int(np.argmax(output + rng.gumbel(size=output.size)))
        else:
            action = output + np.exp(log_std) * rng.standard_normal(output.size)
        return action, float(self.log_probabilities(output, log_std, np.array([action]))[0]), \
            float(self.values(observation))

    def log_probabilities(self, outputs, log_std, actions):
        """log pi(a | s) of a batch, from the policy network's outputs."""
        outputs = np.atleast_2d(outputs)
        if self.discrete:
            shifted = outputs - outputs.max(axis=1, keepdims=True)
            log_softmax = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
            return log_softmax[np.arange(len(actions)), actions.astype(int)]
        z = (actions.reshape(outputs.shape) - outputs) / np.exp(log_std)
        return (-0.5 * z * z - log_std - 0.5 * np.log(2 * np.pi)).sum(axis=1)

    def policy_loss_gradient(self, observations, actions, advantages, old_log_probabilities):
        """The clipped surrogate's gradient over the policy's parameters and the approximate KL
        from the policy that collected the batch."""
        layers, log_std = self.split_policy()
        values = rl.activations(layers, observations)
        outputs = values[-1]
        log_probabilities = self.log_probabilities(outputs, log_std, actions)
        ratio = np.exp(log_probabilities - old_log_probabilities)
        clipped = (((advantages > 0) & (ratio > 1 + CLIP_RATIO))
                   | ((advantages < 0) & (ratio < 1 - CLIP_RATIO)))
        # d(loss)/d(log pi) per sample, the loss being minus the mean clipped surrogate.
        weight = np.where(clipped, 0.0, -ratio * advantages / len(advantages))[:, None]
        if self.discrete:
            probabilities = np.exp(outputs - outputs.max(axis=1, keepdims=True))
            probabilities /= probabilities.sum(axis=1, keepdims=True)
            one_hot = np.eye(outputs.shape[1])[actions.astype(int)]
            gradient = [rl.backward(layers, values, weight * (one_hot - probabilities))]
        else:
            z = (actions.reshape(outputs.shape) - outputs) / np.exp(log_std)
            gradient = [rl.backward(layers, values, weight * z / np.exp(log_std)),
                        (weight * (z * z - 1)).sum(axis=0)]
        return np.concatenate(gradient), float(np.mean(old_log_probabilities - log_probabilities))

    def value_loss_gradient(self, observations, returns):
        layers = rl.unflatten(self.value_sizes, self.value)
        values = rl.activations(layers, observations)
        errors = values[-1][:, 0] - returns
        return rl.backward(layers, values, (2 * errors / len(returns))[:, None])


def discounted(x, factor):
    """sum over k of factor^k x[t + k], for every t."""
    out = np.zeros(len(x))
    running = 0.0
    for t in reversed(range(len(x))):
        running = x[t] + factor * running
        out[t] = running
    return out


class Buffer:
    """One rank's steps of an epoch, with GAE-lambda advantages and rewards-to-go per episode."""

    def __init__(self, gamma, lam):
        self.gamma, self.lam = gamma, lam
        self.observations, self.actions, self.rewards = [], [], []
        self.values, self.log_probabilities = [], []
        self.advantages, self.returns = [], []
        self.path_start = 0

    def store(self, observation, action, reward, value, log_probability):
        self.observations.append(observation)
        self.actions.append(action)
        self.rewards.append(reward)
        self.values.append(value)
        self.log_probabilities.append(log_probability)

    def finish_path(self, last_value):
        """Ends the current episode's stretch; ``last_value`` bootstraps a cut one (0 when it
        terminated)."""
        rewards = np.array(self.rewards[self.path_start:] + [last_value])
        values = np.array(self.values[self.path_start:] + [last_value])
        deltas = rewards[:-1] + self.gamma * values[1:] - values[:-1]
        self.advantages += list(discounted(deltas, self.gamma * self.lam))
        self.returns += list(discounted(rewards, self.gamma)[:-1])
        self.path_start = len(self.rewards)

    def data(self, comm):
        """The epoch's arrays, advantages normalised over all ranks."""
        advantages = np.array(self.advantages)
        mean, std = mpi_statistics_scalar(comm, advantages)
        return (np.array(self.observations), np.array(self.actions), (advantages - mean) / std,
                np.array(self.returns), np.array(self.log_probabilities))


def collect(comm, model, env, steps, settings, rng, episode_returns):
    """One rank's share of an epoch: ``steps`` steps, episodes reset from seeds drawn from
    ``rng``; appends each finished episode's return (unscaled) to ``episode_returns``."""
    buffer = Buffer(settings["gamma"], settings["lam"])
    observation, _ = env.reset(seed=rl.draw_seeds(rng, 1)[0])
    episode_return = 0.0
    for t in range(steps):
        action, log_probability, value = model.step(observation, rng)
        next_observation, reward, terminated, truncated, _ = env.step(action)
        episode_return += float(reward)
        buffer.store(observation, action, float(reward) * settings["reward_scale"], value,
                     log_probability)
        observation = next_observation
        if terminated or truncated or t == steps - 1:
            buffer.finish_path(0.0 if terminated else float(model.values(observation)))
            if terminated or truncated:
                episode_returns.append(episode_return)
                observation, _ = env.reset(seed=rl.draw_seeds(rng, 1)[0])
                episode_return = 0.0
    return buffer.data(comm)


def update(comm, model, optimizers, data):
    """Spinning Up's update: policy steps until the KL passes its bound, then value steps;
    every gradient averaged over the ranks. Returns the policy steps taken and the last KL."""
    observations, actions, advantages, returns, log_probabilities = data
    policy_steps, kl = 0, 0.0
    for _ in range(POLICY_ITERATIONS):
        gradient, local_kl = model.policy_loss_gradient(observations, actions, advantages,
                                                        log_probabilities)
        kl = mpi_avg(comm, local_kl)
        if kl > 1.5 * TARGET_KL:
            break
        mpi_avg_grads(comm, gradient)
        model.policy = optimizers[0].step(model.policy, gradient)
        policy_steps += 1
    for _ in range(VALUE_ITERATIONS):
        gradient = model.value_loss_gradient(observations, returns)
        mpi_avg_grads(comm, gradient)
        model.value = optimizers[1].step(model.value, gradient)
    return policy_steps, kl


def evaluate(comm, env, model, seeds):
    """The mean action's average return over one episode per seed, rank r playing episodes r,
    r + size, ...; summed in episode order, the same value on every rank."""
    rank, size = comm.Get_rank(), comm.Get_size()
    params = model.policy[:rl.parameter_count(model.policy_sizes)]
    played = comm.allgather([rl.episode_return(env, model.policy_sizes, params, seeds[e])
                             for e in range(rank, len(seeds), size)])
    return sum(played[e % size][e // size] for e in range(len(seeds))) / len(seeds)


def run(comm, options, report):
    """The whole run on ``comm``; rank 0 reports each epoch's line. Every rank returns (the last
    evaluation average, epochs)."""
    rank, size = comm.Get_rank(), comm.Get_size()
    settings = SETTINGS[options.env]
    model = ActorCritic(options.env, settings["hidden"], np.random.default_rng(options.seed))
    sync_params(comm, model.policy)
    sync_params(comm, model.value)
    optimizers = (rl.Adam(model.policy.size, settings["policy_lr"]),
                  rl.Adam(model.value.size, settings["value_lr"]))
    env = rl.environment(options.env)
    rng = np.random.default_rng(options.seed + 10000 * rank)  # each rank its own episodes
    evaluation_seeder = np.random.default_rng(options.seed + 1)  # alike on every rank
    average, epoch = float("-inf"), 0
    start = time.perf_counter()
    while epoch < options.epochs:
        epoch += 1
        episode_returns = []
        data = collect(comm, model, env, options.steps // size, settings, rng, episode_returns)
        policy_steps, kl = update(comm, model, optimizers, data)
        totals = np.array([sum(episode_returns), len(episode_returns)], dtype=np.float64)
        comm.Allreduce(MPI.IN_PLACE, totals, op=MPI.SUM)
        average = evaluate(comm, options.env, model,
                           rl.draw_seeds(evaluation_seeder, rl.EVALUATION_EPISODES))
        if rank == 0:
            report(f"epoch {epoch}: episodes {int(totals[1])}, average episode return "
                   f"{float(totals[0] / max(totals[1], 1))!r}, policy steps {policy_steps}, "
                   f"KL {float(kl)!r}, evaluation average {average!r}")
        if average >= options.target:
            break
    if rank == 0:
        report(f"training took {time.perf_counter() - start:.2f} s")
    return average, epoch


if __name__ == "__main__":
    comm = MPI.COMM_WORLD
    options = rl.parse_options(__doc__.splitlines()[0], {
        "env": "Pendulum-v1", "epochs": 100, "steps": 2000, "seed": 0})
    if options.env not in SETTINGS or options.steps < comm.Get_size():
        if comm.Get_rank() == 0:
            print(f"{NAME}: --env must be one of {', '.join(SETTINGS)}, --steps at least the ranks")
        raise SystemExit(2)
    average, epochs = run(comm, options, functools.partial(print, flush=True))
    if comm.Get_rank() == 0:
        print(f"{NAME}: final average return {average!r} after {epochs} epochs", flush=True)
