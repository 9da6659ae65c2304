"""fibermpi programs under a real Slurm (scripts/dev-slurm: slurmctld, slurmd and munged of Debian's
slurm-wlm on this machine): a batch job, an allocation whose tasks are the static world, a direct
`srun --mpi=pmix` launch, a worker killed inside an allocation, `scancel`, and a Python program in a
batch job and an allocation (a pool job, and the Python ES port of examples/python/ports/). The commands run as a user runs them: PATH, HOME and SLURM_CONF,
nothing of Open MPI's. FIBERMPI, FIBER_TEST_POOL_JOB, FIBER_TEST_MPI, FIBER_TEST_VENV and DEV_SLURM
come from CTest (tests/slurm/CMakeLists.txt)."""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import time
from typing import Iterator

import pytest

FIBERMPI = os.environ["FIBERMPI"]
POOL_JOB = os.environ["FIBER_TEST_POOL_JOB"]
MPI = os.environ["FIBER_TEST_MPI"]
DEV_SLURM = os.environ["DEV_SLURM"]
RESOURCES_CHECK = os.environ["FIBER_TEST_RESOURCES_CHECK"]
# The Python package is built against Open MPI 5 (pyproject.toml's default), in .venv/.
VENV = pathlib.Path(os.environ.get("FIBER_TEST_VENV", "/nonexistent"))
PYTHON_POOL_JOB = pathlib.Path(__file__).with_name("python_pool_job.py")
ES_PORT = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "ports" / "es_estool" / "port.py"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the development Slurm needs root")


class Slurm:
    def __init__(self, directory: pathlib.Path) -> None:
        self.directory = directory
        self.environment = {"PATH": "/usr/local/bin:/usr/bin:/bin",
                            "HOME": os.environ.get("HOME", "/root"),
                            "SLURM_CONF": str(directory / "slurm.conf")}

    def run(self, *command: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(command), capture_output=True, text=True, timeout=timeout,
                              env=self.environment, cwd=self.directory)

    def job_record(self, job: str) -> dict[str, str]:
        """scontrol's fields of a job, {} once Slurm has forgotten it."""
        shown = self.run("scontrol", "-o", "show", "job", job)
        if shown.returncode != 0:
            return {}
        return dict(field.split("=", 1) for field in shown.stdout.split() if "=" in field)

    def wait_for_end(self, job: str, timeout: float = 180) -> dict[str, str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            record = self.job_record(job)
            if record.get("JobState") in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"):
                return record
            time.sleep(0.2)
        raise AssertionError(f"job {job} still {self.job_record(job).get('JobState')} after {timeout} s")

    def queue(self) -> str:
        return self.run("squeue", "-h", "-o", "%i %T").stdout.strip()


@pytest.fixture(scope="module")
def slurm() -> Iterator[Slurm]:
    # Short: Slurm's PMIx plugin keeps sockets under DIR (at most 62 characters).
    directory = pathlib.Path(tempfile.mkdtemp(prefix="fslurm-", dir="/tmp"))
    up = subprocess.run([DEV_SLURM, "up", str(directory), "--cpus", "8"], capture_output=True,
                        text=True, timeout=120)
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        yield Slurm(directory)
    finally:
        down = subprocess.run([DEV_SLURM, "down", str(directory)], capture_output=True, text=True,
                              timeout=120)
        shutil.rmtree(directory, ignore_errors=True)
        assert down.returncode == 0, down.stdout + down.stderr


def leftover_processes() -> list[str]:
    listed = subprocess.run(["pgrep", "-a", "-f", POOL_JOB], capture_output=True, text=True)
    return [line for line in listed.stdout.splitlines() if "pgrep" not in line]


def wait_without_leftovers(timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while leftover_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not leftover_processes(), leftover_processes()


def test_a_batch_job_runs_its_pool_on_the_allocation_and_reports_the_programs_status(
        slurm: Slurm) -> None:
    submitted = slurm.run("sbatch", "--parsable", "-n", "4", "-o", "batch-%j.out",
                          "--wrap", f"{FIBERMPI} run {POOL_JOB} 3")
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.strip().split(";")[0]
    record = slurm.wait_for_end(job)
    output = (slurm.directory / f"batch-{job}.out").read_text()
    # The allocation's 4 tasks are the static world; the default pool is its tasks less the master.
    assert "pool of 3 in an MPI world of 4" in output, output
    assert "100 results exact, exiting with 3" in output, output
    # Slurm sees the program's own status, not the launcher's.
    assert record["JobState"] == "FAILED" and record["ExitCode"] == "3:0", record
    wait_without_leftovers()


def test_an_allocations_tasks_are_the_static_world_of_fibermpi_run(slurm: Slurm) -> None:
    done = slurm.run("salloc", "-n", "4", FIBERMPI, "run", POOL_JOB, "0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "pool of 3 in an MPI world of 4" in done.stdout, done.stdout + done.stderr
    assert "100 results exact, exiting with 0" in done.stdout
    refused = slurm.run("salloc", "-n", "2", FIBERMPI, "run", "-n", "3", POOL_JOB, "0")
    assert refused.returncode == 2
    assert "-n 3 asks for more ranks than Slurm allocation" in refused.stderr, refused.stderr


def test_a_program_started_alone_in_an_allocation_pools_the_cpus_it_was_given(
        slurm: Slurm) -> None:
    # One task of 2 CPUs, no launcher: the program spawns its workers on this node, one per CPU
    # Slurm gave it (not one per task, which would be 0).
    done = slurm.run("salloc", "-n", "1", "-c", "2", POOL_JOB, "0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "pool of 2 in an MPI world of 1" in done.stdout, done.stdout + done.stderr
    assert "100 results exact, exiting with 0" in done.stdout
    wait_without_leftovers()


def test_a_pool_asking_for_more_than_the_allocation_is_refused(slurm: Slurm) -> None:
    # 3 CPUs on one node: a pool of 1 worker of 1 CPU runs; 3 workers of 2 CPUs, a worker of 4,
    # and a resize to 4 workers do not fit, and each says so.
    done = slurm.run("salloc", "-n", "3", RESOURCES_CHECK, "allocation", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "resources_check: OK" in done.stdout, done.stdout + done.stderr
    assert "has 3 CPUs on 1 node" in done.stdout, done.stdout


def test_a_killed_worker_inside_an_allocation_loses_nothing(slurm: Slurm) -> None:
    marker = slurm.directory / "killed-worker"
    done = slurm.run("salloc", "-n", "4", FIBERMPI, "run", POOL_JOB, "0", "--task-ms", "20",
                     "--kill-once", str(marker))
    assert done.returncode == 0, done.stdout + done.stderr
    assert marker.exists(), "no worker was killed"
    assert "100 results exact, exiting with 0" in done.stdout, done.stdout + done.stderr
    wait_without_leftovers()


def test_srun_with_pmix_starts_the_static_world_directly(slurm: Slurm) -> None:
    # No mpirun: the ranks are Slurm's. There is neither spawn nor recovery then, so the pool is
    # the static world's ranks.
    if MPI == "openmpi5":
        refused = slurm.run("salloc", "-n", "3", FIBERMPI, "run", "--srun", POOL_JOB, "0")
        assert refused.returncode == 2
        assert "fail in MPI_Init beyond 2 ranks" in refused.stderr, refused.stderr
        return
    done = slurm.run("srun", "--mpi=pmix", "-n", "4", POOL_JOB, "0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "pool of 3 in an MPI world of 4" in done.stdout, done.stdout + done.stderr
    assert "100 results exact, exiting with 0" in done.stdout
    assert "started by srun, which gives MPI neither recovery nor MPI_Comm_spawn" in done.stderr
    through_fibermpi = slurm.run("salloc", "-n", "3", FIBERMPI, "run", "--srun", POOL_JOB, "4")
    assert through_fibermpi.returncode == 4, through_fibermpi.stdout + through_fibermpi.stderr
    assert "pool of 2 in an MPI world of 3" in through_fibermpi.stdout


def test_scancel_ends_the_job_and_every_process_of_it(slurm: Slurm) -> None:
    submitted = slurm.run("sbatch", "--parsable", "-n", "3", "-o", "cancel-%j.out", "--wrap",
                          f"{FIBERMPI} run {POOL_JOB} 0 --task-ms 500 --tasks 100000")
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.strip().split(";")[0]
    output = slurm.directory / f"cancel-{job}.out"
    deadline = time.monotonic() + 120
    while "pool of" not in (output.read_text() if output.exists() else ""):
        assert time.monotonic() < deadline, "the job's pool never started"
        time.sleep(0.2)
    cancelled_at = time.monotonic()
    assert slurm.run("scancel", job).returncode == 0
    record = slurm.wait_for_end(job, timeout=60)
    assert record["JobState"] == "CANCELLED", record
    wait_without_leftovers()
    assert time.monotonic() - cancelled_at < 30
    assert re.search(rf"^{job} ", slurm.queue(), re.M) is None


@pytest.mark.skipif(MPI != "openmpi5", reason="the Python package is built against Open MPI 5")
def test_a_python_program_runs_as_a_batch_job_and_in_an_allocation(slurm: Slurm) -> None:
    fibermpi, python = VENV / "bin" / "fibermpi", VENV / "bin" / "python"
    submitted = slurm.run("sbatch", "--parsable", "-n", "4", "-o", "python-%j.out", "--wrap",
                          f"{fibermpi} run {python} {PYTHON_POOL_JOB} 3")
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.strip().split(";")[0]
    record = slurm.wait_for_end(job)
    output = (slurm.directory / f"python-{job}.out").read_text()
    # Rank 0 runs the program's main; the allocation's 3 other tasks are the pool's workers.
    assert "python pool of 3 workers" in output, output
    assert "100 python results exact, exiting with 3" in output, output
    assert record["JobState"] == "FAILED" and record["ExitCode"] == "3:0", record
    done = slurm.run("salloc", "-n", "3", str(fibermpi), "run", str(python), str(PYTHON_POOL_JOB), "0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "python pool of 2 workers" in done.stdout, done.stdout + done.stderr
    assert "100 python results exact, exiting with 0" in done.stdout, done.stdout


@pytest.mark.skipif(MPI != "openmpi5", reason="the Python package is built against Open MPI 5")
def test_the_python_es_port_runs_as_a_batch_job_and_in_an_allocation(slurm: Slurm) -> None:
    fibermpi, python = VENV / "bin" / "fibermpi", VENV / "bin" / "python"
    port = [str(ES_PORT), "--workers", "3", "--iterations", "2"]
    submitted = slurm.run("sbatch", "--parsable", "-n", "4", "-o", "es-%j.out", "--wrap",
                          " ".join([str(fibermpi), "run", str(python), *port]))
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.strip().split(";")[0]
    record = slurm.wait_for_end(job)
    batch = (slurm.directory / f"es-{job}.out").read_text()
    assert record["JobState"] == "COMPLETED", (record, batch)
    allocated = slurm.run("salloc", "-n", "4", str(fibermpi), "run", str(python), *port)
    assert allocated.returncode == 0, allocated.stdout + allocated.stderr

    def figures(output: str) -> list[str]:
        return [line for line in output.splitlines()
                if line.startswith(("iteration ", "es_estool_port: final"))]
    # Rank 0 runs the ES loop, the allocation's 3 other tasks evaluate: the same seed gives the
    # same figures in both (and as a singleton: fitnesses depend on solution and seed alone).
    assert len(figures(batch)) == 3, batch
    assert figures(allocated.stdout) == figures(batch), allocated.stdout + "\n----\n" + batch
