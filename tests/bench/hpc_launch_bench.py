"""Launch figures of the fibermpi command and of Slurm (scripts/dev-slurm), side by side in one run:

  run-overhead   `fibermpi run -n 2 pool_job` against the same mpirun command line typed by hand
                 (what `fibermpi run --dry-run` prints), alternating; and `--dry-run` alone (finding
                 the program's MPI and its mpirun)
  pool-start     `fibermpi run -n 4 pool_job --stamp` outside Slurm against the same inside
                 `salloc -n 4`: from the command's start to a first task's result
  submit         `sbatch -n 4 --wrap "fibermpi run pool_job --stamp"`: from the submission to a
                 first task's result, and to the job's end

Each program run maps one task over a pool of the static world's ranks (no spawn; outside Slurm
the default pool is this machine's cores, inside the allocation's tasks less one). Medians of
--repeats runs. Needs root (the development Slurm).

Usage: hpc_launch_bench.py [--build-dir build] [--repeats 7] [--out BUILD/bench/hpc_launch.json]"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shlex
import statistics
import subprocess
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]


def clean_environment(**extra: str) -> dict[str, str]:
    environment = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")}
    environment.update(extra)
    return environment


def timed(command: list[str], environment: dict[str, str], cwd: pathlib.Path | None = None) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=environment, cwd=cwd, timeout=300)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{shlex.join(command)} failed ({done.returncode}): {done.stdout[-400:]} {done.stderr[-400:]}")
    return elapsed, done.stdout


def first_task_at(output: str) -> float:
    for line in output.splitlines():
        if "first task" in line and " done at " in line:
            return float(line.rsplit(" ", 1)[1])
    raise RuntimeError(f"no first-task stamp in: {output[-400:]}")


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": len(values)}


def hand_typed(tool: str, program_args: list[str], environment: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """The command line and variables `fibermpi run --dry-run` prints, to run without the tool."""
    shown = subprocess.run([tool, "run", "--dry-run", *program_args], capture_output=True, text=True,
                           env=environment, check=True).stdout.strip()
    words = shlex.split(shown.replace(':"$PATH"', ":" + environment["PATH"]))
    variables = dict(environment)
    while words and "=" in words[0] and not words[0].startswith("/"):
        name, value = words.pop(0).split("=", 1)
        variables[name] = value
    return words, variables


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out")
    args = parser.parse_args()
    build = (ROOT / args.build_dir).resolve()
    tool = str(build / "tools/fibermpi/fibermpi")
    program = str(build / "tests/tool/pool_job")
    environment = clean_environment()
    figures: dict[str, dict[str, float]] = {}

    job = [program, "0", "--tasks", "1", "--stamp"]
    # A pool of the one worker rank: nothing spawned.
    small_job = [*job, "--processes", "1"]
    mpirun_words, mpirun_environment = hand_typed(tool, ["-n", "2", *small_job], environment)
    direct, through, dry = [], [], []
    for _ in range(args.repeats):
        direct.append(timed(mpirun_words, mpirun_environment)[0])
        through.append(timed([tool, "run", "-n", "2", *small_job], environment)[0])
        dry.append(timed([tool, "run", "--dry-run", "-n", "2", *small_job], environment)[0])
    figures["mpirun by hand, -n 2 (s)"] = summary(direct)
    figures["fibermpi run, -n 2 (s)"] = summary(through)
    figures["fibermpi run --dry-run (s)"] = summary(dry)

    directory = pathlib.Path(tempfile.mkdtemp(prefix="fbench-", dir="/tmp"))
    dev_slurm = str(ROOT / "scripts/dev-slurm")
    subprocess.run([dev_slurm, "up", str(directory), "--cpus", "8"], check=True, capture_output=True, timeout=120)
    try:
        slurm_environment = clean_environment(SLURM_CONF=str(directory / "slurm.conf"))
        outside, inside, submit_to_task, submit_to_end = [], [], [], []
        for i in range(args.repeats):
            start = time.time()
            _, output = timed([tool, "run", "-n", "4", *job], environment)
            outside.append(first_task_at(output) - start)
            start = time.time()
            _, output = timed(["salloc", "-n", "4", tool, "run", *job], slurm_environment, directory)
            inside.append(first_task_at(output) - start)
            log = directory / f"submit-{i}.out"
            start = time.time()
            submitted = subprocess.run(["sbatch", "--parsable", "-n", "4", "-o", str(log), "--wrap",
                                        shlex.join([tool, "run", *job])], capture_output=True, text=True,
                                       env=slurm_environment, cwd=directory, check=True)
            job_id = submitted.stdout.strip().split(";")[0]
            while subprocess.run(["squeue", "-h", "-j", job_id], capture_output=True, text=True,
                                 env=slurm_environment).stdout.strip():
                time.sleep(0.05)
            submit_to_end.append(time.time() - start)
            submit_to_task.append(first_task_at(log.read_text()) - start)
        figures["first task, fibermpi run -n 4 outside Slurm (s)"] = summary(outside)
        figures["first task, salloc -n 4 fibermpi run (s)"] = summary(inside)
        figures["first task, sbatch -n 4 submit (s)"] = summary(submit_to_task)
        figures["job end, sbatch -n 4 submit (s)"] = summary(submit_to_end)
    finally:
        subprocess.run([dev_slurm, "down", str(directory)], capture_output=True, timeout=120)

    print(f"| figure ({args.repeats} runs, {os.cpu_count()} cores) | median | min | max |")
    print("|---|---|---|---|")
    for name, values in figures.items():
        print(f"| {name} | {values['median']:.3f} | {values['min']:.3f} | {values['max']:.3f} |")
    out = pathlib.Path(args.out) if args.out else build / "bench/hpc_launch.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2))
    print(f"JSON: {out}")


if __name__ == "__main__":
    main()
