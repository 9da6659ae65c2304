"""A Python program as the launcher of a FiberJob on the development cluster, with the fibermpi
package built against Open MPI 4.1 (Kubernetes mode needs its ompi-server) in .venv-openmpi4/,
which scripts/setup installs the way users install it (`FIBER_MPI=openmpi4 pip install .`): a Pool
on worker pods loses no result when two pods are force-killed mid-map, and the PPO port of
examples/python/ports/ runs as a Group across worker pods, printing what its legacy mpi4py program
prints under mpirun.

Pods whose image the development cluster does not hold run on this machine's filesystem, so the
launcher's command names the virtual environment's python; the worker pods run the same command."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import time

import pytest

from test_k8s_runtime import (Cluster, PodRecorder, cluster, fiberjob, succeeded,  # noqa: F401
                              wait_until, workers_in)

ROOT = pathlib.Path(__file__).resolve().parents[3]
PYTHON = ROOT / ".venv-openmpi4" / "bin" / "python"
PROGRAM = pathlib.Path(__file__).resolve().parent / "k8s_python_program.py"
PPO = ROOT / "examples" / "python" / "ports" / "ppo_spinningup"
ROOT_OPT_IN = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


@pytest.fixture(scope="module", autouse=True)
def python_environment() -> None:
    if not PYTHON.exists():
        pytest.fail(f"{PYTHON} does not exist: scripts/setup installs fibermpi for Open MPI 4.1 there")


def test_a_python_pool_loses_nothing_when_two_worker_pods_are_force_killed_mid_map(cluster: Cluster):
    name = "py-loss"
    cluster.kubectl("apply", "-f", "-", stdin=fiberjob(
        name, "", config="pod_idle_timeout: 1s\n", command=[str(PYTHON), str(PROGRAM), "loss"]))
    wait_until("4 workers ready", lambda: "4 workers ready" in cluster.log(f"{name}-launcher"), timeout_s=120)
    first = sorted(pod["metadata"]["name"] for pod in cluster.pods(name, "worker"))
    assert len(first) == 4, first
    time.sleep(1.5)  # the map is under way (2,000 tasks of 10 ms on 4 workers: about 5 s)
    for pod in first[:2]:
        cluster.kubectl("delete", "pod", pod, "--grace-period=0", "--force", "--wait=false")
    log = succeeded(cluster, name)
    assert "FAIL" not in log, log
    mapped = workers_in(log, "map of 2000")
    assert sum(mapped.values()) == 2000, log
    # Four workers to begin with, two killed: the map finished on the two left and on any
    # replacement pod (which may reuse a deleted pod's name, never its process).
    assert all(worker.split("/")[0].startswith(f"{name}-worker-") for worker in mapped), log
    assert len(mapped) >= 5, f"no replacement pod took tasks: {mapped}"
    assert "heartbeat timeout" not in log, log


def figures(output: str) -> list[str]:
    """The lines a port and its legacy program are compared on (as tests/python/test_ports.py
    does): all but the timing line and fibermpi's log lines, the program's name left out."""
    lines = [line for line in output.splitlines() if not line.startswith(("training took ", "fibermpi "))]
    return [re.sub(r"^\w+_(legacy|port): final", "final", line) for line in lines]


def test_the_ppo_port_runs_as_a_group_across_worker_pods_and_prints_what_its_legacy_prints(cluster: Cluster):
    name = "py-ppo"
    budget = ["--seed", "3", "--epochs", "2", "--steps", "1000"]
    recorder = PodRecorder(cluster, name)
    cluster.kubectl("apply", "-f", "-", stdin=fiberjob(
        name, "", command=[str(PYTHON), str(PPO / "port.py"), "--members", "2", *budget]))
    log = succeeded(cluster, name, recorder, timeout_s=300)
    # One member a worker pod (slotsPerWorker 1): the group's communicator spans two pods.
    assert recorder.most_at_once == 2, recorder.first_seen
    assert all(pod.startswith(f"{name}-worker-") for pod in recorder.first_seen), recorder.first_seen
    assert re.search(r"^ppo_spinningup_port: final average return \S+ after \d+ \w+$", log, re.M), log
    legacy = subprocess.run(["/usr/bin/mpirun", "--oversubscribe", "-n", "2", str(PYTHON),
                             str(PPO / "legacy.py"), *budget],
                            capture_output=True, text=True, timeout=120, env={**os.environ, **ROOT_OPT_IN})
    assert legacy.returncode == 0, legacy.stdout + legacy.stderr
    # Two ranks: an Allreduce sums two numbers, in either order the same, so bit for bit.
    assert figures(log) == figures(legacy.stdout), f"legacy:\n{legacy.stdout}\nport on pods:\n{log}"

