#!/usr/bin/env python3
"""Wall time of the plain-MPI RL programs of examples/ports/ against their fibermpi ports.

For W workers: es_estool_legacy under `mpirun -n W+1` (its master and W workers) against
es_estool_port --workers W; ga_uber_legacy and ppo_spinningup_legacy under `mpirun -n W` (W SPMD
ranks) against ga_uber_port and ppo_spinningup_port --members W. The ports run as singletons:
their workers or members are spawned, so their time includes starting the MPI runtime and the
spawns, as the legacy's includes mpirun's start. Each program gets a fixed budget (a target
above 500 never stops a run early) and every run must print its final line with that budget.
Runs of a repeat go legacy, port, legacy, port... so that the machine's other load falls on both.
A run that fails or runs past --timeout is reported and the others go on.

Usage (after `. build/env.sh`, whose mpirun is the one the build used):
  rl_examples_bench.py [--build build] [--workers 1,2,4] [--repeats 3] [--iterations 20]
                       [--generations 10] [--epochs 5] [--timeout 300] [--out BUILD/bench/rl_examples.json]
Prints a markdown table of medians and writes every run and the medians as JSON."""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Above CartPole's most (500): no run stops before its budget.
UNREACHABLE_TARGET = "1000"


@dataclass
class Program:
    name: str          # the folder under examples/ports/ and the binaries' prefix
    unit: str          # the final line's unit: "after N <unit>"
    budget_flag: str   # the option that sets the budget
    size_flag: str     # the port's option for W
    master_rank: bool  # the legacy needs a rank beyond its W workers

    def commands(self, build: pathlib.Path, mpirun: str, workers: int,
                 budget: int) -> dict[str, list[str]]:
        folder = build / "examples" / "ports" / self.name
        args = [self.budget_flag, str(budget), "--target", UNREACHABLE_TARGET]
        ranks = workers + 1 if self.master_rank else workers
        return {
            "legacy": [mpirun, "--oversubscribe", "-n", str(ranks),
                       str(folder / f"{self.name}_legacy"), *args],
            "port": [str(folder / f"{self.name}_port"), self.size_flag, str(workers), *args],
        }


PROGRAMS = [
    Program("es_estool", "iterations", "--iterations", "--workers", True),
    Program("ga_uber", "generations", "--generations", "--members", False),
    Program("ppo_spinningup", "epochs", "--epochs", "--members", False),
]


def run_once(program: Program, variant: str, command: list[str], budget: int,
             timeout_s: float, env: dict[str, str]) -> dict[str, Any]:
    """One run: its wall time and loop time, or what went wrong."""
    row: dict[str, Any] = {"command": " ".join(command)}
    start = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        row["error"] = f"ran past {timeout_s:.0f} s"
        return row
    except OSError as error:
        row["error"] = str(error)
        return row
    row["wall_s"] = time.monotonic() - start
    final = re.search(rf"^{program.name}_{variant}: final average return ([0-9.]+) after "
                      rf"([0-9]+) {program.unit}$", done.stdout, re.MULTILINE)
    training = re.search(r"^training took ([0-9.]+) s$", done.stdout, re.MULTILINE)
    if done.returncode != 0 or final is None or int(final.group(2)) != budget:
        last_lines = (done.stdout + done.stderr).strip().splitlines()[-3:]
        row["error"] = f"exit status {done.returncode}, no final line after {budget} " \
                       f"{program.unit}: " + " | ".join(last_lines)
        return row
    row["final_return"] = float(final.group(1))
    if training:
        row["training_s"] = float(training.group(1))
    return row


def median_of(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [row[key] for row in rows if key in row]
    return statistics.median(values) if values else None


def cell(value: float | None) -> str:
    return "failed" if value is None else f"{value:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--generations", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--out")
    args = parser.parse_args()
    build = pathlib.Path(args.build).resolve()
    out = pathlib.Path(args.out) if args.out else build / "bench" / "rl_examples.json"
    budgets = {"es_estool": args.iterations, "ga_uber": args.generations,
               "ppo_spinningup": args.epochs}
    worker_counts = [int(w) for w in args.workers.split(",")]
    env = dict(os.environ)
    for name in ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM",
                 "PRTE_ALLOW_RUN_AS_ROOT", "PRTE_ALLOW_RUN_AS_ROOT_CONFIRM", "FIBER_QUIET"):
        env.setdefault(name, "1")

    runs: list[dict[str, Any]] = []
    load_before = os.getloadavg()[0]
    for program in PROGRAMS:
        budget = budgets[program.name]
        for workers in worker_counts:
            commands = program.commands(build, args.mpirun, workers, budget)
            for repeat in range(args.repeats):
                for variant, command in commands.items():
                    row = run_once(program, variant, command, budget, args.timeout, env)
                    row.update(program=program.name, variant=variant, workers=workers,
                               repeat=repeat, budget=budget)
                    runs.append(row)
                    if "error" in row:
                        print(f"rl_examples_bench: {program.name}_{variant} W={workers} "
                              f"run {repeat + 1}: {row['error']}", file=sys.stderr)

    medians = []
    for program in PROGRAMS:
        for workers in worker_counts:
            entry: dict[str, Any] = {"program": program.name, "workers": workers,
                                     "budget": f"{budgets[program.name]} {program.unit}"}
            for variant in ("legacy", "port"):
                rows = [r for r in runs if r["program"] == program.name
                        and r["workers"] == workers and r["variant"] == variant]
                entry[f"{variant}_wall_s"] = median_of(rows, "wall_s")
                entry[f"{variant}_training_s"] = median_of(rows, "training_s")
                entry[f"{variant}_ok"] = sum("error" not in r for r in rows)
                entry[f"{variant}_final_return"] = median_of(rows, "final_return")
            medians.append(entry)

    print(f"Medians of {args.repeats} runs, wall time of the whole program and (in brackets) "
          f"its training loop, in seconds; {os.cpu_count()} cores, load "
          f"{load_before:.1f} before the runs.\n")
    print("| program | budget | W | legacy (mpirun) | port (singleton) | port / legacy | "
          "runs ok (legacy, port) |")
    print("|---|---|---|---|---|---|---|")
    for entry in medians:
        legacy, port = entry["legacy_wall_s"], entry["port_wall_s"]
        ratio = f"{port / legacy:.2f}" if legacy and port else "-"
        print(f"| {entry['program']} | {entry['budget']} | {entry['workers']} | "
              f"{cell(legacy)} ({cell(entry['legacy_training_s'])}) | "
              f"{cell(port)} ({cell(entry['port_training_s'])}) | {ratio} | "
              f"{entry['legacy_ok']}/{args.repeats}, {entry['port_ok']}/{args.repeats} |")

    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"bench": "rl_examples", "cores": os.cpu_count(),
                               "load_before": load_before, "repeats": args.repeats,
                               "medians": medians, "runs": runs}, indent=2))
    print(f"\nwritten: {out}")
    failed = sum("error" in r for r in runs)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
