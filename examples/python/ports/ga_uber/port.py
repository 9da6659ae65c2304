"""ga_uber port: ga_uber's legacy.py (beside this file) on fibermpi.

The legacy's SPMD body, ``run``, runs unchanged in each member of a ``fibermpi.Group`` of
--members processes, on ``fibermpi.group_comm()`` where the legacy passed ``MPI.COMM_WORLD``:
``comm.Allgather`` of the fitnesses and ``comm.allgather`` of the elite's returns are the
legacy's calls on the group's communicator. Member 0 puts each generation's line and its result
on a ``fibermpi.Queue``; the master prints them. A seed gives the legacy's run with as many
ranks as members (and, the selection being computed alike everywhere, with any number).

Usage: python port.py [--members N] [--env CartPole-v1] [--generations N] [--population N]
           [--parents N] [--seed N] [--target X]
The same script under ``fibermpi run -n N+1`` or ``mpirun -n N+1``: ranks 1..N are the members.
--generations 2 is the smoke budget CI runs.
"""

import sys
import time
from pathlib import Path

import fibermpi
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # rl_common.py
import rl_common as rl  # noqa: E402

NAME = "ga_uber_port"
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


def member(options, reports):
    """A member of the group: the legacy's body on the group's communicator."""
    result = run(fibermpi.group_comm(), options, reports.put)
    if fibermpi.group_rank() == 0:
        reports.put(result)


if __name__ == "__main__":
    options = rl.parse_options(__doc__.splitlines()[0], {
        "env": "CartPole-v1", "generations": 100, "population": 64, "parents": 10, "seed": 0},
        {"members": 2})
    if (options.members < 1 or options.population % options.members != 0
            or options.parents > options.population):
        print(f"{NAME}: --population must be a multiple of the {options.members} members "
              "and --parents at most --population")
        raise SystemExit(2)
    reports = fibermpi.Queue()
    with fibermpi.Group(options.members, member, args=(options, reports)) as group:
        result = rl.relay(group, reports)
    if result is None:
        print(f"{NAME}: the group failed, exit codes {group.exitcodes}")
        raise SystemExit(1)
    average, generations = result
    print(f"{NAME}: final average return {average!r} after {generations} generations",
          flush=True)
