"""A Python program in each launch mode, and the bad scripts a user writes: each runs as a
program of its own, with a timeout, in an environment with no launcher or root settings."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import PYTHON, launch, run_program


@pytest.mark.parametrize("mode", ["singleton", "run1", "run4", "mpirun4"])
def test_a_program_runs_in_every_launch_mode(mode):
    done = launch(mode, "modes.py")
    assert done.returncode == 0, done.stdout
    assert done.stdout.count("MAIN ") == 1, done.stdout
    assert "OK " in done.stdout, done.stdout


@pytest.mark.parametrize("mode", ["singleton", "run4"])
def test_a_pool_at_module_level_fails_in_the_workers_instead_of_recursing(mode):
    done = launch(mode, "no_main_guard.py", timeout=90)
    assert done.returncode != 0, done.stdout
    assert "RuntimeError" in done.stdout and "if __name__ == '__main__':" in done.stdout, done.stdout


def test_a_task_whose_module_cannot_be_imported_fails_with_the_import_error():
    done = launch("singleton", "vanishing_module.py")
    assert done.returncode == 0, done.stdout
    assert "IMPORT ERROR: No module named 'short_lived'" in done.stdout, done.stdout
    assert "STILL 9" in done.stdout, done.stdout


@pytest.mark.parametrize("order", ["mpi4py-first", "fibermpi-first"])
@pytest.mark.parametrize("mode,world", [("singleton", 1), ("run4", 4)])
def test_mpi4py_and_fibermpi_in_either_import_order(order, mode, world):
    done = launch(mode, "with_mpi4py.py", order)
    assert done.returncode == 0, done.stdout
    assert f"WORLD {world} OK" in done.stdout, done.stdout


EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "python"


@pytest.mark.parametrize("example", sorted(path.name for path in EXAMPLES.glob("*.py")))
def test_the_python_examples_run(example):
    done = run_program([PYTHON, str(EXAMPLES / example)])
    assert done.returncode == 0, done.stdout
    assert "Traceback" not in done.stdout, done.stdout


def test_init_takes_the_configuration_keys():
    done = launch("singleton", "init_settings.py")
    assert done.returncode == 0, done.stdout
    assert "CONFIG ERROR:" in done.stdout and "no_such_key" in done.stdout, done.stdout
    assert "USAGE ERROR: fibermpi.init(): the runtime has already started" in done.stdout, done.stdout
    assert "EXITCODE 42" in done.stdout, done.stdout


def test_meta_gives_a_process_its_gpus_and_cores_and_refuses_what_cannot_fit():
    done = launch("singleton", "meta_resources.py", CUDA_VISIBLE_DEVICES="GPU-a,GPU-b,GPU-c,GPU-d")
    assert done.returncode == 0, done.stdout
    gpus = next(line for line in done.stdout.splitlines() if line.startswith("REPORT_GPUS "))
    assert len(gpus.split()[1].split(",")) == 2 and set(gpus.split()[1].split(",")) <= set(
        "GPU-a GPU-b GPU-c GPU-d".split()), done.stdout
    assert "REPORT_CORES 1" in done.stdout, done.stdout
    subclass = next(line for line in done.stdout.splitlines() if line.startswith("SUBCLASS GPUS "))
    assert subclass.split()[2] in "GPU-a GPU-b GPU-c GPU-d".split(), done.stdout
    assert re.search(r"REFUSED Process-\d+ asks for 1.0 EiB", done.stdout), done.stdout


@pytest.mark.parametrize("mode", ["singleton", "run4"])
def test_maxtasksperchild_gives_each_worker_a_fresh_process(mode):
    done = launch(mode, "fresh_workers.py", timeout=180)
    assert done.returncode == 0, done.stdout
    for line in ("FRESH DISTINCT True", "FRESH FIRST CALLS True", "FRESH APART FROM ORDINARY True"):
        assert line in done.stdout, done.stdout


@pytest.mark.parametrize("mode", ["singleton", "run1"])
def test_what_spawned_processes_print_reaches_the_masters_output(mode):
    done = launch(mode, "spawned_output.py")
    assert done.returncode == 0, done.stdout
    expected = ([f"member{rank}" for rank in range(3)] + [f"process{n}" for n in range(6)]
                + [f"task{n}" for n in range(4)])
    for tag in expected:
        assert f"SAID {tag}\n" in done.stdout and f"ERR {tag}\n" in done.stdout, (tag, done.stdout)
    assert "MAIN done [0, 0, 0]" in done.stdout, done.stdout


@pytest.mark.parametrize("mode", ["singleton", "run4", "mpirun4"])
def test_a_group_runs_and_restarts_in_every_launch_mode(mode):
    done = launch(mode, "group_modes.py")
    assert done.returncode == 0, done.stdout
    assert "REPORTS [(1, 0, 3, 6), (1, 1, 3, 6), (1, 2, 3, 6)]" in done.stdout, done.stdout
    assert "GROUP [0, 0, 0] 1" in done.stdout, done.stdout
