"""The ported RL programs of examples/python/ports/ on their smoke budget: each legacy program
under mpirun and its port as ``python port.py`` print the same lines for the same seed (all but
the timing line and fibermpi's log lines, the program's name aside)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import PYTHON, run_program

PORTS = Path(__file__).resolve().parents[2] / "examples" / "python" / "ports"
MPIRUN = str(Path(PYTHON).parent / "mpirun")
# mpirun refuses root without these (the suite may run as root in a container), and this
# machine may have fewer cores than ranks.
ROOT_OPT_IN = {name: "1" for name in ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM",
                                      "PRTE_ALLOW_RUN_AS_ROOT", "PRTE_ALLOW_RUN_AS_ROOT_CONFIRM")}

# program: (legacy's ranks, the port's size options, the smoke budget)
PROGRAMS = {
    "es_estool": (3, ["--workers", "2"], ["--iterations", "2"]),
    "ga_uber": (2, ["--members", "2"], ["--generations", "2"]),
    "ppo_spinningup": (2, ["--members", "2"], ["--epochs", "2", "--steps", "1000"]),
    "pbt": (2, ["--members", "2", "--rollout-workers", "1"], ["--rounds", "2"]),
}


def figures(output: str) -> list[str]:
    """The lines a run is compared on: all but the timing line, the name left out of the final
    line."""
    lines = [line for line in output.splitlines()
             if not line.startswith(("training took ", "fibermpi "))]  # fibermpi: its log lines
    return [re.sub(r"^\w+_(legacy|port): final", "final", line) for line in lines]


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_the_port_prints_what_the_legacy_prints(program):
    ranks, sizes, budget = PROGRAMS[program]
    folder = PORTS / program
    legacy = run_program([MPIRUN, "--oversubscribe", "-n", str(ranks), PYTHON,
                          str(folder / "legacy.py"), "--seed", "3", *budget],
                         timeout=90, **ROOT_OPT_IN)
    assert legacy.returncode == 0, legacy.stdout
    port = run_program([PYTHON, str(folder / "port.py"), *sizes, "--seed", "3", *budget],
                       timeout=90)
    assert port.returncode == 0, port.stdout
    final = rf"^{program}_port: final average return \S+ after \d+ \w+$"
    assert re.search(final, port.stdout, re.M), port.stdout
    assert figures(port.stdout) == figures(legacy.stdout), \
        f"legacy:\n{legacy.stdout}\nport:\n{port.stdout}"
