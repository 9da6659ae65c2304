"""es_estool legacy: OpenAI-ES over mpi4py, laid out like estool's train.py.

Rank 0 is the master: it holds the optimiser (antithetic sampling, centered ranks, Adam), cuts
each population into one packet per worker and sends it with ``comm.send``; ranks 1..N are
workers that receive a packet (one job per solution: the solution and its episode seed), play
one episode per job and send the fitnesses back, until a ``None`` packet stops them. After
every iteration the master has the workers play the mean for 10 episodes, and stops once their
average reaches --target (the environment's reward threshold by default).

Usage: mpirun -n 3 python legacy.py [--env CartPole-v1] [--iterations N]
           [--population N] [--seed N] [--target X]
--iterations 2 is the smoke budget CI runs.
"""

import sys
import time
from pathlib import Path

import numpy as np
from mpi4py import MPI

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # rl_common.py
import rl_common as rl  # noqa: E402

NAME = "es_estool_legacy"
TAG_JOBS = 1
TAG_FITNESS = 2

# The ES settings of each environment: noise, Adam's learning rate, hidden layers. (On
# Pendulum-v1 this ES stalls near -800: ppo_spinningup is the Pendulum program.)
SETTINGS = {
    "CartPole-v1": {"sigma": 0.2, "learning_rate": 0.1, "hidden": (16,)},
}


def evaluate(env, sizes, params, seed):
    """The fitness of one solution: the return of one episode started from ``seed``."""
    return rl.episode_return(env, sizes, params, seed)


def worker(comm):
    """Answers each packet of jobs with their fitnesses until a None packet."""
    while True:
        jobs = comm.recv(source=0, tag=TAG_JOBS)
        if jobs is None:
            return
        comm.send([evaluate(*job) for job in jobs], dest=0, tag=TAG_FITNESS)


def evaluate_on_workers(comm, jobs):
    """Master: the fitness of every job, in order. The jobs are cut into contiguous blocks, one
    per worker; a worker left without jobs gets no packet (an empty one would stop it)."""
    blocks = np.array_split(np.arange(len(jobs)), comm.Get_size() - 1)
    for worker_rank, block in enumerate(blocks, start=1):
        if len(block) > 0:
            comm.send([jobs[i] for i in block], dest=worker_rank, tag=TAG_JOBS)
    fitness = []
    for worker_rank, block in enumerate(blocks, start=1):
        if len(block) > 0:
            fitness += comm.recv(source=worker_rank, tag=TAG_FITNESS)
    return fitness


def stop_workers(comm):
    for worker_rank in range(1, comm.Get_size()):
        comm.send(None, dest=worker_rank, tag=TAG_JOBS)


def master(comm, options):
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
        fitness = evaluate_on_workers(comm, [(options.env, sizes, row, seed)
                                             for row, seed in zip(solutions, half + half)])
        es.tell(fitness)
        seeds = rl.draw_seeds(evaluation_seeder, rl.EVALUATION_EPISODES)
        returns = evaluate_on_workers(comm, [(options.env, sizes, es.mean, seed) for seed in seeds])
        average = sum(returns) / len(returns)
        print(f"iteration {iteration}: population average {sum(fitness) / len(fitness)!r}, "
              f"mean's average return {average!r}", flush=True)
        if average >= options.target:
            break
    stop_workers(comm)
    print(f"training took {time.perf_counter() - start:.2f} s", flush=True)
    return average, iteration


if __name__ == "__main__":
    comm = MPI.COMM_WORLD
    options = rl.parse_options(__doc__.splitlines()[0], {
        "env": "CartPole-v1", "iterations": 200, "population": 64, "seed": 0})
    if comm.Get_size() < 2 or options.population % 2 != 0 or options.env not in SETTINGS:
        if comm.Get_rank() == 0:
            print(f"{NAME}: needs 2 or more ranks (a master and workers), an even --population "
                  f"and --env one of {', '.join(SETTINGS)}")
        raise SystemExit(2)
    if comm.Get_rank() == 0:
        average, iterations = master(comm, options)
        print(f"{NAME}: final average return {average!r} after {iterations} iterations",
              flush=True)
    else:
        worker(comm)
