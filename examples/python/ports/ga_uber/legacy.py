"""ga_uber legacy: the deep-neuroevolution genetic algorithm (Such et al., 2017) over mpi4py.

An SPMD program, laid out like uber-research's GA. Every rank holds the whole population as
seed lists (a genome's parameters are the network's initial parameters from its first seed plus
sigma times the noise of each later seed), plays its own share of the population, and
``comm.Allgather`` gives every rank every fitness. Selection then runs on every rank alike:
truncation to the best --parents genomes, the best one kept unchanged (elitism), every other
slot a copy of a parent drawn at random plus one fresh mutation seed. The draws come from a
generator seeded alike on every rank, so all ranks compute the same next generation and never
send a genome. Each generation the elite plays 10 evaluation episodes, spread over the ranks and
gathered with ``comm.allgather``; the run stops once their average reaches --target.

Usage: mpirun -n 2 python legacy.py [--env CartPole-v1] [--generations N] [--population N]
           [--parents N] [--seed N] [--target X]
--generations 2 is the smoke budget CI runs.
"""

import functools
import sys
import time
from pathlib import Path

import numpy as np
from mpi4py import MPI

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # rl_common.py
import rl_common as rl  # noqa: E402

NAME = "ga_uber_legacy"
SIGMA = 0.1
HIDDEN = (16,)


def evaluate(env, sizes, genome, seed):
    """The fitness of one genome: the return of one episode started from ``seed``."""
    return rl.episode_return(env, sizes, rl.decode_genome(sizes, genome, SIGMA), seed)


def evaluate_population(comm, env, sizes, population, episode_seeds):
    """Every genome's fitness, on every rank: each rank plays a contiguous share."""
    rank, size = comm.Get_rank(), comm.Get_size()
    share = len(population) // size
    mine = np.array([evaluate(env, sizes, population[i], episode_seeds[i])
                     for i in range(rank * share, (rank + 1) * share)])
    fitness = np.empty(len(population))
    comm.Allgather(mine, fitness)
    return fitness


def evaluate_elite(comm, env, sizes, elite, seeds):
    """The elite's average return over one episode per seed, rank r playing episodes r,
    r + size, ...; summed in episode order, so the same value on every rank and for any size."""
    rank, size = comm.Get_rank(), comm.Get_size()
    played = comm.allgather([evaluate(env, sizes, elite, seeds[e])
                             for e in range(rank, len(seeds), size)])
    return sum(played[e % size][e // size] for e in range(len(seeds))) / len(seeds)


def next_generation(population, ranking, parents, rng):
    """Truncation selection with one elite; ``rng`` is in the same state on every rank."""
    children = [population[ranking[0]]]
    while len(children) < len(population):
        parent = population[ranking[rng.integers(parents)]]
        children.append(parent + rl.draw_seeds(rng, 1))
    return children


def run(comm, options, report):
    """The whole run on ``comm``; rank 0 reports each generation's line. Every rank returns
    (the elite's last average, generations)."""
    rank = comm.Get_rank()
    sizes = rl.layer_sizes(options.env, HIDDEN)
    rng = np.random.default_rng(options.seed)
    population = [rl.draw_seeds(rng, 1) for _ in range(options.population)]
    average, generation = float("-inf"), 0
    start = time.perf_counter()
    while generation < options.generations:
        generation += 1
        episode_seeds = rl.draw_seeds(rng, len(population))
        fitness = evaluate_population(comm, options.env, sizes, population, episode_seeds)
        ranking = np.argsort(-fitness, kind="stable")  # best first; ties keep their order
        average = evaluate_elite(comm, options.env, sizes, population[ranking[0]],
                                 rl.draw_seeds(rng, rl.EVALUATION_EPISODES))
        if rank == 0:
            parents_average = float(fitness[ranking[:options.parents]].mean())
            report(f"generation {generation}: best {float(fitness[ranking[0]])!r}, "
                   f"parents' average {parents_average!r}, elite's average {average!r}")
        if average >= options.target:
            break
        population = next_generation(population, ranking, options.parents, rng)
    if rank == 0:
        report(f"training took {time.perf_counter() - start:.2f} s")
    return average, generation


if __name__ == "__main__":
    comm = MPI.COMM_WORLD
    options = rl.parse_options(__doc__.splitlines()[0], {
        "env": "CartPole-v1", "generations": 100, "population": 64, "parents": 10, "seed": 0})
    if options.population % comm.Get_size() != 0 or options.parents > options.population:
        if comm.Get_rank() == 0:
            print(f"{NAME}: --population must be a multiple of the {comm.Get_size()} ranks "
                  "and --parents at most --population")
        raise SystemExit(2)
    average, generations = run(comm, options, functools.partial(print, flush=True))
    if comm.Get_rank() == 0:
        print(f"{NAME}: final average return {average!r} after {generations} generations",
              flush=True)
