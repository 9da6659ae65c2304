"""One iteration of evolution strategies on each peer, as its users would write it, beside
fibermpi's es_estool_port.

The Python ES (OpenAI-ES: antithetic Gaussian noise, centred ranks, a plain gradient step) runs
one CartPole-v1 episode (Gymnasium) per member with es_estool_port's policy (4 observations,
16 tanh units, the greedy action of 2) and evaluates its population with the pool's map, on
Python's multiprocessing and on the peers of .venv-peers/ (scripts/setup --peers): Uber's Fiber,
Ray, Dask distributed and ipyparallel (python_pool_bench.py's adapters). fibermpi's figure is
es_estool_port (C++, the same ES and policy) with the same population and workers: the time
between its per-iteration lines. The first iteration of each is left out (start-up, warm-up).
A peer that fails is reported with its error and the others go on. One JSON object per line.

Usage: es_peers_bench.py [--build build] [--population 256] [--iterations 6] [--workers 2]
                         [--peers mp,fiber,ray,dask,ipyparallel] [--timeout 900]"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import python_pool_bench  # noqa: E402  (the peers' adapters)

HIDDEN = 16
OBSERVATIONS = 4
ACTIONS = 2
PARAMETERS = OBSERVATIONS * HIDDEN + HIDDEN + HIDDEN * ACTIONS + ACTIONS


def episode_return(member):
    """The return of one CartPole-v1 episode of a member (its parameters and episode seed)."""
    # Imports and sizes inside: ipyparallel sends functions of __main__ by value into its
    # engines' namespace, without this module's globals.
    import gymnasium
    import numpy

    observations, hidden, actions = 4, 16, 2
    params, seed = member
    split = observations * hidden
    w1 = params[:split].reshape(observations, hidden)
    b1 = params[split:split + hidden]
    w2 = params[split + hidden:split + hidden + hidden * actions].reshape(hidden, actions)
    b2 = params[split + hidden + hidden * actions:]
    env = gymnasium.make("CartPole-v1")
    observation, _ = env.reset(seed=int(seed))
    total = 0.0
    while True:
        scores = numpy.tanh(observation @ w1 + b1) @ w2 + b2
        observation, reward, terminated, truncated, _ = env.step(int(numpy.argmax(scores)))
        total += float(reward)
        if terminated or truncated:
            env.close()
            return total


def emit(**row):
    print(json.dumps(row), flush=True)


def python_es(adapter_type, population, iterations, workers):
    pool = adapter_type(workers)
    pool.wait_ready()
    rng = np.random.default_rng(7)
    theta = np.zeros(PARAMETERS)
    sigma, learning_rate = 0.1, 0.03
    # The chunksize Python's multiprocessing picks for a map of this size.
    chunksize = math.ceil(population / (4 * workers))
    seconds, returns = [], []
    for _ in range(iterations):
        start = time.perf_counter()
        half = rng.standard_normal((population // 2, PARAMETERS))
        noise = np.concatenate([half, -half])
        seeds = rng.integers(0, 2**31 - 1, population // 2)
        seeds = np.concatenate([seeds, seeds])
        members = [(theta + sigma * e, int(s)) for e, s in zip(noise, seeds)]
        fitness = np.asarray(pool.map(episode_return, members, chunksize))
        ranks = fitness.argsort().argsort() / (population - 1) - 0.5
        theta = theta + learning_rate / (population * sigma) * (noise.T @ ranks)
        seconds.append(time.perf_counter() - start)
        returns.append(float(fitness.mean()))
    if not python_pool_bench.closed_within(pool, 30):
        emit(bench="es_iteration", impl=pool.name, error="close() did not return within 30 s")
    return pool.name, seconds, returns


def fibermpi_es(build, population, iterations, workers, timeout):
    program = pathlib.Path(build) / "examples" / "ports" / "es_estool" / "es_estool_port"
    # Line-buffered output: each iteration's line arrives as it is printed, not at exit.
    command = ["stdbuf", "-oL", str(program), "--workers", str(workers), "--population",
               str(population), "--iterations", str(iterations), "--target", "1000"]
    environment = dict(os.environ, FIBER_QUIET="1")
    stamps = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=environment) as child:
        deadline = time.monotonic() + timeout
        for line in child.stdout:
            if line.startswith("iteration "):
                stamps.append(time.perf_counter())
            if time.monotonic() > deadline:
                child.kill()
                raise RuntimeError(f"es_estool_port ran past {timeout} s")
        status = child.wait()
    if status != 0 or len(stamps) < 2:
        raise RuntimeError(f"es_estool_port exited with {status} after {len(stamps)} iterations")
    return [b - a for a, b in zip(stamps, stamps[1:])]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--population", type=int, default=256)
    parser.add_argument("--iterations", type=int, default=6)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--peers", default="mp,fiber,ray,dask,ipyparallel")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--skip-cpp", action="store_true",
                        help="leave out es_estool_port (a run for the Python peers only; under a "
                             "launcher, ranks other than 0 become fibermpi's workers)")
    args = parser.parse_args()
    if args.population < 2 or args.population % 2:
        parser.error("--population must be even and at least 2 (antithetic pairs)")
    if args.iterations < 2:
        parser.error("--iterations must be at least 2 (the first one is left out)")
    common = dict(bench="es_iteration", population=args.population, workers=args.workers)
    if not args.skip_cpp:
        try:
            seconds = fibermpi_es(args.build, args.population, args.iterations, args.workers,
                                  args.timeout)
            emit(impl="fibermpi C++ spawned", median_s=round(statistics.median(seconds), 4),
                 **common)
        except Exception as error:  # reported, not fatal: the peers still run
            emit(impl="fibermpi C++ spawned", error=str(error), **common)
    for name in args.peers.split(","):
        adapter = python_pool_bench.ADAPTERS.get(name)
        if adapter is None:
            emit(impl=name, error="no such peer", **common)
            continue
        try:
            name, seconds, returns = python_es(adapter, args.population, args.iterations,
                                               args.workers)
            emit(impl=name, median_s=round(statistics.median(seconds[1:]), 4),
                 mean_return_last=round(returns[-1], 1), **common)
        except Exception as error:
            emit(impl=adapter.name, error=f"{type(error).__name__}: {error}", **common)


if __name__ == "__main__":
    main()
