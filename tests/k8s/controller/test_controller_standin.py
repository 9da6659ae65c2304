"""fiber-controller against the API server stand-in, without nodes: the test plays the nodes by
writing pod phases through /status and the name service's log into the stand-in's log folder."""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import requests
import yaml

REPO_ROOT = Path(__file__).resolve().parents[3]
PYTHON = REPO_ROOT / ".venv" / "bin" / "python"
CRD = REPO_ROOT / "k8s" / "config" / "crd" / "bases" / "fibermpi.io_fiberjobs.yaml"
WAIT_S = 20.0
URI = "123456.0;tcp://10.244.1.5:40123"
JOBS = "/apis/fibermpi.io/v1alpha1/namespaces/default/fiberjobs"
PODS = "/api/v1/namespaces/default/pods"


def controller_binary() -> Path:
    """The fiber-controller built in FIBER_BUILD_DIR (or named by FIBER_CONTROLLER)."""
    explicit = os.environ.get("FIBER_CONTROLLER")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("FIBER_BUILD_DIR", REPO_ROOT / "build")) / "k8s" / "controller" / "fiber-controller"


def wait_for(what: str, check: Callable[[], Any], timeout: float = WAIT_S) -> Any:
    """Polls `check` until it returns something truthy; fails naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


class Cluster:
    """The stand-in: its URL and state folder, with helpers that play the nodes."""

    def __init__(self, url: str, state_dir: Path):
        self.url = url
        self.state_dir = state_dir
        self.http = requests.Session()

    def call(self, method: str, path: str, body: Any = None, content_type: str = "application/json",
             expect: tuple[int, ...] = (200, 201)) -> Any:
        """Sends a request; returns its JSON body after checking its status."""
        data = json.dumps(body) if body is not None else None
        response = self.http.request(method, self.url + path, data=data, timeout=10,
                                     headers={"Content-Type": content_type})
        assert response.status_code in expect, f"{method} {path}: {response.status_code} {response.text}"
        return response.json()

    def pods(self) -> dict[str, dict[str, Any]]:
        """The pods of namespace default by name."""
        return {pod["metadata"]["name"]: pod for pod in self.call("GET", PODS)["items"]}

    def job(self, name: str) -> dict[str, Any]:
        return self.call("GET", f"{JOBS}/{name}")

    def status(self, name: str) -> dict[str, Any]:
        return self.job(name).get("status") or {}

    def condition(self, name: str, kind: str) -> dict[str, Any]:
        for condition in self.status(name).get("conditions", []):
            if condition["type"] == kind:
                return condition
        return {}

    def events(self) -> list[tuple[str, str]]:
        return [(event["reason"], event["message"])
                for event in self.call("GET", "/api/v1/namespaces/default/events")["items"]]

    def set_phase(self, pod_name: str, phase: str, exit_code: int | None = None, log: str | None = None,
                  message: str | None = None) -> None:
        """Plays the node: the pod reaches `phase` (Running means ready), optionally with a log."""
        pod = self.pods()[pod_name]
        if log is not None:
            container = pod["spec"]["containers"][0]["name"]
            meta = pod["metadata"]
            folder = self.state_dir / "logs" / f"{meta['namespace']}_{meta['name']}_{meta['uid']}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{container}.log").write_text(log)
        status = pod.setdefault("status", {})
        status["phase"] = phase
        status["conditions"] = [{"type": "Ready", "status": "True" if phase == "Running" else "False"}]
        if exit_code is not None:
            terminated: dict[str, Any] = {"exitCode": exit_code}
            if message is not None:
                terminated["message"] = message
            status["containerStatuses"] = [{"name": "c", "state": {"terminated": terminated}}]
        self.call("PUT", f"{PODS}/{pod_name}/status", pod)

    def create_job(self, name: str, replicas: int, config: str | None = None, **run_policy: Any) -> None:
        container = {"name": "main", "image": "fibermpi/runtime:0.1.0", "command": ["sleep", "600"]}
        spec: dict[str, Any] = {"launcher": {"template": {"spec": {"containers": [container]}}},
                                "workers": {"template": {"spec": {"containers": [container]}},
                                            "replicas": replicas, "maxReplicas": 4},
                                "runPolicy": run_policy}
        if config is not None:
            spec["config"] = config
        self.call("POST", JOBS, {"apiVersion": "fibermpi.io/v1alpha1", "kind": "FiberJob",
                                 "metadata": {"name": name, "namespace": "default"}, "spec": spec})

    def get(self, path: str) -> dict[str, Any] | None:
        """The object at `path`, or None when it does not exist."""
        response = self.http.get(self.url + path, timeout=10)
        if response.status_code == 404:
            return None
        assert response.status_code == 200, f"GET {path}: {response.status_code} {response.text}"
        return response.json()


class Controller:
    """One fiber-controller process and its log."""

    def __init__(self, kubeconfig: Path, log_path: Path, identity: str, *extra: str):
        self.log_path = log_path
        self.log_file = open(log_path, "w")
        self.process = subprocess.Popen(
            [str(controller_binary()), "--kubeconfig", str(kubeconfig), "--identity", identity,
             "--health-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0",
             "--lease-duration", "3", "--renew-deadline", "2", "--retry-period", "1", *extra],
            stdout=self.log_file, stderr=subprocess.STDOUT)
        self.metrics_url = "http://" + wait_for(f"{identity} to serve /metrics", lambda: self._address("/metrics"))
        self.health_url = "http://" + wait_for(f"{identity} to serve /readyz", lambda: self._address("/healthz and /readyz"))

    def _address(self, what: str) -> str | None:
        assert self.process.poll() is None, self.log_path.read_text()
        match = re.search(rf"serving {what} on (\S+)", self.log_path.read_text())
        return match.group(1) if match else None

    def leads(self) -> bool:
        metrics = requests.get(self.metrics_url + "/metrics", timeout=5).text
        return "\nfiber_controller_leader 1\n" in metrics

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        code = self.process.wait(timeout=10)
        self.log_file.close()
        return code


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    port_file = tmp_path / "port"
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    process = subprocess.Popen(
        [str(PYTHON), "-m", "k8s.devcluster.apiserver", "--insecure", "--port", "0",
         "--port-file", str(port_file), "--state-dir", str(state_dir)],
        cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=open(tmp_path / "apiserver.log", "w"))
    try:
        port = wait_for("the API server's port", lambda: port_file.exists() and port_file.read_text().strip())
        result = Cluster(f"http://127.0.0.1:{port}", state_dir)
        result.call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                    yaml.safe_load(CRD.read_text()))
        result.call("POST", "/api/v1/namespaces", {"metadata": {"name": "fiber-system"}})
        wait_for("the FiberJob resource", lambda: result.http.get(result.url + JOBS, timeout=5).status_code == 200)
        yield result
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def kubeconfig(cluster: Cluster, tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "dev",
        "clusters": [{"name": "dev", "cluster": {"server": cluster.url}}],
        "users": [{"name": "admin", "user": {}}],
        "contexts": [{"name": "dev", "context": {"cluster": "dev", "user": "admin"}}]}))
    return path


@pytest.fixture
def controller(kubeconfig: Path, tmp_path: Path) -> Iterator[Controller]:
    running = Controller(kubeconfig, tmp_path / "controller.log", "c1")
    yield running
    assert running.stop() == 0


def start_job(cluster: Cluster, name: str, replicas: int, **run_policy: Any) -> None:
    """Creates a job and brings its name service, launcher and workers to Running."""
    cluster.create_job(name, replicas, **run_policy)
    wait_for("the name-service pod", lambda: f"{name}-nameservice" in cluster.pods())
    cluster.set_phase(f"{name}-nameservice", "Running", log=f"starting\n{URI}\n")
    expected = {f"{name}-launcher"} | {f"{name}-worker-{i}" for i in range(replicas)}
    wait_for("the launcher and the workers", lambda: expected <= set(cluster.pods()))
    for pod in sorted(expected):
        cluster.set_phase(pod, "Running")
    wait_for("phase Running", lambda: cluster.status(name).get("phase") == "Running")


def test_job_runs_replaces_a_lost_worker_and_fails_with_the_launchers_code(
        cluster: Cluster, controller: Controller) -> None:
    cluster.create_job("pi", 2)
    wait_for("the Service", lambda: cluster.http.get(cluster.url + "/api/v1/namespaces/default/services/pi",
                                                     timeout=5).status_code == 200)
    wait_for("Created", lambda: cluster.condition("pi", "Created").get("status") == "True")
    assert set(cluster.pods()) == {"pi-nameservice"}

    cluster.set_phase("pi-nameservice", "Running", log=f"starting\n{URI}\n")
    wait_for("the URI in the status", lambda: cluster.status("pi").get("nameService", {}).get("uri") == URI)
    wait_for("the launcher and 2 workers",
             lambda: set(cluster.pods()) == {"pi-nameservice", "pi-launcher", "pi-worker-0", "pi-worker-1"})
    worker = cluster.pods()["pi-worker-1"]
    env = {variable["name"]: variable for variable in worker["spec"]["containers"][0]["env"]}
    assert env["FIBER_NAME_SERVICE_URI"]["value"] == URI
    assert env["FIBER_K8S_WORKER_INDEX"]["value"] == "1"
    assert worker["metadata"]["ownerReferences"][0]["controller"] is True
    for pod in ("pi-launcher", "pi-worker-0", "pi-worker-1"):
        cluster.set_phase(pod, "Running")
    wait_for("phase Running", lambda: cluster.status("pi").get("phase") == "Running")
    assert cluster.status("pi")["workers"]["ready"] == 2

    lost_uid = cluster.pods()["pi-worker-1"]["metadata"]["uid"]
    cluster.call("DELETE", f"{PODS}/pi-worker-1")
    wait_for("a replacement worker",
             lambda: cluster.pods().get("pi-worker-1", {}).get("metadata", {}).get("uid") not in (None, lost_uid))
    wait_for("the replacement counted", lambda: cluster.status("pi").get("workerReplacements") == 1)
    assert cluster.condition("pi", "Degraded")["reason"] == "WorkerLost"
    # The Event is written after the status that records it.
    wait_for("the WorkerLost Event", lambda: any(reason == "WorkerLost" for reason, _ in cluster.events()))

    cluster.set_phase("pi-launcher", "Failed", exit_code=3)
    wait_for("phase Failed", lambda: cluster.status("pi").get("phase") == "Failed")
    assert cluster.condition("pi", "Failed")["message"] == "launcher exited with code 3"
    wait_for("running pods cleaned up", lambda: set(cluster.pods()) == {"pi-launcher"})


def test_scale_down_deletes_the_named_worker_only(cluster: Cluster, controller: Controller) -> None:
    start_job(cluster, "sc", 3)
    cluster.call("PATCH", f"{JOBS}/sc", {"spec": {"workers": {"replicas": 1, "workersToDelete": ["sc-worker-1"]}}},
                 content_type="application/merge-patch+json")
    wait_for("the named worker gone", lambda: "sc-worker-1" not in cluster.pods())
    wait_for("ScaleDownWaiting", lambda: cluster.condition("sc", "WorkersReady").get("reason") == "ScaleDownWaiting")
    assert {"sc-worker-0", "sc-worker-2"} <= set(cluster.pods())


def test_scale_down_deletes_the_workers_the_program_lists_in_its_release_config_map(
        cluster: Cluster, controller: Controller) -> None:
    """The program's way: it asks for pods in NAME-release (workersRequested, beside the replicas a
    person or an HPA set), then names the pods it gives back and lowers its request in one write (with
    the resourceVersion it read); a line that is no pod name is a warning Event and nothing else."""
    start_job(cluster, "rl", 1)
    path = "/api/v1/namespaces/default/configmaps/rl-release"
    release = cluster.get(path)
    release["data"] = {"workersToDelete": "", "workersRequested": "3"}
    cluster.call("PUT", path, release)
    wait_for("the workers asked for", lambda: {"rl-worker-1", "rl-worker-2"} <= set(cluster.pods()))
    for pod in ("rl-worker-1", "rl-worker-2"):
        cluster.set_phase(pod, "Running")
    wait_for("the request in the status", lambda: cluster.status("rl").get("workers", {}).get("requested") == 3)
    assert cluster.job("rl")["spec"]["workers"]["replicas"] == 1
    release = cluster.get(path)
    release["data"] = {"workersToDelete": "rl-worker-0\nNOT A POD\n", "workersRequested": "2"}
    cluster.call("PUT", path, release)
    wait_for("the listed worker gone", lambda: "rl-worker-0" not in cluster.pods())
    assert {"rl-worker-1", "rl-worker-2"} <= set(cluster.pods())
    wait_for("the InvalidReleaseList Event", lambda: any(
        reason == "InvalidReleaseList" and "'NOT A POD' is not a pod name" in message
        for reason, message in cluster.events()))


def test_finished_job_is_deleted_after_its_ttl(cluster: Cluster, controller: Controller) -> None:
    start_job(cluster, "ttl", 1, ttlSecondsAfterFinished=1)
    cluster.set_phase("ttl-launcher", "Succeeded", exit_code=0)
    wait_for("the job deleted",
             lambda: cluster.http.get(cluster.url + f"{JOBS}/ttl", timeout=5).status_code == 404)


def test_restarted_controller_creates_nothing_twice(cluster: Cluster, kubeconfig: Path, tmp_path: Path) -> None:
    first = Controller(kubeconfig, tmp_path / "first.log", "first")
    start_job(cluster, "rs", 2)
    uids = {name: pod["metadata"]["uid"] for name, pod in cluster.pods().items()}
    assert first.stop(signal.SIGKILL) == -signal.SIGKILL
    second = Controller(kubeconfig, tmp_path / "second.log", "second")
    wait_for("the second controller to lead", second.leads)
    cluster.call("PATCH", f"{JOBS}/rs", {"spec": {"workers": {"replicas": 3}}},
                 content_type="application/merge-patch+json")
    wait_for("a third worker", lambda: "rs-worker-2" in cluster.pods())
    after = cluster.pods()
    assert {name: after[name]["metadata"]["uid"] for name in uids} == uids
    assert "created" not in (tmp_path / "second.log").read_text().replace("created Pod rs-worker-2", "")
    assert second.stop() == 0


def test_two_controllers_one_leader_and_sigterm_hands_over(cluster: Cluster, kubeconfig: Path,
                                                           tmp_path: Path) -> None:
    one = Controller(kubeconfig, tmp_path / "one.log", "one")
    wait_for("one to lead", one.leads)
    two = Controller(kubeconfig, tmp_path / "two.log", "two")
    cluster.create_job("le", 1)
    wait_for("the name-service pod", lambda: "le-nameservice" in cluster.pods())
    assert not two.leads()
    assert "job=default/le" not in (tmp_path / "two.log").read_text()
    started = time.monotonic()
    assert one.stop() == 0
    assert time.monotonic() - started < 5
    lease = cluster.call("GET", "/apis/coordination.k8s.io/v1/namespaces/fiber-system/leases/fiber-controller")
    assert lease["spec"].get("holderIdentity") in ("", None, "two")
    wait_for("two to lead", two.leads)
    assert two.stop() == 0


def test_lost_lease_stops_reconciling_until_it_is_won_back(cluster: Cluster, controller: Controller) -> None:
    lease_path = "/apis/coordination.k8s.io/v1/namespaces/fiber-system/leases/fiber-controller"
    wait_for("c1 to lead", controller.leads)
    lease = cluster.call("GET", lease_path)
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
    lease["spec"].update({"holderIdentity": "intruder", "leaseDurationSeconds": 3600,
                          "acquireTime": now, "renewTime": now})
    # c1 renews every second: a renewal between our GET and PUT would make a conditional PUT a 409.
    # Leases take unconditional updates, and c1's own renewal then meets the conflict instead.
    del lease["metadata"]["resourceVersion"]
    cluster.call("PUT", lease_path, lease)
    wait_for("c1 to stop leading", lambda: not controller.leads())
    cluster.create_job("held", 1)
    time.sleep(1.5)  # nothing to wait for: the point is that nothing happens meanwhile
    assert "held-nameservice" not in cluster.pods()
    lease = cluster.call("GET", lease_path)
    lease["spec"]["holderIdentity"] = ""
    cluster.call("PUT", lease_path, lease)
    wait_for("c1 to lead again", controller.leads)
    wait_for("the held job's name-service pod", lambda: "held-nameservice" in cluster.pods())


def test_namespace_flag_limits_the_controller_and_readyz_follows_the_caches(
        cluster: Cluster, kubeconfig: Path, tmp_path: Path) -> None:
    cluster.call("POST", "/api/v1/namespaces", {"metadata": {"name": "other"}})
    limited = Controller(kubeconfig, tmp_path / "limited.log", "limited", "--namespace", "other",
                         "--leader-elect", "false")
    wait_for("/readyz", lambda: requests.get(limited.health_url + "/readyz", timeout=5).status_code == 200)
    assert requests.get(limited.health_url + "/healthz", timeout=5).status_code == 200
    # Ready comes with the synced caches; the workers (and the gauge) start a moment later.
    wait_for("limited to lead without an election", limited.leads)
    cluster.create_job("elsewhere", 1)
    other_job = cluster.job("elsewhere")
    other_job["metadata"] = {"name": "here", "namespace": "other"}
    cluster.call("POST", "/apis/fibermpi.io/v1alpha1/namespaces/other/fiberjobs", other_job)
    wait_for("the name-service pod in other", lambda: cluster.http.get(
        cluster.url + "/api/v1/namespaces/other/pods/here-nameservice", timeout=5).status_code == 200)
    assert "elsewhere-nameservice" not in cluster.pods()
    assert "job=default/" not in limited.log_path.read_text()
    assert limited.stop() == 0


def test_bad_kubeconfig_is_refused_with_exit_status_2(tmp_path: Path) -> None:
    result = subprocess.run([str(controller_binary()), "--kubeconfig", str(tmp_path / "missing")],
                            capture_output=True, text=True, timeout=10)
    assert result.returncode == 2
    assert "missing" in result.stderr


def test_the_uri_is_read_from_the_first_container_of_a_name_service_with_two(
        cluster: Cluster, controller: Controller) -> None:
    """A second container (a mesh's sidecar, a helper in the template): a log request naming no
    container is refused for such a pod, so the controller names the first one."""
    main = {"name": "ompi", "image": "fibermpi/runtime:0.1.0", "command": ["sleep", "600"]}
    sidecar = {"name": "sidecar", "image": "proxy:1", "command": ["sleep", "600"]}
    worker = {"name": "main", "image": "fibermpi/runtime:0.1.0", "command": ["sleep", "600"]}
    cluster.call("POST", JOBS, {
        "apiVersion": "fibermpi.io/v1alpha1", "kind": "FiberJob",
        "metadata": {"name": "two", "namespace": "default"},
        "spec": {"launcher": {"template": {"spec": {"containers": [worker]}}},
                 "workers": {"template": {"spec": {"containers": [worker]}}, "replicas": 1, "maxReplicas": 2},
                 "nameService": {"template": {"spec": {"containers": [main, sidecar]}}}}})
    wait_for("the name-service pod", lambda: "two-nameservice" in cluster.pods())
    assert [c["name"] for c in cluster.pods()["two-nameservice"]["spec"]["containers"]] == ["ompi", "sidecar"]
    cluster.set_phase("two-nameservice", "Running", log=f"starting\n{URI}\n")
    wait_for("the URI in the status", lambda: cluster.status("two").get("nameService", {}).get("uri") == URI)
    wait_for("the launcher", lambda: "two-launcher" in cluster.pods())


def test_a_pod_of_someone_else_holding_the_jobs_name_is_reported_not_adopted(
        cluster: Cluster, controller: Controller) -> None:
    """An unlabelled pod named like the job's name service: the create meets AlreadyExists, and the
    job says so (condition and Warning Event) instead of waiting without a word."""
    squatter = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nc-nameservice", "namespace": "default"},
                "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["sleep", "600"]}]}}
    cluster.call("POST", PODS, squatter)
    cluster.create_job("nc", 1)
    wait_for("NameConflict", lambda: cluster.condition("nc", "NameConflict").get("status") == "True")
    condition = cluster.condition("nc", "NameConflict")
    assert condition["reason"] == "ObjectNotOwned"
    assert "Pod nc-nameservice (no controller)" in condition["message"]
    wait_for("the ObjectNotOwned Event", lambda: any(
        reason == "ObjectNotOwned" and "nc-nameservice" in message for reason, message in cluster.events()))
    assert "ownerReferences" not in cluster.pods()["nc-nameservice"]["metadata"]
    cluster.call("DELETE", f"{PODS}/nc-nameservice")
    wait_for("the job's own name-service pod", lambda: cluster.pods().get("nc-nameservice", {}).get(
        "metadata", {}).get("ownerReferences"))
    wait_for("NameConflict False", lambda: cluster.condition("nc", "NameConflict").get("status") == "False")


RBAC = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"


def test_launcher_account_role_binding_and_config_map(cluster: Cluster, controller: Controller) -> None:
    """The launcher runs as NAME-launcher, whose Role may touch only its own job; spec.config is kept
    in NAME-config, mounted into the first container of the launcher and the workers, and rewritten
    when it changes; the launcher's termination message reaches the Failed condition."""
    start_job(cluster, "cf", 1, config="pool_size: 2\n")
    job_uid = cluster.job("cf")["metadata"]["uid"]
    account = cluster.get("/api/v1/namespaces/default/serviceaccounts/cf-launcher")
    role = cluster.get(f"{RBAC}/roles/cf-launcher")
    binding = cluster.get(f"{RBAC}/rolebindings/cf-launcher")
    for owned in (account, role, binding):
        assert owned is not None
        (owner,) = owned["metadata"]["ownerReferences"]
        assert owner["uid"] == job_uid and owner["controller"] is True
    assert role["rules"] == [
        {"apiGroups": ["fibermpi.io"], "resources": ["fiberjobs"], "resourceNames": ["cf"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cf-release"], "verbs": ["get", "update"]}]
    release = cluster.get("/api/v1/namespaces/default/configmaps/cf-release")
    assert release is not None and release["data"] == {"workersToDelete": ""}
    assert release["metadata"]["ownerReferences"][0]["uid"] == job_uid
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cf-launcher"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "cf-launcher", "namespace": "default"}]

    config_map = cluster.get("/api/v1/namespaces/default/configmaps/cf-config")
    assert config_map is not None and config_map["data"] == {"fiber.yaml": "pool_size: 2\n"}
    assert config_map["metadata"]["ownerReferences"][0]["uid"] == job_uid
    pods = cluster.pods()
    assert pods["cf-launcher"]["spec"]["serviceAccountName"] == "cf-launcher"
    assert pods["cf-launcher"]["spec"]["containers"][0]["terminationMessagePolicy"] == "FallbackToLogsOnError"
    for name in ("cf-launcher", "cf-worker-0"):
        spec = pods[name]["spec"]
        assert {"name": "fibermpi-config", "configMap": {"name": "cf-config"}} in [
            {key: volume[key] for key in ("name", "configMap") if key in volume} for volume in spec["volumes"]]
        container = spec["containers"][0]
        assert {"name": "fibermpi-config", "mountPath": "/etc/fibermpi", "readOnly": True} in container["volumeMounts"]
        assert {"name": "FIBER_CONFIG", "value": "/etc/fibermpi/fiber.yaml"} in container["env"]

    cluster.call("PATCH", f"{JOBS}/cf", {"spec": {"config": "pool_size: 3\n"}},
                 content_type="application/merge-patch+json")
    wait_for("the ConfigMap rewritten", lambda: (cluster.get("/api/v1/namespaces/default/configmaps/cf-config")
                                                 or {}).get("data") == {"fiber.yaml": "pool_size: 3\n"})

    cluster.set_phase("cf-launcher", "Failed", exit_code=1,
                      message="fiber::init: /etc/fibermpi/fiber.yaml: unknown key 'pool_sise'\n")
    wait_for("phase Failed", lambda: cluster.status("cf").get("phase") == "Failed")
    assert cluster.condition("cf", "Failed")["message"] == (
        "launcher exited with code 1: fiber::init: /etc/fibermpi/fiber.yaml: unknown key 'pool_sise'")
    # The Event follows the status write; once it is there, later passes must not record it again.
    wait_for("the LauncherFailed Event", lambda: any(reason == "LauncherFailed" for reason, _ in cluster.events()))
    time.sleep(1)
    failed_events = [reason for reason, _ in cluster.events() if reason == "LauncherFailed"]
    assert failed_events == ["LauncherFailed"]


def test_a_missing_launcher_account_role_or_binding_is_made_again(cluster: Cluster, controller: Controller) -> None:
    """Whatever removed one (a create that failed, a user), the next pass of the running job makes it
    again: without them the program's API calls get 403."""
    start_job(cluster, "ra", 1)
    for path in (f"{RBAC}/roles/ra-launcher", f"{RBAC}/rolebindings/ra-launcher",
                 "/api/v1/namespaces/default/serviceaccounts/ra-launcher"):
        old = cluster.get(path)
        assert old is not None, path
        cluster.call("DELETE", path)

        def made_again(path: str = path, old_uid: str = old["metadata"]["uid"]) -> bool:
            now = cluster.get(path)
            return now is not None and now["metadata"]["uid"] != old_uid
        wait_for(f"{path} made again", made_again)
        assert cluster.get(path)["metadata"]["ownerReferences"][0]["uid"] == cluster.job("ra")["metadata"]["uid"]
    assert cluster.status("ra").get("phase") in ("Pending", "Running")


def test_a_launcher_role_with_other_rules_is_given_the_controllers(cluster: Cluster, controller: Controller) -> None:
    """A Role made by an older controller (whose launcher could patch its whole job) or edited by hand
    gets this controller's rules back, under the controller's own RBAC (it may grant only what it
    holds)."""
    start_job(cluster, "ro", 1)
    path = f"{RBAC}/roles/ro-launcher"
    granted = cluster.get(path)["rules"]
    old = cluster.get(path)
    old["rules"] = [{"apiGroups": ["fibermpi.io"], "resources": ["fiberjobs"], "resourceNames": ["ro"],
                     "verbs": ["get", "patch"]}]
    edited = cluster.call("PUT", path, old)
    assert edited["rules"] == old["rules"], edited
    wait_for("the Role's rules restored", lambda: cluster.get(path)["rules"] == granted)
    restored = cluster.get(path)
    assert restored["metadata"]["uid"] == old["metadata"]["uid"]  # updated, not made again
    assert int(restored["metadata"]["resourceVersion"]) > int(edited["metadata"]["resourceVersion"])


def test_a_job_without_config_has_no_config_map_and_no_mount(cluster: Cluster, controller: Controller) -> None:
    start_job(cluster, "nc2", 1)
    assert cluster.get("/api/v1/namespaces/default/configmaps/nc2-config") is None
    for name in ("nc2-launcher", "nc2-worker-0"):
        container = cluster.pods()[name]["spec"]["containers"][0]
        assert "FIBER_CONFIG" not in {variable["name"] for variable in container.get("env", [])}
        assert "fibermpi-config" not in {mount["name"] for mount in container.get("volumeMounts", [])}


def test_the_join_token_secret_and_network_policy_are_the_jobs_and_made_again(
        cluster: Cluster, controller: Controller) -> None:
    """Secret NAME-join-token (a random token, mounted into the launcher and the workers only, never
    granted to the launcher's Role) and NetworkPolicy NAME (ingress from the job's pods only), both
    owned by the job and made again when deleted."""
    start_job(cluster, "jt", 1)
    job_uid = cluster.job("jt")["metadata"]["uid"]
    secret_path = "/api/v1/namespaces/default/secrets/jt-join-token"
    policy_path = "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies/jt"
    secret, policy = cluster.get(secret_path), cluster.get(policy_path)
    for owned in (secret, policy):
        assert owned is not None
        (owner,) = owned["metadata"]["ownerReferences"]
        assert owner["uid"] == job_uid and owner["controller"] is True and owner["kind"] == "FiberJob"
    token = base64.b64decode(secret["data"]["token"]).decode()
    assert re.fullmatch(r"[0-9a-f]{64}", token), token
    same_job = {"matchLabels": {"fibermpi.io/job-name": "jt"}}
    assert policy["spec"] == {"podSelector": same_job, "policyTypes": ["Ingress"],
                              "ingress": [{"from": [{"podSelector": same_job}]}]}
    pods = cluster.pods()
    for name in ("jt-launcher", "jt-worker-0"):
        spec = pods[name]["spec"]
        assert {"name": "fibermpi-join-token", "secret": {"secretName": "jt-join-token"}} in [
            {key: volume[key] for key in ("name", "secret") if key in volume} for volume in spec["volumes"]]
        container = spec["containers"][0]
        assert {"name": "FIBER_JOIN_TOKEN_FILE", "value": "/var/run/secrets/fibermpi.io/join/token"} in container["env"]
    assert "volumes" not in pods["jt-nameservice"]["spec"] or all(
        "secret" not in volume for volume in pods["jt-nameservice"]["spec"]["volumes"])
    role = cluster.get(f"{RBAC}/roles/jt-launcher")
    assert all("secrets" not in rule["resources"] for rule in role["rules"])

    # The Secret is read by name, not watched (a controller that lists or watches Secrets reads
    # them all): its deletion is found when the controller reads it again, 15 s after it last did.
    for path, within in ((secret_path, WAIT_S + 20), (policy_path, WAIT_S)):
        old_uid = cluster.get(path)["metadata"]["uid"]
        cluster.call("DELETE", path)

        def made_again(path: str = path, old_uid: str = old_uid) -> bool:
            now = cluster.get(path)
            return now is not None and now["metadata"]["uid"] != old_uid
        wait_for(f"{path} made again", made_again, within)
        assert cluster.get(path)["metadata"]["ownerReferences"][0]["uid"] == job_uid


def test_pods_the_server_refuses_are_said_in_the_status_not_retried_silently(
        cluster: Cluster, controller: Controller) -> None:
    """Pods are created with fieldValidation=Strict: a misspelt field in a template is refused
    rather than dropped. Refused workers set WorkersFailing with the server's words; a launcher
    refused as invalid fails the job."""
    good = {"name": "main", "image": "fibermpi/runtime:0.1.0", "command": ["sleep", "600"]}
    misspelt = {**good, "imagePullPolicyy": "Always"}
    cluster.call("POST", JOBS, {"apiVersion": "fibermpi.io/v1alpha1", "kind": "FiberJob",
                                "metadata": {"name": "bw", "namespace": "default"},
                                "spec": {"launcher": {"template": {"spec": {"containers": [good]}}},
                                         "workers": {"template": {"spec": {"containers": [misspelt]}},
                                                     "replicas": 1, "maxReplicas": 2}}})
    wait_for("the name-service pod", lambda: "bw-nameservice" in cluster.pods())
    cluster.set_phase("bw-nameservice", "Running", log=f"starting\n{URI}\n")
    failing = wait_for("WorkersFailing", lambda: (c := cluster.condition("bw", "WorkersFailing"))
                       and c.get("status") == "True" and c)
    assert failing["reason"] == "FailedCreate"
    assert failing["message"].startswith("the API server refused worker pod bw-worker-0 (400): ")
    assert "imagePullPolicyy" in failing["message"]
    assert "bw-worker-0" not in cluster.pods() and "bw-launcher" in cluster.pods()
    assert cluster.status("bw").get("phase") != "Failed"

    no_image = {"name": "main", "command": ["sleep", "600"]}
    cluster.call("POST", JOBS, {"apiVersion": "fibermpi.io/v1alpha1", "kind": "FiberJob",
                                "metadata": {"name": "bl", "namespace": "default"},
                                "spec": {"launcher": {"template": {"spec": {"containers": [no_image]}}},
                                         "workers": {"template": {"spec": {"containers": [good]}},
                                                     "maxReplicas": 2}}})
    wait_for("the name-service pod", lambda: "bl-nameservice" in cluster.pods())
    cluster.set_phase("bl-nameservice", "Running", log=f"starting\n{URI}\n")
    wait_for("phase Failed", lambda: cluster.status("bl").get("phase") == "Failed")
    failed = cluster.condition("bl", "Failed")
    assert failed["reason"] == "LauncherRefused"
    assert failed["message"].startswith("the API server refused launcher pod bl-launcher: ")
    assert "image" in failed["message"]


NETWORK_POLICIES = "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies"


@pytest.mark.parametrize("api_server_from", ["flag", "endpointslice"])
def test_a_namespace_that_denies_egress_gets_the_job_an_egress_policy_for_as_long_as_it_does(
        cluster: Cluster, kubeconfig: Path, tmp_path: Path, api_server_from: str) -> None:
    """NetworkPolicies add up, and one naming Egress isolates the pods it selects: the job's policy
    JOB.egress (its pods, DNS, the API server) exists exactly while another policy of the namespace
    isolates the job's egress. The API server's address comes from --api-server-egress, or else
    from EndpointSlice default/kubernetes, which the stand-in keeps as a real server does. (The
    stand-in stores policies; a network plugin enforces them.)"""
    port = cluster.url.rsplit(":", 1)[1]
    flag = ["--api-server-egress", f"127.0.0.1:{port}"] if api_server_from == "flag" else []
    controller = Controller(kubeconfig, tmp_path / "controller.log", "c1", *flag)
    job = "eg" if api_server_from == "flag" else "eg-slice"
    try:
        start_job(cluster, job, 1)
        assert cluster.get(f"{NETWORK_POLICIES}/{job}") is not None
        assert cluster.get(f"{NETWORK_POLICIES}/{job}.egress") is None
        # An ingress-only policy of the namespace changes nothing.
        cluster.call("POST", NETWORK_POLICIES, {"metadata": {"name": f"ingress-only-{job}"},
                                                "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}})
        cluster.call("POST", NETWORK_POLICIES, {"metadata": {"name": "deny-egress"},
                                                "spec": {"podSelector": {}, "policyTypes": ["Egress"]}})
        egress = wait_for("the job's egress policy", lambda: cluster.get(f"{NETWORK_POLICIES}/{job}.egress"))
        job_uid = cluster.job(job)["metadata"]["uid"]
        assert egress["metadata"]["ownerReferences"][0]["uid"] == job_uid
        same_job = {"matchLabels": {"fibermpi.io/job-name": job}}

        def selecting(*roles: str) -> dict[str, Any]:
            return {**same_job, "matchExpressions": [{"key": "fibermpi.io/role", "operator": "In",
                                                      "values": list(roles)}]}

        assert egress["spec"]["podSelector"] == selecting("launcher", "name-service", "worker")
        assert egress["spec"]["policyTypes"] == ["Egress"]
        assert egress["spec"]["egress"] == [
            {"to": [{"podSelector": same_job}]},
            {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                     "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
             "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]},
            {"to": [{"ipBlock": {"cidr": "127.0.0.1/32"}}], "ports": [{"protocol": "TCP", "port": int(port)}]}]
        # A deny of the workers' egress alone: the job's policy narrows to them (selecting the
        # launcher too would cut it off from what it may reach now).
        cluster.call("POST", NETWORK_POLICIES, {"metadata": {"name": "deny-worker-egress"},
                                                "spec": {"podSelector": {"matchLabels": {"fibermpi.io/role": "worker"}},
                                                         "policyTypes": ["Egress"]}})
        cluster.call("DELETE", f"{NETWORK_POLICIES}/deny-egress")
        wait_for("the egress policy narrowed to the workers", lambda: cluster.get(
            f"{NETWORK_POLICIES}/{job}.egress")["spec"]["podSelector"] == selecting("worker"))
        # The deny gone, the job's egress policy goes too (alone it would cut the pods off).
        cluster.call("DELETE", f"{NETWORK_POLICIES}/deny-worker-egress")
        wait_for("the job's egress policy gone", lambda: cluster.get(f"{NETWORK_POLICIES}/{job}.egress") is None)
        assert cluster.get(f"{NETWORK_POLICIES}/{job}") is not None
    finally:
        assert controller.stop() == 0
