"""pbt port: pbt's legacy.py (beside this file) on fibermpi, with nested pools.

The members become tasks of a ``fibermpi.Pool`` of --members workers, one ``member_round`` task
per member and round, and each member plays its ES populations on a ``fibermpi.Pool`` of
--rollout-workers of its own, made inside the task (nesting: its processes come from the same
master). The population (each member's score, parameters and hyper-parameters) lives in a
``fibermpi.Manager().dict()`` whose proxy the tasks get as an argument: a member reads its state
from it and writes the round's result back, where the legacy's ranks swapped them with
``comm.allgather``; the master ranks the population and writes the exploit and explore step
into it. ``train_round`` and ``exploit_and_explore`` are the legacy's, so a seed gives the
legacy's run, with any number of rollout workers.

Usage: python port.py [--members N] [--rollout-workers N] [--rounds N] [--iterations N]
           [--population N] [--seed N] [--target X]
The same script under ``fibermpi run -n N`` or ``mpirun -n N``: ranks 1..N-1 take the member and
rollout processes first (1 + members x (1 + rollout workers) processes in all).
--members 2 --rollout-workers 1 --rounds 2 is the smoke budget CI runs.
"""

import functools
import sys
import time
from pathlib import Path

import fibermpi
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # rl_common.py
import rl_common as rl  # noqa: E402

# The first entry of each generator's seed says what it draws, so no two streams coincide.
INITIAL, TRAINING, EVALUATION, EXPLOIT = range(4)

NAME = "pbt_port"
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


def member_round(member, options, round_, population):
    """A member's round, in a worker of the members' pool; its episodes on a pool of its own."""
    with fibermpi.Pool(options.rollout_workers) as rollouts:
        population[member] = train_round(member, population[member], options, round_,
                                         rollouts.starmap)


def run(pool, population, options, report):
    """The members are tasks of ``pool``, their states in the ``population`` dict proxy.
    Returns (the best score, rounds)."""
    best_score, round_ = float("-inf"), 0
    start = time.perf_counter()
    while round_ < options.rounds:
        round_ += 1
        pool.starmap(member_round, [(member, options, round_, population)
                                    for member in range(options.members)])
        states = [population[member] for member in range(options.members)]
        best, line = round_line(round_, states)
        best_score = states[best]["score"]
        report(line)
        if best_score >= options.target:
            break
        states, copies = exploit_and_explore(states, options, round_)
        population.update(enumerate(states))
        for copy in copies:
            report(copy)
    report(f"training took {time.perf_counter() - start:.2f} s")
    return best_score, round_


if __name__ == "__main__":
    options = rl.parse_options(__doc__.splitlines()[0], {
        "rounds": 20, "iterations": 2, "population": 16, "seed": 0},
        {"members": 4, "rollout_workers": 2})
    options.target = rl.TARGETS[ENV] if options.target is None else options.target
    if options.population % 2 != 0 or options.members < 1 or options.rollout_workers < 1:
        print(f"{NAME}: --population must be even, --members and --rollout-workers at least 1")
        raise SystemExit(2)
    with fibermpi.Manager() as manager, fibermpi.Pool(options.members) as pool:
        pool.wait_until_workers_up()  # the training time leaves their start out, as mpirun's
        population = manager.dict({member: initial_member(member, options)
                                   for member in range(options.members)})
        best_score, rounds = run(pool, population, options, functools.partial(print, flush=True))
    print(f"{NAME}: final average return {best_score!r} after {rounds} rounds", flush=True)
