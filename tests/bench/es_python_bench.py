#!/usr/bin/env python3
"""Fiber's paper's ES experiment, small, on fibermpi and its Python peers: es_python/'s scripts.

For each worker count W (default 1 and 2) each runtime's script (es_python/<runtime>_es.py, the
same OpenAI-ES on CartPole-v1, written as that runtime's users write it) runs in a subprocess of
its own: fibermpi spawning its workers and under `fibermpi run -n W+1` (static ranks), Python's
multiprocessing (fork), Uber's Fiber 0.2.1, Ray and ipyparallel. fibermpi and multiprocessing run
with the checkout's .venv/ python, the peers with .venv-peers/'s (scripts/setup --peers). Within
each repeat the runtimes alternate, so that the machine's other load falls on all of them. A
runtime that fails, runs past --timeout or is not installed is reported with its error and the
others go on; a script that printed its line and then did not exit keeps its line.

Prints a markdown table (seconds per iteration, the master's CPU per member, the episode's time,
the projected saturation worker count; es_python/es_common.py says what each means), writes every
run as a JSON line (--out) and plots seconds per iteration against the workers (--plot, needs
matplotlib: Debian's python3-matplotlib is seen by /usr/bin/python3, not by the .venv's).

Usage: es_python_bench.py [--workers 1,2] [--population 256] [--iterations 10] [--repeats 1]
                          [--runtimes fibermpi,fibermpi-static,multiprocessing,fiber,ray,
                                      ipyparallel]
                          [--timeout 600] [--out build/bench/es_python.jsonl]
                          [--plot docs/bench/es_python.png]"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import signal
import statistics
import subprocess
import sys
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPTS = pathlib.Path(__file__).resolve().parent / "es_python"
VENV = ROOT / ".venv"
PEERS_VENV = ROOT / ".venv-peers"
RUNTIMES = ["fibermpi", "fibermpi-static", "multiprocessing", "fiber", "ray", "ipyparallel"]


def command_of(runtime: str, workers: int, es_args: list[str]) -> list[str]:
    """The command line that runs `runtime`'s script with `workers` workers."""
    python = {"fiber": PEERS_VENV, "ray": PEERS_VENV, "ipyparallel": PEERS_VENV}.get(
        runtime, VENV) / "bin" / "python"
    script = "fibermpi_es.py" if runtime.startswith("fibermpi") else f"{runtime}_es.py"
    command = [str(python), script, "--workers", str(workers), *es_args]
    if runtime == "fibermpi-static":
        command = [str(VENV / "bin" / "fibermpi"), "run", "-n", str(workers + 1), *command]
    return command


def last_json_line(text: str) -> dict[str, Any] | None:
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return None
    return None


def run_once(command: list[str], timeout_s: float, env: dict[str, str]) -> dict[str, Any]:
    """One run in a session of its own (the runtime's helper processes are ended with it)."""
    missing = [part for part in command[:1] if not pathlib.Path(part).exists()]
    if missing:
        return {"error": f"not installed: {missing[0]} is missing"}
    child = subprocess.Popen(command, cwd=SCRIPTS, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    timed_out = False
    try:
        stdout, stderr = child.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(child.pid, signal.SIGKILL)
        stdout, stderr = child.communicate()
    else:
        # What the runtime left behind in the session (a worker, a daemon) goes with it.
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    row = last_json_line(stdout)
    if row is not None and timed_out:
        row["note"] = f"printed its line, then did not exit within {timeout_s:.0f} s"
    if row is not None and not timed_out and child.returncode != 0:
        row["note"] = f"printed its line, then exited with status {child.returncode}"
    if row is None:
        tail = " | ".join((stderr or stdout).strip().splitlines()[-3:])
        what = f"ran past {timeout_s:.0f} s" if timed_out else f"exit status {child.returncode}"
        row = {"error": f"{what}: {tail}"}
    return row


def median_of(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [row[key] for row in rows if row.get(key) is not None]
    return statistics.median(values) if values else None


def cell(value: float | None, scale: float = 1.0, digits: int = 3) -> str:
    return "-" if value is None else f"{value * scale:.{digits}f}"


def summarize(runs: list[dict[str, Any]], runtimes: list[str],
              worker_counts: list[int]) -> list[dict[str, Any]]:
    summary = []
    for runtime in runtimes:
        for workers in worker_counts:
            rows = [r for r in runs if r["runtime"] == runtime and r["workers"] == workers]
            good = [r for r in rows if "error" not in r]
            summary.append({
                "runtime": runtime, "workers": workers, "runs": len(rows), "ok": len(good),
                "iteration_s": median_of(good, "iteration_s_median"),
                "master_cpu_per_member_s": median_of(good, "master_cpu_per_member_s"),
                "member_s": median_of(good, "member_s"),
                "saturation_workers": median_of(good, "saturation_workers"),
                "mean_return_last": median_of(good, "mean_return_last"),
                "errors": sorted({r["error"] for r in rows if "error" in r}),
            })
    return summary


def print_table(summary: list[dict[str, Any]], args: argparse.Namespace, load: float) -> None:
    print(f"ES, population {args.population}, {args.iterations} iterations (the first left out), "
          f"medians of {args.repeats} run(s); {os.cpu_count()} cores, load {load:.1f} before "
          f"the runs.\n")
    print("| runtime | W | s / iteration | master CPU / member (µs) | episode (ms) | "
          "saturation workers | mean return, last | runs ok |")
    print("|---|---|---|---|---|---|---|---|")
    for entry in summary:
        print(f"| {entry['runtime']} | {entry['workers']} | {cell(entry['iteration_s'])} | "
              f"{cell(entry['master_cpu_per_member_s'], 1e6, 1)} | "
              f"{cell(entry['member_s'], 1e3, 2)} | {cell(entry['saturation_workers'], 1, 1)} | "
              f"{cell(entry['mean_return_last'], 1, 2)} | {entry['ok']}/{entry['runs']} |")
    for entry in summary:
        for error in entry["errors"]:
            print(f"\n{entry['runtime']} W={entry['workers']}: {error}")
    # One seed, one population: every runtime and worker count must score the same members.
    if len({e["mean_return_last"] for e in summary if e["ok"]}) > 1:
        print("\nThe runs' fitnesses differ for the same seed (mean return, last): a bug.")


def write_plot(path: pathlib.Path, summary: list[dict[str, Any]], runtimes: list[str],
               args: argparse.Namespace) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no plot: matplotlib is not installed)")
        return
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for runtime in runtimes:
        points = [(e["workers"], e["iteration_s"]) for e in summary
                  if e["runtime"] == runtime and e["iteration_s"] is not None]
        if points:
            ax.plot(*zip(*points), marker="o", label=runtime)
    ax.set_xlabel("workers")
    ax.set_ylabel("seconds per ES iteration (median)")
    ax.set_xticks(sorted({e["workers"] for e in summary}))
    ax.set_title(f"ES on CartPole-v1, population {args.population}")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--population", type=int, default=256)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--runtimes", default=",".join(RUNTIMES))
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--out", default=str(ROOT / "build" / "bench" / "es_python.jsonl"))
    parser.add_argument("--plot")
    args = parser.parse_args()
    runtimes = args.runtimes.split(",")
    unknown = [r for r in runtimes if r not in RUNTIMES]
    if unknown:
        parser.error(f"unknown runtime(s) {', '.join(unknown)} (of {', '.join(RUNTIMES)})")
    worker_counts = [int(w) for w in args.workers.split(",")]
    es_args = ["--population", str(args.population), "--iterations", str(args.iterations)]
    env = dict(os.environ)
    for name in ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM",
                 "PRTE_ALLOW_RUN_AS_ROOT", "PRTE_ALLOW_RUN_AS_ROOT_CONFIRM", "FIBER_QUIET"):
        env.setdefault(name, "1")

    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    runs = []
    with out.open("w") as lines:
        for repeat in range(args.repeats):
            for workers in worker_counts:
                for runtime in runtimes:
                    command = command_of(runtime, workers, es_args)
                    row = run_once(command, args.timeout, env)
                    row.update(bench="es_python", runtime=runtime, workers=workers,
                               population=args.population, repeat=repeat)
                    if "error" in row:
                        row["command"] = " ".join(command)
                        print(f"es_python_bench: {runtime} W={workers} run {repeat + 1}: "
                              f"{row['error']}", file=sys.stderr)
                    runs.append(row)
                    lines.write(json.dumps(row) + "\n")
                    lines.flush()
    summary = summarize(runs, runtimes, worker_counts)
    print_table(summary, args, load)
    print(f"\nwritten: {out}")
    if args.plot:
        write_plot(pathlib.Path(args.plot), summary, runtimes, args)
    return 1 if any("error" in r for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
