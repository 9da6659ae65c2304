"""Shared helpers of the Python front end's tests.

The API tests run in the pytest process itself, which is fibermpi's master (its workers are
spawned, or are the other ranks when the suite runs under ``fibermpi run -n 4``); programs that
must be a master of their own (launch modes, faults, bad scripts) run in a subprocess with a
timeout, as a user would run them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"
# The interpreter of the virtual environment the package is installed in (scripts/setup: .venv).
PYTHON = sys.executable
FIBERMPI = str(Path(sys.executable).parent / "fibermpi")


def clean_environment(**extra: str) -> dict[str, str]:
    """The environment of a program run as a user runs it: no launcher's variables (this suite
    may itself run under one), no FIBER_* settings of the caller."""
    dropped = ("OMPI_", "PMIX_", "PRTE_", "PMI_", "FIBER_", "SLURM_", "HYDRA_", "MPI_LOCALNRANKS")
    environment = {name: value for name, value in os.environ.items() if not name.startswith(dropped)}
    # Nothing about running as root either: the README's commands work as root without it.
    environment.update({"PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"})
    environment.update(extra)
    return environment


def run_program(words: list[str], timeout: float = 120, **extra: str) -> subprocess.CompletedProcess:
    """Runs a program to its end (killing it after ``timeout`` s: a hang fails the test with its
    output); stdout and stderr together."""
    try:
        return subprocess.run(words, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=timeout, env=clean_environment(**extra), cwd=PROGRAMS,
                              start_new_session=True)
    except subprocess.TimeoutExpired as expired:
        output = expired.output or ""
        if isinstance(output, bytes):
            output = output.decode(errors="replace")
        pytest.fail(f"{' '.join(words)} did not end within {timeout} s; its output:\n{output}")


def launch(mode: str, program: str, *args: str, timeout: float = 120, **extra: str) -> subprocess.CompletedProcess:
    """``programs/<program>`` in launch mode ``mode``: "singleton" (python prog.py),
    "run1"/"run4" (fibermpi run -n 1/4 python prog.py), "mpirun4" (Open MPI 5's mpirun -n 4)."""
    script = str(PROGRAMS / program)
    if mode == "singleton":
        words = [PYTHON, script, *args]
    elif mode.startswith("run"):
        words = [FIBERMPI, "run", "-n", mode[3:], PYTHON, script, *args]
    elif mode.startswith("mpirun"):
        # Open MPI 5's own launcher with the README's recovery options; as root it needs the
        # opt-in variables that fibermpi run does without.
        words = [str(Path(PYTHON).parent / "mpirun"), "--oversubscribe", "--with-ft", "ulfm",
                 "--prtemca", "state_base_recoverable", "1", "-n", mode[6:], PYTHON, script, *args]
        extra = {**{name: "1" for name in ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM",
                                            "PRTE_ALLOW_RUN_AS_ROOT", "PRTE_ALLOW_RUN_AS_ROOT_CONFIRM")},
                 **extra}
    else:
        raise ValueError(mode)
    return run_program(words, timeout=timeout, **extra)
