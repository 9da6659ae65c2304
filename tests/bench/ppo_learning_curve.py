#!/usr/bin/env python3
"""PPO's learning curve on CartPole-v1: ppo_spinningup_legacy under `mpirun -n W` beside its port,
ppo_spinningup_port --members W (a fiber::Group), with one seed.

Both print one line per epoch ("epoch N: average return R over E episodes, ..."); the port runs the
legacy's SPMD body unchanged on fiber::group_comm(), so with the same seed and W the two curves
must be the same epoch for epoch, and this script fails when they are not. It runs the whole budget
(a target above 500 never stops a run early), prints a markdown table of the average return every
--every epochs, writes both curves as JSON and, where matplotlib is there, a PNG plot.

Usage (after `. build/env.sh`, whose mpirun is the one the build used):
  ppo_learning_curve.py [--build build] [--members 2] [--epochs 30] [--steps 4000] [--seed 0]
                        [--every 3] [--timeout 900] [--out BUILD/bench/ppo_learning_curve.json]
                        [--png docs/ppo_learning_curve.png] [--from-json FILE]
--from-json prints and plots the curves of an earlier run's JSON instead of running again (the plot
needs matplotlib: Debian's python3-matplotlib is seen by /usr/bin/python3, not by the .venv's)."""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
EPOCH_LINE = re.compile(r"^epoch ([0-9]+): average return ([0-9.]+) over ([0-9]+) episodes",
                        re.MULTILINE)


def run_curve(command: list[str], timeout_s: float) -> tuple[list[tuple[int, float]], float]:
    """The (epoch, average return) lines a run printed, and its wall time; exits on a failed run."""
    start = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        sys.exit(f"ppo_learning_curve: {' '.join(command)} ran past {timeout_s:.0f} s")
    wall = time.monotonic() - start
    if done.returncode != 0:
        sys.exit(f"ppo_learning_curve: {' '.join(command)} exited {done.returncode}:\n"
                 f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    curve = [(int(m.group(1)), float(m.group(2))) for m in EPOCH_LINE.finditer(done.stdout)]
    if not curve:
        sys.exit(f"ppo_learning_curve: {' '.join(command)} printed no epoch line:\n{done.stdout}")
    return curve, wall


def write_png(path: pathlib.Path, curves: dict[str, list[tuple[int, float]]], members: int,
              steps: int) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no PNG: matplotlib is not installed)")
        return
    figure, axes = plt.subplots(figsize=(6.4, 3.6))
    styles = {"legacy": {"linewidth": 3, "alpha": 0.4}, "port": {"linewidth": 1.2}}
    labels = {"legacy": f"ppo_spinningup_legacy, mpirun -n {members}",
              "port": f"ppo_spinningup_port --members {members} (fiber::Group)"}
    for variant, curve in curves.items():
        axes.plot([e for e, _ in curve], [r for _, r in curve], label=labels[variant],
                  **styles[variant])
    axes.set_xlabel(f"epoch ({steps} environment steps each)")
    axes.set_ylabel("average episode return")
    axes.set_title("PPO on CartPole-v1, same seed")
    axes.set_ylim(0, 520)
    axes.grid(alpha=0.3)
    axes.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    print(f"plot: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--members", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--every", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--out")
    parser.add_argument("--png")
    parser.add_argument("--from-json")
    args = parser.parse_args()
    if args.members < 1 or args.epochs < 1 or args.steps < args.members or args.every < 1:
        parser.error("--members, --epochs and --every must be at least 1, --steps at least --members")

    build = pathlib.Path(args.build).resolve()
    folder = build / "examples" / "ports" / "ppo_spinningup"
    budget = ["--epochs", str(args.epochs), "--steps", str(args.steps), "--seed", str(args.seed),
              "--target", "1000"]
    mpirun = os.environ.get("FIBER_MPIRUN", "mpirun")
    # mpirun refuses root without being told; a bench run as root has chosen to be.
    as_root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    commands = {
        "legacy": [mpirun, *as_root, "--oversubscribe", "-n", str(args.members),
                   str(folder / "ppo_spinningup_legacy"), *budget],
        "port": [str(folder / "ppo_spinningup_port"), "--members", str(args.members), *budget],
    }
    curves: dict[str, list[tuple[int, float]]] = {}
    walls: dict[str, float] = {}
    if args.from_json:
        earlier = json.loads(pathlib.Path(args.from_json).read_text())
        curves = {v: [(int(e), float(r)) for e, r in c] for v, c in earlier["curves"].items()}
        walls = earlier["wall_s"]
        args.members, args.steps, args.seed = earlier["members"], earlier["steps"], earlier["seed"]
    for variant, command in commands.items():
        if not args.from_json:
            curves[variant], walls[variant] = run_curve(command, args.timeout)
        print(f"{variant}: {len(curves[variant])} epochs in {walls[variant]:.1f} s", flush=True)

    same = curves["legacy"] == curves["port"]
    first_475 = next((e for e, r in curves["port"] if r >= 475), None)
    print(f"\nPPO on CartPole-v1, {args.members} members, {args.steps} steps an epoch, seed "
          f"{args.seed}; average return of the epoch's finished episodes\n")
    print("| epoch | " + " | ".join(str(e) for e, _ in curves["port"][args.every - 1::args.every])
          + " |")
    print("|---|" + "---|" * len(curves["port"][args.every - 1::args.every]))
    for variant in ("legacy", "port"):
        print(f"| {variant} | " + " | ".join(
            f"{r:.0f}" for _, r in curves[variant][args.every - 1::args.every]) + " |")
    print(f"\nsame curve epoch for epoch: {'yes' if same else 'NO'}; first epoch at 475 or more: "
          f"{first_475}")

    if not args.from_json:
        out = pathlib.Path(args.out) if args.out else build / "bench" / "ppo_learning_curve.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"members": args.members, "steps": args.steps, "seed": args.seed,
                                   "curves": curves, "wall_s": walls, "same": same,
                                   "first_epoch_at_475": first_475}, indent=1))
        print(f"JSON: {out}")
    if args.png:
        write_png(pathlib.Path(args.png), curves, args.members, args.steps)
    if not same:
        sys.exit("ppo_learning_curve: the port's curve differs from the legacy's with the same seed")


if __name__ == "__main__":
    main()
