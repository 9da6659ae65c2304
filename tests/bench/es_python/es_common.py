"""What the ES scripts of this folder share: the policy, one episode per member, OpenAI-ES and the
measurement. Each script adds only its runtime's pool, as that runtime's users would write it.

The experiment is Fiber's paper's ES (a population of 2,048, 50 iterations, timed as the workers
grow), made small: one CartPole-v1 episode (Gymnasium) per member, a policy of 4 observations ->
16 tanh units -> 2 actions (the greedy one), OpenAI-ES with antithetic Gaussian noise, centred
ranks and a plain gradient step. A member's fitness depends only on its parameters and its
episode seed, and the ES draws both from one generator seeded by --seed: every runtime computes
the same fitnesses and the same `mean_return_last`.

Each script prints one JSON line:
  iteration_s, iteration_s_median  wall seconds of each iteration; the median leaves out the first
                                   (the workers' warm-up: imports, Gymnasium's first environment).
  master_cpu_per_member_s          the master process's CPU seconds (time.process_time(): every
                                   thread of the process, the runtime's own threads included) per
                                   member over the timed iterations, spent in the runtime's map:
                                   what the runtime costs the master per task. The ES's own NumPy
                                   work (noise, members, update) is left out and given apart as
                                   es_cpu_per_member_s. The runtime's other processes (Ray's
                                   raylet and GCS, ipyparallel's controller) are not counted.
  member_s                         the mean wall seconds of one episode, timed in the workers and
                                   returned with the fitness.
  saturation_workers               member_s / master_cpu_per_member_s: the worker count at which
                                   the master's CPU is busy all the time dispatching members, and
                                   beyond which more workers cannot shorten an iteration. With
                                   2,048 members per iteration the fixed costs of a map are small
                                   beside the per-member one, so this is the figure that says how
                                   far each runtime scales the paper's experiment. A projection:
                                   episodes grow longer as the policy learns (CartPole-v1 stops at
                                   500 steps), and so does this count.

Usage: <runtime>_es.py [--population 256] [--iterations 10] [--workers 2] [--seed 7]"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Callable, Sequence

import numpy as np

OBSERVATIONS = 4
HIDDEN = 16
ACTIONS = 2
PARAMETERS = OBSERVATIONS * HIDDEN + HIDDEN + HIDDEN * ACTIONS + ACTIONS

Member = tuple  # (parameters: np.ndarray of PARAMETERS floats, episode seed: int)


def episode_return(params: np.ndarray, seed: int) -> float:
    """The return of one greedy CartPole-v1 episode of the policy `params`, reset with `seed`."""
    import gymnasium

    split = OBSERVATIONS * HIDDEN
    w1 = params[:split].reshape(OBSERVATIONS, HIDDEN)
    b1 = params[split:split + HIDDEN]
    w2 = params[split + HIDDEN:split + HIDDEN + HIDDEN * ACTIONS].reshape(HIDDEN, ACTIONS)
    b2 = params[split + HIDDEN + HIDDEN * ACTIONS:]
    env = gymnasium.make("CartPole-v1")
    observation, _ = env.reset(seed=int(seed))
    total = 0.0
    while True:
        scores = np.tanh(observation @ w1 + b1) @ w2 + b2
        observation, reward, terminated, truncated, _ = env.step(int(np.argmax(scores)))
        total += float(reward)
        if terminated or truncated:
            env.close()
            return total


def evaluate(member: Member) -> tuple[float, float]:
    """A worker's task: the member's return and the wall seconds its episode took."""
    start = time.perf_counter()
    fitness = episode_return(*member)
    return fitness, time.perf_counter() - start


class OpenES:
    """OpenAI-ES: antithetic Gaussian noise around theta, centred ranks, a plain gradient step."""

    def __init__(self, population: int, seed: int, sigma: float = 0.1,
                 learning_rate: float = 0.03):
        self.population = population
        self.sigma = sigma
        self.learning_rate = learning_rate
        self.rng = np.random.default_rng(seed)
        self.theta = np.zeros(PARAMETERS)
        self.noise = np.empty((0, PARAMETERS))

    def ask(self) -> list[Member]:
        half = self.rng.standard_normal((self.population // 2, PARAMETERS))
        self.noise = np.concatenate([half, -half])
        seeds = self.rng.integers(0, 2**31 - 1, self.population // 2)
        seeds = np.concatenate([seeds, seeds])
        return [(self.theta + self.sigma * e, int(s)) for e, s in zip(self.noise, seeds)]

    def tell(self, fitness: np.ndarray) -> None:
        ranks = fitness.argsort().argsort() / (self.population - 1) - 0.5
        step = self.learning_rate / (self.population * self.sigma)
        self.theta = self.theta + step * (self.noise.T @ ranks)


def parse_args(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description.splitlines()[0])
    parser.add_argument("--population", type=int, default=256)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if args.population < 2 or args.population % 2:
        parser.error("--population must be even and at least 2 (antithetic pairs)")
    if args.iterations < 2:
        parser.error("--iterations must be at least 2 (the first one is left out)")
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    return args


def run(impl: str, args: argparse.Namespace,
        evaluate_all: Callable[[list[Member]], Sequence[tuple[float, float]]]) -> dict:
    """Runs the ES with `evaluate_all` (the runtime's map of `evaluate` over the members), prints
    the JSON line and returns it."""
    es = OpenES(args.population, args.seed)
    seconds, master_cpu, es_cpu, member_seconds, returns = [], [], [], [], []
    for _ in range(args.iterations):
        start, cpu_start = time.perf_counter(), time.process_time()
        members = es.ask()
        cpu_asked = time.process_time()
        results = evaluate_all(members)
        cpu_evaluated = time.process_time()
        fitness = np.array([r[0] for r in results])
        es.tell(fitness)
        seconds.append(time.perf_counter() - start)
        # The CPU of the runtime's map alone: the ES's NumPy work (ask, tell) is counted apart.
        master_cpu.append(cpu_evaluated - cpu_asked)
        es_cpu.append(cpu_asked - cpu_start + time.process_time() - cpu_evaluated)
        member_seconds.append(statistics.fmean(r[1] for r in results))
        returns.append(float(fitness.mean()))
    timed = slice(1, None)
    timed_members = args.population * (args.iterations - 1)
    cpu_per_member = sum(master_cpu[timed]) / timed_members
    member_s = statistics.fmean(member_seconds[timed])
    row = {
        "bench": "es_python", "impl": impl, "workers": args.workers,
        "population": args.population, "iterations": args.iterations,
        "iteration_s_median": round(statistics.median(seconds[timed]), 4),
        "iteration_s": [round(s, 4) for s in seconds],
        "master_cpu_per_member_s": round(cpu_per_member, 7),
        "member_s": round(member_s, 6),
        "saturation_workers": round(member_s / cpu_per_member, 1) if cpu_per_member > 0 else None,
        "es_cpu_per_member_s": round(sum(es_cpu[timed]) / timed_members, 7),
        "mean_return_last": round(returns[-1], 3),
    }
    print(json.dumps(row), flush=True)
    return row
