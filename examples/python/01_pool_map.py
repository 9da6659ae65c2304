"""Scores a population in a pool of worker processes, as a multiprocessing program would; only
the import changes. Run it as `python 01_pool_map.py`, or across ranks with
`fibermpi run -n 4 python 01_pool_map.py`."""

import math
import random

import fibermpi as mp


def fitness(params):
    """A rollout stand-in: the closer to (1, 2, 3), the better."""
    return -math.dist(params, (1.0, 2.0, 3.0))


if __name__ == "__main__":
    rng = random.Random(0)
    population = [[rng.gauss(0, 2) for _ in range(3)] for _ in range(64)]
    with mp.Pool() as pool:
        scores = pool.map(fitness, population)
        best = max(range(len(population)), key=scores.__getitem__)
        print(f"best of {len(population)}: {scores[best]:.3f} at {[round(x, 2) for x in population[best]]}")
        squares = pool.map(lambda x: x * x, range(8))  # lambdas travel by value
        print("squares:", squares)
