"""The samples as a user runs them: on the real image fibermpi/runtime:0.1.0 (scripts/images builds
it; the development cluster's nodes run its pods as podman containers), applied by kubectl in a
namespace that enforces the Pod Security Standard `restricted`. pool-demo's program grows its pool
onto worker pods and shrinks it again and the job succeeds with the program's output; the exit-code
sample fails with the launcher's code; python-es, on fibermpi/python:0.1.0, runs a Python program's
Pool on worker pods."""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
from typing import Any

import pytest

from tests.support.waiting import wait_until

ROOT = pathlib.Path(__file__).resolve().parents[3]
KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"
BUILD_DIR = pathlib.Path(os.environ.get("FIBER_BUILD_DIR", ROOT / "build"))
# The samples' images, as scripts/images tags them (the project's version).
RUNTIME_IMAGE = "fibermpi/runtime:0.1.0"
PYTHON_IMAGE = "fibermpi/python:0.1.0"
NAMESPACE = "restricted-demo"


class Cluster:
    def __init__(self, state_dir: pathlib.Path):
        self.env = {**os.environ, "KUBECONFIG": str(state_dir / "kubeconfig")}

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run([KUBECTL, *args], input=stdin, capture_output=True, text=True, timeout=60,
                              env=self.env)
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} exited {done.returncode}: {done.stderr}")
        return done

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", "-n", NAMESPACE, *args, "-o", "json").stdout)

    def finished(self, job: str, timeout_s: float) -> dict:
        return wait_until(f"{job} to finish", lambda: (j := self.get("fj", job)).get("status", {}).get("phase")
                          in ("Succeeded", "Failed") and j, timeout_s)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Cluster:
    subprocess.run(["podman", "--version"], check=True, capture_output=True)
    for name in (RUNTIME_IMAGE, PYTHON_IMAGE):
        image = subprocess.run(["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs", "image", "exists",
                                name], capture_output=True)
        if image.returncode != 0:
            pytest.fail(f"{name} is not built: run scripts/images")
    if not (BUILD_DIR / "k8s/controller/fiber-controller").exists():
        pytest.fail(f"{BUILD_DIR}/k8s/controller/fiber-controller is not built")
    state_dir = tmp_path_factory.mktemp("cluster")
    try:
        up = subprocess.run([str(ROOT / "scripts/dev-cluster"), "up", str(state_dir)], capture_output=True,
                            text=True, timeout=180, env={**os.environ, "FIBER_BUILD_DIR": str(BUILD_DIR)})
        assert up.returncode == 0, up.stdout + up.stderr
        cluster = Cluster(state_dir)
        cluster.kubectl("apply", "-f", "-", stdin=json.dumps({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": NAMESPACE, "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}}))
        yield cluster
    finally:
        down = subprocess.run([str(ROOT / "scripts/dev-cluster"), "down", str(state_dir)], capture_output=True,
                              text=True, timeout=180)
        if down.returncode != 0:
            print(f"scripts/dev-cluster down failed:\n{down.stdout}{down.stderr}")


def in_container(pod: dict) -> bool:
    return all(s.get("imageID", "").startswith("podman://sha256:") for s in pod["status"]["containerStatuses"])


def succeeded_in_containers(cluster: Cluster, job_name: str, image: str) -> tuple[str, list[dict]]:
    """Applies k8s/samples/JOB_NAME.yaml and waits for the job to succeed; checks that its launcher
    ran as a real container of `image` and that the namespace refused none of its pods (no
    FailedCreate among the job's events). The launcher's log and the job's events."""
    cluster.kubectl("apply", "-n", NAMESPACE, "-f", str(ROOT / f"k8s/samples/{job_name}.yaml"))
    job = cluster.finished(job_name, timeout_s=360)
    log = cluster.kubectl("logs", "-n", NAMESPACE, f"{job_name}-launcher", check=False).stdout
    assert job["status"]["phase"] == "Succeeded", f"{job['status']}\n{log}"
    launcher = cluster.get("pod", f"{job_name}-launcher")
    assert in_container(launcher), launcher["status"]
    assert launcher["spec"]["containers"][0]["image"] == image
    events = cluster.get("events", "--field-selector", f"involvedObject.name={job_name}")["items"]
    assert not [e for e in events if e["reason"] == "FailedCreate"], events
    return log, events


def test_pool_demo_succeeds_on_the_real_image_in_a_restricted_namespace(cluster: Cluster):
    log, _ = succeeded_in_containers(cluster, "pool-demo", RUNTIME_IMAGE)
    assert "pool resized to 8 workers" in log and "pool resized to 2 workers" in log, log
    assert re.search(r"^final loss", log, re.MULTILINE), log
    cluster.kubectl("delete", "-n", NAMESPACE, "fj", "pool-demo", "--wait=false")


def test_the_exit_code_sample_fails_with_the_launchers_code(cluster: Cluster):
    cluster.kubectl("apply", "-n", NAMESPACE, "-f", str(ROOT / "k8s/samples/fiberjob-exit-code.yaml"))
    job = cluster.finished("exit-code", timeout_s=120)
    assert job["status"]["phase"] == "Failed", job["status"]
    assert job["status"]["launcher"]["exitCode"] == 3, job["status"]
    failure = {c["type"]: c for c in job["status"]["conditions"]}["Failed"]
    assert "code 3" in failure["message"], failure


def test_the_python_es_sample_succeeds_on_the_python_image_in_a_restricted_namespace(cluster: Cluster):
    """A Python program as the launcher (the ES port of examples/python/ports/es_estool), its Pool
    of 4 on worker pods of fibermpi/python:0.1.0, every pod a real container."""
    log, events = succeeded_in_containers(cluster, "python-es", PYTHON_IMAGE)
    assert re.search(r"^iteration 5: population average \S+, mean's average return \S+$", log, re.M), log
    assert re.search(r"^es_estool_port: final average return \S+ after 5 iterations$", log, re.M), log
    # The pool's 4 workers were pods the controller made for it.
    created = {e["message"] for e in events if e["reason"] == "SuccessfulCreate"
               and e["message"].startswith("Created Pod: python-es-worker-")}
    assert len(created) >= 4, events
    cluster.kubectl("delete", "-n", NAMESPACE, "fj", "python-es", "--wait=false")
