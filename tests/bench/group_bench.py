#!/usr/bin/env python3
"""fiber::Group beside its peers, in one run: start-up of groups of 1, 4 and 8 members against
`mpirun -n N` of a plain MPI program (init, barrier, finalize) and against MPI_Comm_spawn alone
(tests/bench/spawn_loop.cc); MPI_Allreduce of 1 KB and 1 MB inside a group of 2 (members on
static ranks under mpirun -n 3, and spawned) against the same loop over MPI_COMM_WORLD under
plain `mpirun -n 2` (tests/bench/allreduce_timing.h is the one loop all of them run).
Runs alternate between the peers so that the machine's other load falls on all of them. A run
that fails or runs past --timeout is reported and the others go on.

Usage (after `. build/env.sh`, whose mpirun is the one the build used):
  group_bench.py [--build build] [--repeats 3] [--out BUILD/bench/group.json]
Prints markdown tables of medians and ratios and writes every row as JSON."""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time
from typing import Any


def run(command: list[str], timeout: float) -> tuple[list[dict[str, Any]], float, str]:
    """Runs a command; its JSON rows, its wall time and, when it failed, why."""
    start = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return [], time.monotonic() - start, f"ran past {timeout} s"
    wall = time.monotonic() - start
    rows = []
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    failed = [row["error"] for row in rows if "error" in row]
    if done.returncode != 0 or failed:
        why = "; ".join(failed) or f"exit status {done.returncode}: {done.stderr.strip()[-300:]}"
        return rows, wall, why
    return rows, wall, ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--out")
    args = parser.parse_args()
    bench = pathlib.Path(args.build) / "tests" / "bench"
    out = pathlib.Path(args.out or pathlib.Path(args.build) / "bench" / "group.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    mpi = os.environ.get("FIBER_MPI", "openmpi5")
    recovery = (["--with-ft", "ulfm", "--prtemca", "state_base_recoverable", "1"]
                if mpi == "openmpi5" else ["--enable-recovery"])
    mpirun = ["mpirun", "--oversubscribe"]
    rows: list[dict[str, Any]] = []
    failures: list[str] = []

    def take(command: list[str], label: str) -> tuple[list[dict[str, Any]], float]:
        got, wall, why = run(command, args.timeout)
        if why:
            failures.append(f"{label}: {why}")
            print(f"group_bench: {label} failed: {why}", file=sys.stderr)
        rows.extend(got)
        return got, wall

    mpirun_startup: dict[int, list[float]] = {1: [], 4: [], 8: []}
    for repeat in range(args.repeats):
        print(f"group_bench: repeat {repeat + 1} of {args.repeats}", file=sys.stderr)
        take([str(bench / "group_bench"), "1", "2000", "200"], "group_bench (spawned)")
        take(mpirun + recovery + ["-n", "3", str(bench / "group_bench"), "1", "2000", "200"],
             "group_bench (static)")
        # Plain mpirun -n 2, single-threaded and at fibermpi's thread level, and the loop on two
        # ranks of mpirun -n 3 while rank 0 idles, as the master does beside a static-rank group.
        for ranks, flags in (("2", []), ("2", ["multiple"]), ("3", ["multiple", "beside"])):
            for size, iterations in (("1024", "2000"), ("1048576", "200")):
                take(mpirun + ["-n", ranks, str(bench / "raw_allreduce"), size, iterations, *flags],
                     f"raw {size} B {' '.join(flags)}")
        for size in mpirun_startup:
            _, wall = take(mpirun + ["-n", str(size), str(bench / "raw_allreduce"), "startup"],
                           f"mpirun -n {size} start-up")
            mpirun_startup[size].append(wall)
    spawn: dict[int, float] = {}
    for size in mpirun_startup:
        got, _ = take([str(bench / "spawn_loop"), str(max(3, args.repeats)), str(size), "60"],
                      f"spawn_loop x {size}")
        for row in got:
            if "spawn_s_p50" in row:
                spawn[size] = row["spawn_s_p50"]

    def median_of(bench_name: str, impl: str, key: str, **match: Any) -> float | None:
        values = [row[key] for row in rows if row.get("bench") == bench_name
                  and row.get("impl") == impl and key in row
                  and all(row.get(k) == v for k, v in match.items())]
        return statistics.median(values) if values else None

    def show(value: float | None, digits: int = 3) -> str:
        return "failed" if value is None else f"{value:.{digits}f}"

    print("\nGroup start-up (s, medians): first group of a run, later groups, beside "
          "mpirun -n N of a plain MPI program and MPI_Comm_spawn of N alone")
    print("| N | Group, first | Group, later | mpirun -n N | MPI_Comm_spawn |")
    print("|---|---|---|---|---|")
    startup: dict[str, Any] = {}
    for size, walls in mpirun_startup.items():
        first = median_of("group_startup", "fibermpi Group spawned", "first_s", size=size)
        later = median_of("group_startup", "fibermpi Group spawned", "later_median_s", size=size)
        plain = statistics.median(walls) if walls else None
        startup[str(size)] = {"group_first_s": first, "group_later_s": later,
                              "mpirun_s": plain, "spawn_s": spawn.get(size)}
        print(f"| {size} | {show(first)} | {show(later)} | {show(plain)} | "
              f"{show(spawn.get(size))} |")

    print("\nMPI_Allreduce in a group of 2 (us per call, medians) beside plain MPI: mpirun -n 2 "
          "single-threaded and at MPI_THREAD_MULTIPLE (fibermpi's level), and 2 ranks of "
          "mpirun -n 3 beside an idle rank 0 (as the master is beside a static-rank group)")
    print("| bytes | Group, static ranks | Group, spawned | mpirun -n 2 | -n 2, multiple "
          "| -n 3, beside an idle rank | static / beside |")
    print("|---|---|---|---|---|---|---|")
    allreduce: dict[str, Any] = {}
    for size in (1024, 1 << 20):
        static = median_of("allreduce", "fibermpi Group static", "median_us", bytes=size)
        spawned = median_of("allreduce", "fibermpi Group spawned", "median_us", bytes=size)
        plain = median_of("allreduce", "raw MPI mpirun", "median_us", bytes=size)
        multiple = median_of("allreduce", "raw MPI mpirun multiple", "median_us", bytes=size)
        beside = median_of("allreduce", "raw MPI mpirun multiple beside", "median_us", bytes=size)
        ratio = static / beside if static and beside else None
        allreduce[str(size)] = {"static_us": static, "spawned_us": spawned, "plain_us": plain,
                                "plain_multiple_us": multiple, "beside_idle_rank_us": beside,
                                "static_over_beside": ratio}
        print(f"| {size} | {show(static, 2)} | {show(spawned, 2)} | {show(plain, 2)} | "
              f"{show(multiple, 2)} | {show(beside, 2)} | {show(ratio, 2)} |")
    out.write_text(json.dumps({"rows": rows, "startup": startup, "allreduce": allreduce,
                               "failures": failures}, indent=2))
    print(f"\ngroup_bench: rows in {out}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
