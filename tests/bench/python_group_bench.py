#!/usr/bin/env python3
"""fibermpi.Group in Python beside plain mpi4py under mpirun, in one run.

- Start-up: a Group of 1, 4 and 8 members whose target meets the others in a Barrier on
  group_comm(), from start() to join()'s return (the first group of a program, whose members
  are spawned and import fibermpi, and a later one), beside the wall time of
  ``mpirun -n N python -c 'mpi4py: Barrier'`` (the same Barrier on COMM_WORLD: interpreter,
  imports, MPI_Init and MPI_Finalize included).
- Allreduce of 1 KB and 1 MB float64 numpy arrays in a Group of 2, members on static ranks
  (``fibermpi run -n 3``: rank 0 is the master) and spawned (``python``), beside the same loop
  over COMM_WORLD under plain ``mpirun -n 2``. :func:`allreduce_time` is the one loop all run.

Peers alternate within each repeat so that the machine's other load falls on all of them.
Prints markdown tables of medians and writes every row as JSON lines (--out).

Usage: .venv/bin/python tests/bench/python_group_bench.py [--repeats 3] [--out FILE]
The same file is the program each measurement runs (its first argument says which)."""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve()
PYTHON = sys.executable
BIN = pathlib.Path(PYTHON).parent
SIZES = {"1 KB": 1024, "1 MB": 1 << 20}
ITERATIONS = {"1 KB": 2000, "1 MB": 200}


def allreduce_time(comm, nbytes: int, iterations: int) -> float:
    """Median µs per Allreduce of ``nbytes`` of float64 over ``comm``: 20 rounds of
    ``iterations / 20`` calls each, after a warm-up round; every rank returns the same value
    (rank 0's rounds, broadcast)."""
    import numpy as np

    send = np.ones(nbytes // 8)
    receive = np.empty_like(send)
    per_round = max(1, iterations // 20)
    for _ in range(per_round):
        comm.Allreduce(send, receive)
    rounds = []
    for _ in range(20):
        comm.Barrier()
        start = time.perf_counter()
        for _ in range(per_round):
            comm.Allreduce(send, receive)
        rounds.append((time.perf_counter() - start) / per_round * 1e6)
    return comm.bcast(statistics.median(rounds), root=0)


# ---------------------------------------------------------------- the programs measured

def member_barrier() -> None:
    import fibermpi
    fibermpi.group_comm().Barrier()


def member_allreduce(results) -> None:
    import fibermpi
    comm = fibermpi.group_comm()
    for label, nbytes in SIZES.items():
        value = allreduce_time(comm, nbytes, ITERATIONS[label])
        if comm.Get_rank() == 0:
            results.put((label, value))


def group_startup(sizes: list[int], impl: str) -> None:
    import fibermpi
    for size in sizes:
        times = []
        for _ in range(3):  # the first spawns (or takes idle ranks), the later ones reuse
            start = time.perf_counter()
            with fibermpi.Group(size, member_barrier) as group:
                pass
            times.append(time.perf_counter() - start)
            if group.exitcodes != [0] * size:
                print(json.dumps({"error": f"group of {size}: {group.exitcodes}"}))
        print(json.dumps({"bench": "group_startup", "impl": impl, "size": size,
                          "first_s": times[0], "later_s": statistics.median(times[1:])}),
              flush=True)


def group_allreduce(impl: str) -> None:
    import fibermpi
    results = fibermpi.Queue()
    with fibermpi.Group(2, member_allreduce, args=(results,)) as group:
        pass
    if group.exitcodes != [0, 0]:
        print(json.dumps({"error": f"allreduce group: {group.exitcodes}"}))
        return
    for _ in SIZES:
        label, value = results.get(timeout=60)
        print(json.dumps({"bench": "allreduce", "impl": impl, "size": label, "us": value}),
              flush=True)


def plain_allreduce(beside: bool) -> None:
    """Over COMM_WORLD of ``mpirun -n 2``; or (``beside``) over ranks 1 and 2 of
    ``mpirun -n 3`` while rank 0 sleeps, the layout of a Group on static ranks beside its
    master."""
    from mpi4py import MPI
    world = MPI.COMM_WORLD
    impl = "mpi4py mpirun -n 3, rank 0 idle" if beside else "mpi4py mpirun -n 2"
    comm = world.Split(0 if world.Get_rank() > 0 or not beside else MPI.UNDEFINED)
    if comm != MPI.COMM_NULL:
        for label, nbytes in SIZES.items():
            value = allreduce_time(comm, nbytes, ITERATIONS[label])
            if comm.Get_rank() == 0:
                print(json.dumps({"bench": "allreduce", "impl": impl, "size": label, "us": value}),
                      flush=True)
    if beside:  # rank 0 waits without spinning, as fibermpi's master does between messages
        request = world.Ibarrier()
        while not request.Test():
            time.sleep(0.01)
    else:
        world.Barrier()


# ---------------------------------------------------------------- the driver

def mpirun_environment() -> dict[str, str]:
    environment = dict(os.environ)
    for name in ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM",
                 "PRTE_ALLOW_RUN_AS_ROOT", "PRTE_ALLOW_RUN_AS_ROOT_CONFIRM"):
        environment[name] = "1"
    return environment


def run(command: list[str], timeout: float, rows: list, failures: list, label: str) -> float:
    start = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              env=mpirun_environment())
    except subprocess.TimeoutExpired:
        failures.append(f"{label}: ran past {timeout} s")
        return float("nan")
    wall = time.monotonic() - start
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            if "error" in row:
                failures.append(f"{label}: {row['error']}")
            else:
                rows.append(row)
    if done.returncode != 0:
        failures.append(f"{label}: exit status {done.returncode}: {done.stderr.strip()[-300:]}")
    return wall


def drive(repeats: int, out: pathlib.Path | None, timeout: float) -> int:
    rows: list[dict] = []
    failures: list[str] = []
    mpirun = [str(BIN / "mpirun"), "--oversubscribe"]
    fibermpi_run = [str(BIN / "fibermpi"), "run"]
    barrier = "from mpi4py import MPI; MPI.COMM_WORLD.Barrier()"
    walls: dict[int, list[float]] = {1: [], 4: [], 8: []}
    for repeat in range(repeats):
        print(f"python_group_bench: repeat {repeat + 1} of {repeats}", file=sys.stderr)
        run([PYTHON, str(HERE), "startup", "spawned"], timeout, rows, failures, "startup spawned")
        run(fibermpi_run + ["-n", "9", PYTHON, str(HERE), "startup", "static"], timeout, rows,
            failures, "startup static")
        for size in walls:
            walls[size].append(run(mpirun + ["-n", str(size), PYTHON, "-c", barrier], timeout,
                                   rows, failures, f"mpirun -n {size}"))
        run(fibermpi_run + ["-n", "3", PYTHON, str(HERE), "allreduce", "Group static"], timeout,
            rows, failures, "allreduce static")
        run([PYTHON, str(HERE), "allreduce", "Group spawned"], timeout, rows, failures,
            "allreduce spawned")
        run(mpirun + ["-n", "2", PYTHON, str(HERE), "plain"], timeout, rows, failures,
            "allreduce mpirun")
        run(mpirun + ["-n", "3", PYTHON, str(HERE), "beside"], timeout, rows, failures,
            "allreduce mpirun beside")

    def median(bench: str, impl: str, key: str, **match) -> float | None:
        values = [row[key] for row in rows if row.get("bench") == bench and row["impl"] == impl
                  and all(row.get(k) == v for k, v in match.items())]
        return statistics.median(values) if values else None

    def show(value: float | None, digits: int = 2) -> str:
        return "failed" if value is None else f"{value:.{digits}f}"

    print("\nGroup start-up, start() to join() (s, medians), beside mpirun -n N of an mpi4py Barrier")
    print("| N | spawned, first | spawned, later | static ranks, first | static, later | mpirun -n N |")
    print("|---|---|---|---|---|---|")
    summary: dict = {"startup": {}, "allreduce": {}}
    for size, times in walls.items():
        cells = [median("group_startup", impl, key, size=size)
                 for impl in ("spawned", "static") for key in ("first_s", "later_s")]
        plain = statistics.median(times) if times else None
        summary["startup"][size] = cells + [plain]
        print(f"| {size} | " + " | ".join(show(cell) for cell in cells + [plain]) + " |")
    print("\nAllreduce in a Group of 2 (µs per call, medians) beside mpi4py under mpirun: "
          "-n 2, and ranks 1-2 of -n 3 beside an idle rank 0 (the static Group's layout)")
    print("| size | Group, static ranks | Group, spawned | mpi4py, -n 2 | mpi4py, -n 3 beside "
          "rank 0 | static / -n 3 | static / -n 2 |")
    print("|---|---|---|---|---|---|---|")
    for label in SIZES:
        static = median("allreduce", "Group static", "us", size=label)
        spawned = median("allreduce", "Group spawned", "us", size=label)
        plain = median("allreduce", "mpi4py mpirun -n 2", "us", size=label)
        beside = median("allreduce", "mpi4py mpirun -n 3, rank 0 idle", "us", size=label)
        like = static / beside if static and beside else None
        ratio = static / plain if static and plain else None
        summary["allreduce"][label] = [static, spawned, plain, beside, like, ratio]
        print(f"| {label} | {show(static)} | {show(spawned)} | {show(plain)} | {show(beside)} | "
              f"{show(like)} | {show(ratio)} |")
    for failure in failures:
        print(f"python_group_bench: {failure}", file=sys.stderr)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w") as sink:
            for row in rows:
                sink.write(json.dumps(row) + "\n")
            sink.write(json.dumps({"summary": summary, "failures": failures}) + "\n")
    return 1 if failures else 0


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "startup":
        group_startup([1, 4, 8], sys.argv[2])
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "allreduce":
        group_allreduce(sys.argv[2])
        return 0
    if len(sys.argv) > 1 and sys.argv[1] in ("plain", "beside"):
        plain_allreduce(sys.argv[1] == "beside")
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args()
    return drive(args.repeats, args.out, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
