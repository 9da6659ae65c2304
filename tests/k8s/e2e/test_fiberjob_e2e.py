"""FiberJobs end to end: scripts/dev-cluster brings up the API server stand-in, two nodes and
fiber-controller; the real kubectl (1.27 and 1.33) does what a user does, and the tests check what the
cluster shows: pods, the launcher's ServiceAccount, Role and RoleBinding, the job's columns, scaling,
replacement with its Event, validation, the job's end and why the launcher failed, spec.config mounted
and the launcher's API access checked from inside its pod, a controller restarted mid-job and two
controllers with one leader."""

from __future__ import annotations

import json
import os
import pathlib
import re
import signal
import subprocess
import time
from typing import Any

import pytest
import requests
import yaml

from tests.support.waiting import wait_until

ROOT = pathlib.Path(__file__).resolve().parents[3]
KUBECTL_DIR = pathlib.Path("/usr/lib/google-cloud-sdk/bin")
KUBECTLS = ["1.27", "1.33"]
BUILD_DIR = pathlib.Path(os.environ.get("FIBER_BUILD_DIR", ROOT / "build"))
CONTROLLER = BUILD_DIR / "k8s/controller/fiber-controller"
SAMPLE = ROOT / "k8s/samples/fiberjob.yaml"


class Cluster:
    """A development cluster in a folder of its own, and kubectl pointed at it."""

    def __init__(self, state_dir: pathlib.Path):
        self.dir = state_dir
        self.kubeconfig = state_dir / "kubeconfig"

    def kubectl(self, version: str, *args: str, check: bool = True, stdin: str | None = None,
                timeout: float = 60) -> subprocess.CompletedProcess:
        result = subprocess.run([str(KUBECTL_DIR / f"kubectl.{version}"), *args], input=stdin,
                                capture_output=True, text=True, timeout=timeout,
                                env={**os.environ, "KUBECONFIG": str(self.kubeconfig)})
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} exited {result.returncode}: {result.stderr}")
        return result

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("1.33", "get", *args, "-o", "json").stdout)

    def pods(self, job: str, role: str | None = None) -> list[dict]:
        selector = f"fibermpi.io/job-name={job}" + (f",fibermpi.io/role={role}" if role else "")
        return self.get("pods", "-l", selector)["items"]

    def record(self) -> dict:
        return json.loads((self.dir / "cluster.json").read_text())

    def controller_pid(self) -> int:
        return int((self.dir / "pids/controller.pid").read_text())

    def start_controller(self, name: str, *extra: str) -> tuple[subprocess.Popen, str]:
        """Another fiber-controller with the cluster's controller credentials, recorded in pids/ so
        that `down` stops it too; returns it and its metrics address.

        Its ports are picked by the kernel and read from its log: a port probed free beforehand can be
        taken (by any outgoing connection) before the controller binds it."""
        log_path = self.dir / "logs" / f"{name}.log"
        log = open(log_path, "w")
        process = subprocess.Popen(
            [str(CONTROLLER), "--kubeconfig", self.record()["controller"]["kubeconfig"],
             "--health-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--identity", name,
             *extra], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        (self.dir / "pids" / f"{name}.pid").write_text(str(process.pid))

        def metrics_address() -> str | None:
            assert process.poll() is None, f"{name} exited: {log_path.read_text()}"
            match = re.search(r"serving /metrics on (\S+)", log_path.read_text())
            return match.group(1) if match else None
        return process, wait_until(f"{name} to serve /metrics", metrics_address, timeout_s=30, interval_s=0.05)


def running(pods: list[dict]) -> list[dict]:
    return [p for p in pods if p.get("status", {}).get("phase") == "Running"
            and "deletionTimestamp" not in p["metadata"]]


def metric(address: str, name: str) -> float | None:
    """A gauge of a controller's /metrics; None while it does not answer yet."""
    try:
        text = requests.get(f"http://{address}/metrics", timeout=5).text
    except requests.ConnectionError:
        return None
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in the metrics of {address}")


def sample(name: str, **workers: Any) -> str:
    job = yaml.safe_load(SAMPLE.read_text())
    job["metadata"]["name"] = name
    job["spec"]["workers"].update(workers)
    return yaml.safe_dump(job)


def launcher_script(job: dict, script: str) -> None:
    """The launcher runs `script` with the image's sh (as args: the image's init stays PID 1)."""
    job["spec"]["launcher"]["template"]["spec"]["containers"][0]["args"] = ["/bin/sh", "-c", script]


def exiting_job(name: str, code: int) -> str:
    job = yaml.safe_load(SAMPLE.read_text())
    job["metadata"]["name"] = name
    launcher_script(job, f"sleep 2; exit {code}")
    job["spec"]["workers"].update(replicas=2, minReplicas=0)
    job["spec"]["runPolicy"] = {"cleanPodPolicy": "All"}
    return yaml.safe_dump(job)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Cluster:
    if not CONTROLLER.exists():
        pytest.fail(f"{CONTROLLER} is not built")
    state_dir = tmp_path_factory.mktemp("cluster")
    up = subprocess.run([str(ROOT / "scripts/dev-cluster"), "up", str(state_dir)], capture_output=True,
                        text=True, timeout=120, env={**os.environ, "FIBER_BUILD_DIR": str(BUILD_DIR)})
    assert up.returncode == 0, up.stdout + up.stderr
    assert f"export KUBECONFIG={state_dir}/kubeconfig" in up.stdout
    try:
        yield Cluster(state_dir)
    finally:
        down = subprocess.run([str(ROOT / "scripts/dev-cluster"), "down", str(state_dir)],
                              capture_output=True, text=True, timeout=120)
        assert down.returncode == 0, down.stdout + down.stderr


@pytest.mark.parametrize("version", KUBECTLS)
def test_a_sample_job_runs_scales_and_gets_lost_workers_back(cluster: Cluster, version: str):
    name = f"sample-{version.replace('.', '')}"
    assert "created" in cluster.kubectl(version, "apply", "-f", "-", stdin=sample(name)).stdout

    def all_running() -> bool:
        pods = running(cluster.pods(name))
        roles = sorted(p["metadata"]["labels"]["fibermpi.io/role"] for p in pods)
        return roles == ["launcher", "name-service", "worker", "worker"]
    wait_until("the name service, the launcher and 2 workers running", all_running)
    job = wait_until("phase Running", lambda: (j := cluster.get("fj", name))["status"].get("phase")
                     == "Running" and j["status"]["workers"]["ready"] == 2 and j)
    assert job["status"]["nameService"]["uri"]
    conditions = {c["type"]: c for c in job["status"]["conditions"]}
    for kind in ("Created", "NameServiceReady", "LauncherRunning", "WorkersReady"):
        assert conditions[kind]["status"] == "True", conditions
        assert conditions[kind]["observedGeneration"] == job["metadata"]["generation"]

    table = cluster.kubectl(version, "get", "fj", name).stdout.splitlines()
    assert table[0].split() == ["NAME", "PHASE", "DESIRED", "READY", "MIN", "MAX", "AGE"]
    assert table[1].split()[:6] == [name, "Running", "2", "2", "1", "8"]

    # The worker pods see what the controller gave them.
    worker = running(cluster.pods(name, "worker"))[0]
    env = {e["name"]: e for e in worker["spec"]["containers"][0]["env"]}
    assert env["FIBER_NAME_SERVICE_URI"]["value"] == job["status"]["nameService"]["uri"]
    assert env["FIBER_K8S_JOB"]["value"] == name
    # The launcher runs as the job's own ServiceAccount, bound to a Role limited to the job.
    (launcher,) = cluster.pods(name, "launcher")
    assert launcher["spec"]["serviceAccountName"] == f"{name}-launcher"
    for kind in ("serviceaccount", "role", "rolebinding"):
        owned = cluster.get(kind, f"{name}-launcher")
        assert owned["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"], owned
    assert {rule["resources"][0]: rule.get("resourceNames") for rule in cluster.get("role", f"{name}-launcher")[
        "rules"]} == {"fiberjobs": [name], "configmaps": [f"{name}-release"]}

    assert "scaled" in cluster.kubectl(version, "scale", f"fj/{name}", "--replicas=4").stdout
    wait_until("4 ready workers", lambda: len(running(cluster.pods(name, "worker"))) == 4
               and cluster.get("fj", name)["status"]["workers"]["ready"] == 4)
    assert cluster.get("fj", name)["status"]["workers"]["desired"] == 4

    lost = f"{name}-worker-1"
    lost_uid = cluster.get("pod", lost)["metadata"]["uid"]
    cluster.kubectl(version, "delete", "pod", lost, "--wait=false")

    def replaced() -> bool:
        workers = running(cluster.pods(name, "worker"))
        return len(workers) == 4 and lost_uid not in {p["metadata"]["uid"] for p in workers}
    wait_until("the lost worker replaced", replaced)
    events = cluster.get("events", "--field-selector", f"involvedObject.name={name}")["items"]
    lost_events = [e for e in events if e["reason"] == "WorkerLost"]
    assert lost_events and lost_events[0]["type"] == "Warning" and lost in lost_events[0]["message"]
    assert cluster.get("fj", name)["status"]["workerReplacements"] == 1
    # Scaling above maxReplicas keeps maxReplicas.
    cluster.kubectl(version, "scale", f"fj/{name}", "--replicas=50")
    wait_until("8 workers (the maximum)", lambda: len(running(cluster.pods(name, "worker"))) == 8)
    time.sleep(1)
    assert len(cluster.pods(name, "worker")) == 8

    # Deleting the job deletes everything it owns.
    cluster.kubectl(version, "delete", "fj", name, "--wait=false")
    wait_until("every pod of the job gone", lambda: cluster.pods(name) == [], timeout_s=90)
    assert cluster.get("services", "-l", f"fibermpi.io/job-name={name}")["items"] == []
    wait_until("the launcher's account, Role and RoleBinding gone", lambda: all(
        cluster.kubectl("1.33", "get", kind, f"{name}-launcher", check=False).returncode != 0
        for kind in ("serviceaccount", "role", "rolebinding")), timeout_s=60)


@pytest.mark.parametrize("version", KUBECTLS)
def test_min_above_max_is_refused_with_both_fields_named(cluster: Cluster, version: str):
    bad = sample(f"bad-{version.replace('.', '')}", minReplicas=9)
    result = cluster.kubectl(version, "apply", "-f", "-", stdin=bad, check=False)
    assert result.returncode != 0
    assert "spec.workers.minReplicas must be less than or equal to spec.workers.maxReplicas" in result.stderr
    assert "is invalid" in result.stderr
    assert cluster.kubectl(version, "get", "fj", f"bad-{version.replace('.', '')}",
                           check=False).returncode != 0


@pytest.mark.parametrize("version", KUBECTLS)
def test_the_launcher_decides_the_end_and_pods_are_cleaned(cluster: Cluster, version: str):
    tag = version.replace(".", "")
    for name, code in ((f"ok-{tag}", 0), (f"three-{tag}", 3)):
        cluster.kubectl(version, "apply", "-f", "-", stdin=exiting_job(name, code))
    ok = wait_until("Succeeded", lambda: (j := cluster.get("fj", f"ok-{tag}"))["status"].get("phase")
                    == "Succeeded" and j)
    failed = wait_until("Failed", lambda: (j := cluster.get("fj", f"three-{tag}"))["status"].get("phase")
                        == "Failed" and j)
    succeeded = {c["type"]: c for c in ok["status"]["conditions"]}["Succeeded"]
    assert succeeded["status"] == "True"
    assert ok["status"]["launcher"]["exitCode"] == 0 and ok["status"]["completionTime"]
    failure = {c["type"]: c for c in failed["status"]["conditions"]}["Failed"]
    assert failure["status"] == "True" and "code 3" in failure["message"], failure
    assert failed["status"]["launcher"]["exitCode"] == 3
    for name in (f"ok-{tag}", f"three-{tag}"):
        wait_until(f"the pods of {name} cleaned", lambda n=name: cluster.pods(n) == [], timeout_s=60)
    table = cluster.kubectl(version, "get", "fj", f"ok-{tag}", f"three-{tag}").stdout
    assert "Succeeded" in table and "Failed" in table


# The launcher checks, from inside its pod, what the controller gave it: the mounted fiber.yaml, and an
# API access limited to its own job (read it, ask for pods in its release ConfigMap; nothing on another job,
# no delete, no write of the job or of its scale, which people and autoscalers own).
CHECKING_LAUNCHER = r"""
fail() { echo "check failed: $*" >&2; exit 9; }
test "$FIBER_CONFIG" = /etc/fibermpi/fiber.yaml || fail "FIBER_CONFIG is '$FIBER_CONFIG'"
grep -q "pool_size: 3" "$FIBER_CONFIG" || fail "no pool_size in $FIBER_CONFIG"
SA=/var/run/secrets/kubernetes.io/serviceaccount
JOBS="https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT/apis/fibermpi.io/v1alpha1/namespaces/$FIBER_K8S_NAMESPACE/fiberjobs"
code() { curl -s -o /dev/null -w '%{http_code}' --cacert "$SA/ca.crt" -H "Authorization: Bearer $(cat "$SA/token")" "$@"; }
test "$(code "$JOBS/$FIBER_K8S_JOB")" = 200 || fail "GET own job"
test "$(code -X PATCH -H 'Content-Type: application/merge-patch+json' -d '{"spec":{"replicas":2}}' \
  "$JOBS/$FIBER_K8S_JOB/scale")" = 403 || fail "PATCH of its own scale not refused"
test "$(code "$JOBS/another-job")" = 403 || fail "GET another job not refused"
test "$(code -X DELETE "$JOBS/$FIBER_K8S_JOB")" = 403 || fail "DELETE own job not refused"
# Its own job's spec is not the launcher's to write: not the worker template, not maxReplicas.
test "$(code -X PATCH -H 'Content-Type: application/merge-patch+json' \
  -d '{"spec":{"workers":{"template":{"spec":{"serviceAccountName":"default","containers":[{"name":"w","image":"x","securityContext":{"privileged":true}}]}}}}}' \
  "$JOBS/$FIBER_K8S_JOB")" = 403 || fail "PATCH of the worker template not refused"
test "$(code -X PATCH -H 'Content-Type: application/merge-patch+json' -d '{"spec":{"workers":{"maxReplicas":99}}}' \
  "$JOBS/$FIBER_K8S_JOB")" = 403 || fail "PATCH of maxReplicas not refused"
# It releases pods through its release ConfigMap: get and update (PUT) that one, nothing else.
test "$FIBER_K8S_RELEASE_CONFIG_MAP" = "$FIBER_K8S_JOB-release" || fail "FIBER_K8S_RELEASE_CONFIG_MAP is '$FIBER_K8S_RELEASE_CONFIG_MAP'"
MAPS="https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT/api/v1/namespaces/$FIBER_K8S_NAMESPACE/configmaps"
LIST=$(curl -s --cacert "$SA/ca.crt" -H "Authorization: Bearer $(cat "$SA/token")" "$MAPS/$FIBER_K8S_RELEASE_CONFIG_MAP")
LIST=$(printf '%s' "$LIST" | python3 -c 'import json, sys; m = json.load(sys.stdin); m["data"]["workersRequested"] = "2"; print(json.dumps(m))')
test "$(code -X PUT -H 'Content-Type: application/json' -d "$LIST" "$MAPS/$FIBER_K8S_RELEASE_CONFIG_MAP")" = 200 || fail "PUT of the release list"
test "$(code -X PATCH -H 'Content-Type: application/merge-patch+json' -d '{"data":{"x":"y"}}' \
  "$MAPS/$FIBER_K8S_RELEASE_CONFIG_MAP")" = 403 || fail "PATCH of the release list not refused"
test "$(code "$MAPS/$FIBER_K8S_JOB-config")" = 403 || fail "GET of another ConfigMap not refused"
echo "config and access as expected"
"""


def test_the_launcher_gets_its_config_file_and_an_account_limited_to_its_job(cluster: Cluster):
    job = yaml.safe_load(SAMPLE.read_text())
    job["metadata"]["name"] = "cfg"
    job["spec"]["config"] = "pool_size: 3\n"
    launcher_script(job, CHECKING_LAUNCHER)
    # The checks need curl, which the runtime image does not hold: this launcher runs on the
    # host's filesystem (an image podman does not have).
    job["spec"]["launcher"]["template"]["spec"]["containers"][0]["image"] = "fibermpi/e2e-host-tools"
    job["spec"]["workers"].update(replicas=1, minReplicas=0)
    job["spec"]["runPolicy"] = {"cleanPodPolicy": "None"}
    cluster.kubectl("1.33", "apply", "-f", "-", stdin=yaml.safe_dump(job))
    done = wait_until("the launcher's end", lambda: (j := cluster.get("fj", "cfg")).get("status", {}).get("phase")
                      in ("Succeeded", "Failed") and j)
    conditions = {c["type"]: c for c in done["status"]["conditions"]}
    assert done["status"]["phase"] == "Succeeded", conditions.get("Failed")
    # The launcher's request for 2 pods is in its ConfigMap; the job's replicas stay as written.
    assert cluster.get("configmap", "cfg-release")["data"]["workersRequested"] == "2"
    assert done["spec"]["workers"]["replicas"] == 1
    config_map = cluster.get("configmap", "cfg-config")
    assert config_map["data"] == {"fiber.yaml": "pool_size: 3\n"}
    for pod in cluster.pods("cfg", "worker"):
        container = pod["spec"]["containers"][0]
        assert {"name": "FIBER_CONFIG", "value": "/etc/fibermpi/fiber.yaml"} in container["env"]
        assert any(m["mountPath"] == "/etc/fibermpi" for m in container["volumeMounts"])
    cluster.kubectl("1.33", "delete", "fj", "cfg", "--wait=false")
    wait_until("the pods of cfg gone", lambda: cluster.pods("cfg") == [], timeout_s=60)


def test_why_the_launcher_failed_reaches_the_jobs_condition(cluster: Cluster):
    job = yaml.safe_load(exiting_job("why", 4))
    launcher_script(job, "echo 'fiber.yaml: unknown key pool_sise' >&2; exit 4")
    cluster.kubectl("1.33", "apply", "-f", "-", stdin=yaml.safe_dump(job))
    failed = wait_until("Failed", lambda: (j := cluster.get("fj", "why")).get("status", {}).get(
        "phase") == "Failed" and j)
    failure = {c["type"]: c for c in failed["status"]["conditions"]}["Failed"]
    assert failure["message"] == "launcher exited with code 4: fiber.yaml: unknown key pool_sise", failure
    cluster.kubectl("1.33", "delete", "fj", "why", "--wait=false")


def test_a_controller_restarted_mid_job_creates_no_duplicate(cluster: Cluster):
    name = "restart"
    cluster.kubectl("1.33", "apply", "-f", "-", stdin=sample(name, replicas=3))
    wait_until("3 workers", lambda: len(running(cluster.pods(name, "worker"))) == 3)
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in cluster.pods(name)}

    pid = cluster.controller_pid()
    os.kill(pid, signal.SIGKILL)
    wait_until("the controller gone", lambda: not pathlib.Path(f"/proc/{pid}").exists()
               or "Z" in pathlib.Path(f"/proc/{pid}/stat").read_text().split()[2])
    cluster.kubectl("1.33", "scale", f"fj/{name}", "--replicas=5")
    # The killed leader never released its Lease: the new one waits for it to expire (15 s).
    process, metrics = cluster.start_controller("controller-restarted")
    try:
        wait_until("5 workers", lambda: len(running(cluster.pods(name, "worker"))) == 5, timeout_s=60)
        time.sleep(2)
        pods = cluster.pods(name)
        names = [p["metadata"]["name"] for p in pods]
        assert len(names) == len(set(names)) == 7, names
        workers = sorted(p["metadata"]["labels"]["fibermpi.io/worker-index"]
                         for p in cluster.pods(name, "worker"))
        assert workers == ["0", "1", "2", "3", "4"]
        for pod in pods:  # the pods from before the restart were kept, not made again
            if pod["metadata"]["name"] in before:
                assert pod["metadata"]["uid"] == before[pod["metadata"]["name"]]
        assert metric(metrics, "fiber_controller_leader") == 1
    finally:
        cluster.kubectl("1.33", "delete", "fj", name, "--wait=false")
    wait_until("the pods of the job gone", lambda: cluster.pods(name) == [], timeout_s=60)
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=20)


def test_two_controllers_one_leader(cluster: Cluster):
    """The cluster's controller (or its restarted successor) leads; a second one waits, acts only
    once the leader is gone, and then does the work."""
    first, first_metrics = cluster.start_controller("controller-a")
    wait_until("controller-a leading", lambda: metric(first_metrics, "fiber_controller_leader") == 1,
               timeout_s=60)
    second, second_metrics = cluster.start_controller("controller-b")
    try:
        time.sleep(3)
        lease = cluster.get("lease", "-n", "fiber-system", "fiber-controller")
        assert lease["spec"]["holderIdentity"] == "controller-a"
        assert metric(second_metrics, "fiber_controller_leader") == 0
        name = "leader"
        cluster.kubectl("1.33", "apply", "-f", "-", stdin=sample(name, replicas=1))
        wait_until("1 worker", lambda: len(running(cluster.pods(name, "worker"))) == 1)

        first.send_signal(signal.SIGTERM)  # a graceful stop releases the Lease
        first.wait(timeout=20)
        wait_until("controller-b leading", lambda: metric(second_metrics, "fiber_controller_leader") == 1,
                   timeout_s=30)
        assert cluster.get("lease", "-n", "fiber-system", "fiber-controller")["spec"][
            "holderIdentity"] == "controller-b"
        cluster.kubectl("1.33", "scale", f"fj/{name}", "--replicas=2")
        wait_until("2 workers", lambda: len(running(cluster.pods(name, "worker"))) == 2)
        cluster.kubectl("1.33", "delete", "fj", name, "--wait=false")
        wait_until("the pods of the job gone", lambda: cluster.pods(name) == [], timeout_s=60)
    finally:
        for process in (first, second):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=20)
