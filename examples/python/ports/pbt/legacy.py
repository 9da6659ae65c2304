"""pbt legacy: Population-Based Training (Jaderberg et al., 2017) in the small, over mpi4py.

Each rank of ``mpirun -n M`` is a member of the population: it trains a CartPole-v1 policy with
OpenAI-ES, with hyper-parameters of its own (the ES noise sigma and learning rate), playing its
ES populations itself. Every --iterations ES steps (a round) each member scores its mean on the
round's 10 evaluation episodes (the same for all members, so the ranking compares policies, not
their luck), and ``comm.allgather`` hands every rank every member's (score, parameters,
hyper-parameters). Every rank then computes the same exploit and explore step (the draws come
from the seed and the round): each member of the bottom quarter copies the parameters of a
top-quarter member (exploit) and takes its hyper-parameters times 0.8 or 1.2 each (explore).
The run stops once the best member's score reaches --target.

A round starts a fresh optimiser from the parameters in hand: what a member carries from round
to round is its parameters and hyper-parameters, which is also what an exploiting member copies.

Usage: mpirun -n 4 python legacy.py [--rounds N] [--iterations N] [--population N] [--seed N]
           [--target X]
--rounds 2 is the smoke budget CI runs.
"""

import functools
import itertools
import sys
import time
from pathlib import Path

import numpy as np
from mpi4py import MPI

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # rl_common.py
import rl_common as rl  # noqa: E402

# The first entry of each generator's seed says what it draws, so no two streams coincide.
INITIAL, TRAINING, EVALUATION, EXPLOIT = range(4)

NAME = "pbt_legacy"
ENV = "CartPole-v1"
HIDDEN = (16,)


def evaluate(params, seed):
    """The return of one episode of ``params`` started from ``seed``."""
    return rl.episode_return(ENV, rl.layer_sizes(ENV, HIDDEN), params, seed)


def initial_member(member, options):
    """A member before the first round: its own initial parameters and hyper-parameters."""
    rng = np.random.default_rng([INITIAL, options.seed, member])
    return {"params": rl.initial_parameters(rl.layer_sizes(ENV, HIDDEN), rng),
            "sigma": float(np.exp(rng.uniform(np.log(0.05), np.log(0.5)))),
            "learning_rate": float(np.exp(rng.uniform(np.log(0.03), np.log(0.3)))),
            "score": float("-inf")}


def train_round(member, state, options, round_, starmap):
    """One round of a member: --iterations ES steps from its parameters, then its mean's score
    on the round's evaluation episodes; ``starmap`` plays the episodes (a list of
    (params, seed) jobs in, their returns out)."""
    rng = np.random.default_rng([TRAINING, options.seed, member, round_])
    es = rl.OpenEs(state["params"], options.population, state["sigma"], state["learning_rate"],
                   rl.draw_seeds(rng, 1)[0])
    for _ in range(options.iterations):
        solutions = es.ask()
        half = rl.draw_seeds(rng, options.population // 2)
        es.tell(starmap(evaluate, list(zip(solutions, half + half))))
    seeds = rl.draw_seeds(np.random.default_rng([EVALUATION, options.seed, round_]),
                          rl.EVALUATION_EPISODES)
    returns = starmap(evaluate, [(es.mean, seed) for seed in seeds])
    return {**state, "params": es.mean, "score": sum(returns) / len(returns)}


def exploit_and_explore(states, options, round_):
    """The next round's states: each bottom-quarter member copies a top-quarter member's
    parameters and hyper-parameters, the latter times 0.8 or 1.2 each. Returns the states and
    a line per copy."""
    rng = np.random.default_rng([EXPLOIT, options.seed, round_])
    ranking = sorted(range(len(states)), key=lambda m: -states[m]["score"])  # stable: ties by id
    quarter = max(1, len(states) // 4)
    states, copies = list(states), []
    for loser in ranking[-quarter:]:
        winner = ranking[int(rng.integers(quarter))]
        sigma = states[winner]["sigma"] * float(rng.choice([0.8, 1.2]))
        learning_rate = states[winner]["learning_rate"] * float(rng.choice([0.8, 1.2]))
        states[loser] = {**states[winner], "sigma": sigma, "learning_rate": learning_rate}
        copies.append(f"  member {loser} takes member {winner}'s parameters, sigma {sigma!r}, "
                      f"learning rate {learning_rate!r}")
    return states, copies


def round_line(round_, states):
    """The best member and the round's line."""
    best = max(range(len(states)), key=lambda m: states[m]["score"])
    scores = ", ".join(repr(state["score"]) for state in states)
    return best, f"round {round_}: scores [{scores}], best member {best}"


def run(comm, options, report):
    """Rank r is member r; rank 0 reports. Returns (the best score, rounds) on every rank."""
    member = comm.Get_rank()
    state = initial_member(member, options)
    best_score, round_ = float("-inf"), 0
    start = time.perf_counter()
    while round_ < options.rounds:
        round_ += 1
        state = train_round(member, state, options, round_,
                            lambda f, jobs: list(itertools.starmap(f, jobs)))
        states = comm.allgather(state)
        best, line = round_line(round_, states)
        best_score = states[best]["score"]
        if member == 0:
            report(line)
        if best_score >= options.target:
            break
        states, copies = exploit_and_explore(states, options, round_)
        state = states[member]
        if member == 0:
            for copy in copies:
                report(copy)
    if member == 0:
        report(f"training took {time.perf_counter() - start:.2f} s")
    return best_score, round_


if __name__ == "__main__":
    comm = MPI.COMM_WORLD
    options = rl.parse_options(__doc__.splitlines()[0], {
        "rounds": 20, "iterations": 2, "population": 16, "seed": 0})
    options.target = rl.TARGETS[ENV] if options.target is None else options.target
    if options.population % 2 != 0:
        if comm.Get_rank() == 0:
            print(f"{NAME}: --population must be even (antithetic pairs)")
        raise SystemExit(2)
    best_score, rounds = run(comm, options, functools.partial(print, flush=True))
    if comm.Get_rank() == 0:
        print(f"{NAME}: final average return {best_score!r} after {rounds} rounds", flush=True)
