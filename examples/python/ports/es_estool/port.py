"""es_estool port: es_estool's legacy.py (beside this file) on fibermpi.

The master's ES loop is the legacy's; its hand-written scatter of jobs to the workers and gather
of their fitnesses (``comm.send``, ``comm.recv`` and the None packet that stops them) become one
``fibermpi.Pool.starmap`` over (environment, sizes, solution, episode seed) jobs, and the
worker loop goes: the pool's workers call ``evaluate`` themselves. A fitness depends on the
solution and its seed alone, so a seed gives the legacy's run with any number of workers.

Usage: python port.py [--workers N] [--env CartPole-v1] [--iterations N]
           [--population N] [--seed N] [--target X]
The same script under ``fibermpi run -n N+1`` or ``mpirun -n N+1``: ranks 1..N are the workers.
--iterations 2 is the smoke budget CI runs.
"""

import sys
import time
from pathlib import Path

import fibermpi
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # rl_common.py
import rl_common as rl  # noqa: E402

NAME = "es_estool_port"

# The ES settings of each environment: noise, Adam's learning rate, hidden layers. (On
# Pendulum-v1 this ES stalls near -800: ppo_spinningup is the Pendulum program.)
SETTINGS = {
    "CartPole-v1": {"sigma": 0.2, "learning_rate": 0.1, "hidden": (16,)},
}


def evaluate(env, sizes, params, seed):
    """The fitness of one solution: the return of one episode started from ``seed``."""
    return rl.episode_return(env, sizes, params, seed)


def evaluate_on_workers(pool, jobs):
    """Master: the fitness of every job, in order, computed by the pool's workers."""
    return pool.starmap(evaluate, jobs)


def master(pool, options):
    """The ES loop: prints each iteration's figures and returns (average, iterations)."""
    settings = SETTINGS[options.env]
    sizes = rl.layer_sizes(options.env, settings["hidden"])
    es = rl.OpenEs(rl.initial_parameters(sizes, np.random.default_rng(options.seed)),
                   options.population, settings["sigma"], settings["learning_rate"],
                   options.seed + 1)
    # Both halves of an antithetic pair play the same start state: their difference in fitness
    # comes from the perturbation alone.
    episode_seeder = np.random.default_rng(options.seed + 2)
    evaluation_seeder = np.random.default_rng(options.seed + 3)
    average, iteration = float("-inf"), 0
    start = time.perf_counter()
    while iteration < options.iterations:
        iteration += 1
        half = rl.draw_seeds(episode_seeder, options.population // 2)
        solutions = es.ask()
        fitness = evaluate_on_workers(pool, [(options.env, sizes, row, seed)
                                             for row, seed in zip(solutions, half + half)])
        es.tell(fitness)
        seeds = rl.draw_seeds(evaluation_seeder, rl.EVALUATION_EPISODES)
        returns = evaluate_on_workers(pool, [(options.env, sizes, es.mean, seed) for seed in seeds])
        average = sum(returns) / len(returns)
        print(f"iteration {iteration}: population average {sum(fitness) / len(fitness)!r}, "
              f"mean's average return {average!r}", flush=True)
        if average >= options.target:
            break
    print(f"training took {time.perf_counter() - start:.2f} s", flush=True)
    return average, iteration


if __name__ == "__main__":
    options = rl.parse_options(__doc__.splitlines()[0], {
        "env": "CartPole-v1", "iterations": 200, "population": 64, "seed": 0}, {"workers": 2})
    if options.workers < 1 or options.population % 2 != 0 or options.env not in SETTINGS:
        print(f"{NAME}: needs 1 or more --workers, an even --population "
              f"and --env one of {', '.join(SETTINGS)}")
        raise SystemExit(2)
    with fibermpi.Pool(options.workers) as pool:
        pool.wait_until_workers_up()  # the training time leaves their start out, as mpirun's
        average, iterations = master(pool, options)
    print(f"{NAME}: final average return {average!r} after {iterations} iterations",
          flush=True)
