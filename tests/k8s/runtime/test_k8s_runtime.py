"""A fibermpi program as the launcher of a FiberJob on the development cluster: its pools ask the
job for worker pods, the pods' MPI jobs join through the job's name service, shrinking releases
chosen pods, lost pods cost only a few tasks run again, and the launcher's end is the job's end.

The program (tests/k8s/runtime/k8s_pool_test.cc) checks every result's value and prints which pods
computed them; this file checks what the cluster shows."""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import re
import signal
import subprocess
import threading
import time
from typing import Any, Callable, Iterator

import pytest
import yaml

from tests.support.waiting import wait_until

ROOT = pathlib.Path(__file__).resolve().parents[3]
KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"
BUILD_DIR = pathlib.Path(os.environ.get("FIBER_BUILD_DIR", ROOT / "build-openmpi4"))
PROGRAM = os.environ.get("K8S_POOL_TEST", str(BUILD_DIR / "tests/k8s/runtime/k8s_pool_test"))
# Short timeouts so that a loss or an idle pod shows within the test's patience.
FAST_CONFIG = "heartbeat_timeout: 2s\npod_idle_timeout: 1s\n"


class Cluster:
    def __init__(self, state_dir: pathlib.Path):
        self.dir = state_dir
        self.env = {**os.environ, "KUBECONFIG": str(state_dir / "kubeconfig")}

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True) -> str:
        result = subprocess.run([KUBECTL, *args], input=stdin, capture_output=True, text=True,
                                timeout=60, env=self.env)
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} exited {result.returncode}: {result.stderr}")
        return result.stdout

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json"))

    def job(self, name: str) -> dict:
        return self.get("fiberjob", name)

    def pods(self, job: str, role: str) -> list[dict]:
        return self.get("pods", "-l", f"fibermpi.io/job-name={job},fibermpi.io/role={role}")["items"]

    def log(self, pod: str) -> str:
        return self.kubectl("logs", pod, check=False)

    def stacks(self) -> str:
        """Every thread's stack in every process of every running pod (gdb), with the process tree:
        what a test prints when a pod waits silently, so that a hang names where it waits."""
        pid_dir = self.dir / "nodes" / "pids" / "pods"
        children: dict[int, list[int]] = {}
        for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
        report = []
        for pid_file in sorted(pid_dir.glob("*")) if pid_dir.is_dir() else []:
            try:
                tree = [int(pid_file.read_text().strip())]
            except (OSError, ValueError):
                continue
            for pid in tree:
                tree.extend(children.get(pid, []))
            for pid in tree:
                try:
                    command = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                except OSError:
                    continue
                dump = subprocess.run(["gdb", "-p", str(pid), "-batch", "-nx", "-ex", "thread apply all bt"],
                                      capture_output=True, text=True, timeout=60, check=False)
                threads = [line for line in dump.stdout.splitlines() if line.startswith(("Thread ", "#"))]
                report.append(f"=== pod {pid_file.name}, pid {pid}: {command}\n" + "\n".join(threads))
        return "\n".join(report) or f"no pod processes under {pid_dir}"


@contextlib.contextmanager
def dev_cluster(state_dir: pathlib.Path, *up_options: str) -> Iterator[Cluster]:
    """A development cluster in `state_dir` (`scripts/dev-cluster up DIR UP_OPTIONS...`) with the
    build's controller, stopped afterwards."""
    controller = BUILD_DIR / "k8s/controller/fiber-controller"
    if not controller.exists():
        pytest.fail(f"{controller} is not built")
    if not pathlib.Path(PROGRAM).exists():
        pytest.fail(f"{PROGRAM} is not built")
    up = subprocess.run([str(ROOT / "scripts/dev-cluster"), "up", str(state_dir), *up_options],
                        capture_output=True, text=True, timeout=120,
                        env={**os.environ, "FIBER_BUILD_DIR": str(BUILD_DIR)})
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        yield Cluster(state_dir)
    finally:
        down = subprocess.run([str(ROOT / "scripts/dev-cluster"), "down", str(state_dir)],
                              capture_output=True, text=True, timeout=120)
        assert down.returncode == 0, down.stdout + down.stderr


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    with dev_cluster(tmp_path_factory.mktemp("cluster")) as started:
        yield started


def fiberjob(name: str, scenario: str, config: str | None = FAST_CONFIG, max_replicas: int = 8,
             worker_spec: dict | None = None, launcher_env: list | None = None, replicas: int | None = 0,
             run_policy: dict | None = None, command: list[str] | None = None) -> str:
    """A FiberJob running the test program (or `command`) as its launcher; its worker template
    names no command, so worker pods run the launcher's. The default cleanPodPolicy (Running)
    keeps the finished launcher pod and its log."""
    launcher = {"name": "main", "image": "fibermpi/test", "command": command or [PROGRAM, scenario]}
    if launcher_env:
        launcher["env"] = launcher_env
    job: dict[str, Any] = {
        "apiVersion": "fibermpi.io/v1alpha1", "kind": "FiberJob", "metadata": {"name": name},
        "spec": {
            "launcher": {"template": {"spec": {"containers": [launcher]}}},
            "workers": {"minReplicas": 0, "maxReplicas": max_replicas,
                        "template": {"spec": {"containers": [{"name": "main", "image": "fibermpi/test"}],
                                              **(worker_spec or {})}}}}}
    if replicas is not None:     # None: the CRD's default
        job["spec"]["workers"]["replicas"] = replicas
    if config is not None:
        job["spec"]["config"] = config
    if run_policy is not None:
        job["spec"]["runPolicy"] = run_policy
    return yaml.safe_dump(job)


class Watch:
    """`kubectl get ... --watch --output-watch-events -o json` in the background, calling on_event(type,
    object, time) for every event as it arrives (a poll would miss short-lived states)."""

    def __init__(self, cluster: Cluster, args: list[str], on_event: Callable[[str, dict, float], None]):
        self.process = subprocess.Popen([KUBECTL, "get", *args, "--watch", "--output-watch-events", "-o", "json"],
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                        env=cluster.env)
        self.on_event = on_event
        self.errors: list[str] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        decoder = json.JSONDecoder()
        buffer = ""
        assert self.process.stdout is not None
        for line in self.process.stdout:
            buffer += line
            while buffer.strip():
                try:
                    event, end = decoder.raw_decode(buffer.lstrip())
                except json.JSONDecodeError:
                    break
                buffer = buffer.lstrip()[end:]
                try:
                    self.on_event(event.get("type", ""), event.get("object") or {}, time.monotonic())
                except Exception as error:  # noqa: BLE001 - reported by the test that reads it
                    self.errors.append(f"{error!r} on {event}")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)
        self.thread.join(timeout=10)


class PodRecorder:
    """Watches a job's worker pods, spec and release list: every worker pod seen alive, when it first was
    and when it went (deleted or deletion begun), the most alive at once, every name the program listed
    in its release ConfigMap (NAME-release) or someone put in workersToDelete, and when the launcher
    ended."""

    def __init__(self, cluster: Cluster, job: str):
        self.first_seen: dict[str, float] = {}
        self.gone: dict[str, float] = {}
        self.alive: set[str] = set()
        self.most_at_once = 0
        self.named: set[str] = set()
        self.launcher_done: float | None = None
        self.most_requested = 0   # status.workers.requested: the program's request
        self.most_desired = 0
        self.lock = threading.Lock()
        self.job = job
        self.watches = [
            Watch(cluster, ["pods", "-l", f"fibermpi.io/job-name={job},fibermpi.io/role=worker"], self._on_pod),
            Watch(cluster, ["fiberjobs"], self._on_job),
            Watch(cluster, ["configmaps", "-l", f"fibermpi.io/job-name={job}"], self._on_config_map)]

    def _on_config_map(self, kind: str, config_map: dict, now: float) -> None:
        if config_map.get("kind") != "ConfigMap" or config_map["metadata"]["name"] != f"{self.job}-release":
            return
        with self.lock:
            listed = (config_map.get("data") or {}).get("workersToDelete", "")
            self.named.update(line for line in listed.splitlines() if line)

    def _on_pod(self, kind: str, pod: dict, now: float) -> None:
        if pod.get("kind") != "Pod":
            return
        name = pod["metadata"]["name"]
        with self.lock:
            if (kind != "DELETED" and "deletionTimestamp" not in pod["metadata"]
                    and pod.get("status", {}).get("phase") in ("Pending", "Running")):
                self.first_seen.setdefault(name, now)
                self.alive.add(name)
                self.most_at_once = max(self.most_at_once, len(self.alive))
            elif name in self.alive:
                self.alive.discard(name)
                self.gone.setdefault(name, now)

    def _on_job(self, kind: str, job: dict, now: float) -> None:
        if job.get("kind") != "FiberJob" or job["metadata"]["name"] != self.job:
            return
        with self.lock:
            self.named.update(job["spec"]["workers"].get("workersToDelete", []))
            workers = job.get("status", {}).get("workers", {})
            self.most_requested = max(self.most_requested, workers.get("requested", 0))
            self.most_desired = max(self.most_desired, workers.get("desired", 0))
            if self.launcher_done is None and job.get("status", {}).get("launcher", {}).get("phase") in (
                    "Succeeded", "Failed"):
                self.launcher_done = now

    def stop(self) -> None:
        for watch in self.watches:
            watch.stop()
        errors = [error for watch in self.watches for error in watch.errors]
        assert not errors, errors


def phase(cluster: Cluster, name: str) -> str:
    return cluster.job(name).get("status", {}).get("phase", "")


def finished(cluster: Cluster, name: str, timeout_s: float = 180) -> dict:
    wait_until(f"{name} to finish", lambda: phase(cluster, name) in ("Succeeded", "Failed"), timeout_s)
    return cluster.job(name)


def succeeded(cluster: Cluster, name: str, recorder: "PodRecorder | None" = None,
              timeout_s: float = 180) -> str:
    """Waits for the job's end, stops `recorder`, checks the job Succeeded; the launcher's log."""
    job = finished(cluster, name, timeout_s)
    if recorder is not None:
        recorder.stop()
    log = cluster.log(f"{name}-launcher")
    assert job["status"]["phase"] == "Succeeded", f"{job['status']}\n{log}"
    return log


def workers_in(log: str, line: str) -> dict[str, int]:
    """{"pod/pid": tasks} of a line 'LINE: pod/pid=count ...' the program printed."""
    match = re.search(rf"^{re.escape(line)}:(.*)$", log, re.MULTILINE)
    assert match, f"no '{line}:' line in the launcher's log:\n{log}"
    return {worker: int(count) for worker, count in (item.split("=") for item in match.group(1).split())}


def pods_in(log: str, line: str) -> dict[str, int]:
    """{pod: tasks} of such a line."""
    pods: dict[str, int] = {}
    for worker, count in workers_in(log, line).items():
        pod = worker.split("/")[0]
        pods[pod] = pods.get(pod, 0) + count
    return pods


def test_a_pool_grows_onto_pods_maps_and_releases_what_it_no_longer_needs(cluster: Cluster):
    name = "grow"
    recorder = PodRecorder(cluster, name)
    cluster.kubectl("apply", "-f", "-", stdin=fiberjob(name, "grow"))
    log = succeeded(cluster, name, recorder)
    mapped = pods_in(log, "map of 2000")
    assert sum(mapped.values()) == 2000
    assert len(mapped) == 4 and all(pod.startswith(f"{name}-worker-") for pod in mapped), log
    assert recorder.most_at_once == 4, recorder.first_seen
    assert "resized to 1" in log
    last = pods_in(log, "after resize")
    assert len(last) == 1 and sum(last.values()) == 300, log
    (kept,) = last
    released = set(mapped) - {kept}
    # The three released pods, and only they, were named for deletion and went while the program ran.
    assert recorder.named == released, (recorder.named, released)
    assert recorder.launcher_done is not None
    for pod in released:
        assert pod in recorder.gone and recorder.gone[pod] < recorder.launcher_done, (pod, recorder.gone)
    # The kept pod outlived the released ones (it ends with the program: its worker leaves as the
    # launcher finishes, a moment before the job's status says so).
    assert recorder.gone.get(kept, float("inf")) > max(recorder.gone[pod] for pod in released)


def test_worker_pods_deleted_mid_map_lose_nothing_and_replacements_take_tasks(cluster: Cluster):
    name = "loss"
    # The default heartbeat_timeout (5 s): the killed pod is seen gone sooner, through the
    # connection its worker keeps with the launcher.
    cluster.kubectl("apply", "-f", "-", stdin=fiberjob(name, "loss", config="pod_idle_timeout: 1s\n"))
    wait_until("4 workers ready", lambda: "4 workers ready" in cluster.log(f"{name}-launcher"), timeout_s=90)
    first = sorted(p["metadata"]["name"] for p in cluster.pods(name, "worker"))
    assert len(first) == 4, first
    time.sleep(1.5)  # the map is under way (it runs for about 5 s)
    # One pod deleted the usual way (SIGTERM, then the grace period), one killed at once.
    cluster.kubectl("delete", "pod", first[0], "--wait=false")
    cluster.kubectl("delete", "pod", first[1], "--grace-period=0", "--force", "--wait=false")
    log = succeeded(cluster, name)
    mapped = workers_in(log, "map of 2000")
    assert sum(mapped.values()) == 2000
    # Four workers to begin with, two lost: any further worker is in a replacement pod (which may
    # reuse a deleted pod's name, never its process).
    assert len(mapped) >= 5, f"no replacement pod took tasks: {mapped}"
    assert all(count > 0 for count in mapped.values())
    # Even a forced deletion sends SIGTERM first: the killed pod's worker asks to leave, and its
    # mpirun ends it moments later. Whether the worker finished what it held and was let go before
    # that (nothing to report) is a race of milliseconds; if it was still working, its closed
    # connection, not its silence, declared it dead. (The test below makes the second case
    # certain.)
    if f"of pod {first[1]}/" in log:
        assert "its connection to the launcher closed" in log, log
    assert "heartbeat timeout" not in log, log


def test_a_worker_killed_while_it_leaves_is_seen_gone_by_its_connection(cluster: Cluster):
    name = "leaving"
    # The default heartbeat_timeout (5 s), as above: the worker asked to leave first (SIGTERM)
    # and killed later must be seen gone through its connection all the same.
    cluster.kubectl("apply", "-f", "-", stdin=fiberjob(name, "leaving", config="pod_idle_timeout: 1s\n"))
    line = wait_until("the worker named", lambda: re.search(r"^worker (\S+)/(\d+)$",
                                                            cluster.log(f"{name}-launcher"), re.MULTILINE),
                      timeout_s=90)
    pod, pid = line.group(1), int(line.group(2))
    # Pods of the development cluster share this host's PID namespace: that pid is the worker.
    environ = pathlib.Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    assert f"FIBER_K8S_POD_NAME={pod}".encode() in environ, (pod, pid)
    time.sleep(0.3)  # its first task of 3 s runs
    os.kill(pid, signal.SIGTERM)  # to it alone: it asks to leave and goes on with its task
    time.sleep(0.7)
    os.kill(pid, signal.SIGKILL)
    log = succeeded(cluster, name)
    mapped = workers_in(log, "map of 4")
    assert sum(mapped.values()) == 4 and f"{pod}/{pid}" not in mapped, log
    assert f"worker pid {pid} of pod {pod}" in log and "its connection to the launcher closed" in log, log
    assert "heartbeat timeout" not in log, log


def test_a_pool_that_shrank_grows_again_while_its_tasks_run(cluster: Cluster):
    name = "regrow"
    recorder = PodRecorder(cluster, name)
    cluster.kubectl("apply", "-f", "-", stdin=fiberjob(name, "regrow"))
    log = succeeded(cluster, name, recorder)
    assert len(pods_in(log, "alone")) == 1, log
    # Pods joined while the launcher's traffic flowed, and took tasks (whether or not the pod idle
    # after resize(1) was released in the meantime).
    assert len(pods_in(log, "wide")) >= 3, log
    assert sum(workers_in(log, "wide").values()) == 3000


def test_kubectl_scale_from_outside_grows_a_running_pool(cluster: Cluster):
    name = "scale"
    cluster.kubectl("apply", "-f", "-", stdin=fiberjob(name, "scale"))
    wait_until("1 worker ready", lambda: "1 worker ready" in cluster.log(f"{name}-launcher"), timeout_s=90)
    cluster.kubectl("scale", f"fiberjob/{name}", "--replicas=3")
    log = succeeded(cluster, name)
    assert "tasks ran on 3 pods" in log, log


class ScaleWriter:
    """What a HorizontalPodAutoscaler does to a job: reads its scale subresource and, where
    spec.replicas is not the count it wants, writes that count with the resourceVersion it read
    (a 409 is read again). It also records every value it found that it had not written itself:
    nobody else may write the job's replicas."""

    def __init__(self, cluster: Cluster, job: str, replicas: int):
        self.cluster, self.job, self.replicas = cluster, job, replicas
        self.written: int | None = None
        self.foreign: list[int] = []
        self.writes = 0
        self.errors: list[str] = []   # refused writes (a 409 among them is normal)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.done.wait(0.3):
            scale = json.loads(self.cluster.kubectl("get", f"fiberjob/{self.job}", "--subresource=scale",
                                                    "-o", "json", check=False) or "null")
            if not scale:
                continue
            found = scale["spec"].get("replicas", 0)
            if self.written is not None and found != self.written:
                self.foreign.append(found)
            if found != self.replicas:
                scale["spec"]["replicas"] = self.replicas
                path = f"/apis/fibermpi.io/v1alpha1/namespaces/default/fiberjobs/{self.job}/scale"
                replaced = subprocess.run([KUBECTL, "replace", "--raw", path, "-f", "-"],
                                          input=json.dumps(scale), capture_output=True, text=True,
                                          timeout=60, env=self.cluster.env)
                if replaced.returncode == 0:
                    self.written = self.replicas
                    self.writes += 1
                else:
                    self.errors.append(replaced.stderr)
            elif self.written is None:
                self.written = found

    def stop(self) -> None:
        self.done.set()
        self.thread.join(timeout=60)


def test_an_autoscaler_beside_the_program_neither_undoes_its_requests_nor_is_undone(cluster: Cluster):
    """A job left at the default replicas (1, which an HPA scales; 0 it leaves alone). An HPA sets
    spec.workers.replicas to 2 while the program asks for 4 pods (in its ConfigMap) and later gives
    back what it no longer needs: the job holds the larger count, the program's releases stop at
    the HPA's 2 (no pod released only to be replaced), and nobody writes over the HPA's value."""
    name = "hpa"
    recorder = PodRecorder(cluster, name)
    cluster.kubectl("apply", "-f", "-", stdin=fiberjob(name, "grow", replicas=None))
    assert cluster.job(name)["spec"]["workers"]["replicas"] == 1
    hpa = ScaleWriter(cluster, name, replicas=2)
    try:
        wait_until("the HPA's count", lambda: cluster.job(name)["spec"]["workers"]["replicas"] == 2 or hpa.errors,
                   timeout_s=30)
        assert cluster.job(name)["spec"]["workers"]["replicas"] == 2, hpa.errors
        log = succeeded(cluster, name, recorder)
    finally:
        hpa.stop()
    assert recorder.most_requested == 4 and recorder.most_desired == 4, (recorder.most_requested,
                                                                         recorder.most_desired)
    mapped = pods_in(log, "map of 2000")
    assert sum(mapped.values()) == 2000 and len(mapped) == 4, log
    assert pods_in(log, "after resize") and sum(workers_in(log, "after resize").values()) == 300, log
    # Two pods given back, two kept at the HPA's count; none replaced, none created beyond four.
    assert len(recorder.named) == 2 and recorder.named <= set(mapped), (recorder.named, mapped)
    assert set(recorder.first_seen) == set(mapped), recorder.first_seen
    assert recorder.launcher_done is not None
    for pod in recorder.named:
        assert recorder.gone[pod] < recorder.launcher_done, (pod, recorder.gone)
    assert hpa.foreign == [] and hpa.writes == 1, (hpa.foreign, hpa.writes)
    job = cluster.job(name)
    assert job["spec"]["workers"]["replicas"] == 2, job["spec"]
    assert job["status"]["workers"]["requested"] <= 2, job["status"]


def test_a_killed_launcher_fails_the_job_and_its_pods_are_cleaned(cluster: Cluster):
    name = "killed"
    cluster.kubectl("apply", "-f", "-", stdin=fiberjob(name, "loss"))
    wait_until("4 workers ready", lambda: "4 workers ready" in cluster.log(f"{name}-launcher"), timeout_s=90)
    cluster.kubectl("delete", "pod", f"{name}-launcher", "--grace-period=0", "--force", "--wait=false")
    job = finished(cluster, name)
    assert job["status"]["phase"] == "Failed"
    wait_until("every pod of the job gone",
               lambda: not cluster.get("pods", "-l", f"fibermpi.io/job-name={name}")["items"], 60)


def test_worker_pods_end_by_themselves_once_their_launcher_is_gone(cluster: Cluster):
    """With cleanPodPolicy None nobody deletes them: a worker pod whose launcher was killed sees its
    join connection close and ends its MPI job (all its ranks), instead of waiting in MPI for ever."""
    name = "orphans"
    cluster.kubectl("apply", "-f", "-", stdin=fiberjob(name, "loss", run_policy={"cleanPodPolicy": "None"}))
    wait_until("4 workers ready", lambda: "4 workers ready" in cluster.log(f"{name}-launcher"), timeout_s=90)
    workers = [pod["metadata"]["name"] for pod in cluster.get(
        "pods", "-l", f"fibermpi.io/job-name={name},fibermpi.io/role=worker")["items"]]
    assert workers
    cluster.kubectl("delete", "pod", f"{name}-launcher", "--grace-period=0", "--force", "--wait=false")
    killed = time.monotonic()

    def ended() -> bool:
        phases = [cluster.get("pods", pod).get("status", {}).get("phase") for pod in workers]
        return all(phase in ("Succeeded", "Failed") for phase in phases)
    wait_until("the worker pods to end by themselves", ended, timeout_s=60)
    took = time.monotonic() - killed
    assert took < 30, f"the worker pods took {took:.1f} s to end"
    log = cluster.log(workers[0])
    assert "is gone (its join connection closed 5 s ago); this worker pod ends" in log, log
    cluster.kubectl("delete", "fj", name, "--wait=false")


def test_a_bad_fiber_yaml_fails_the_launcher_with_the_key_in_the_condition(cluster: Cluster):
    name = "badconfig"
    cluster.kubectl("apply", "-f", "-", stdin=fiberjob(name, "grow", config="heartbeat_timout: 2s\n"))
    job = finished(cluster, name, timeout_s=60)
    assert job["status"]["phase"] == "Failed"
    failed = [c for c in job["status"]["conditions"] if c["type"] == "Failed"]
    assert failed and "heartbeat_timout" in failed[0]["message"], job["status"]["conditions"]


def test_pods_that_never_start_give_a_clear_error(cluster: Cluster):
    name = "unready"
    cluster.kubectl("apply", "-f", "-", stdin=fiberjob(
        name, "unready", worker_spec={"nodeSelector": {"fibermpi.io/no-such-node": "x"}},
        launcher_env=[{"name": "FIBER_POD_START_TIMEOUT_S", "value": "3"}]))
    job = finished(cluster, name, timeout_s=90)
    log = cluster.log(f"{name}-launcher")
    assert job["status"]["launcher"]["exitCode"] == 3, f"{job['status']}\n{log}"
    assert "did not join within pod_start_timeout (3 s)" in log, log


def test_worker_pods_with_several_slots_serve_one_worker_per_slot(cluster: Cluster):
    name = "slots"
    job = yaml.safe_load(fiberjob(name, "grow"))
    job["spec"]["workers"]["slotsPerWorker"] = 2
    recorder = PodRecorder(cluster, name)
    cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(job))
    log = succeeded(cluster, name, recorder)
    workers = workers_in(log, "map of 2000")
    assert len(workers) == 4 and len(pods_in(log, "map of 2000")) == 2, log
    assert recorder.most_at_once == 2, recorder.first_seen


def group_members(log: str) -> dict[int, tuple[str, str]]:
    """{rank: (pod, 'sum=N gathered')} of the program's 'group members:' line."""
    match = re.search(r"^group members:(.*)$", log, re.MULTILINE)
    assert match, f"no 'group members:' line in the launcher's log:\n{log}"
    members = {}
    for item in re.findall(r"\[([^\]]*)\]", match.group(1)):
        rank_pod, rest = item.split(" ", 1)
        rank, pod = rank_pod.split("=")
        members[int(rank)] = (pod, rest)
    return members


@pytest.mark.parametrize("slots", [1, 2])
def test_a_group_spans_worker_pods(cluster: Cluster, slots: int):
    """A Group of 4 on worker pods: one member per pod (four islands joined by connect/accept
    across pods) or two per pod (two islands of two ranks sharing their pod's MPI world)."""
    name = f"group-{slots}"
    job = yaml.safe_load(fiberjob(name, "group"))
    job["spec"]["workers"]["slotsPerWorker"] = slots
    cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(job))
    log = succeeded(cluster, name, timeout_s=300)
    members = group_members(log)
    assert sorted(members) == [0, 1, 2, 3], log
    assert all(rest == "sum=10 gathered" for _, rest in members.values()), log
    pods = {pod for pod, _ in members.values()}
    assert len(pods) == 4 // slots and all(pod.startswith(f"{name}-worker-") for pod in pods), log
    assert "group exit codes not 0: 0" in log, log


def test_a_process_on_a_pod_runs_a_pool_of_its_own_on_other_pods(cluster: Cluster):
    """Nesting in a FiberJob: the launcher's Process runs on a worker pod and makes a Pool there,
    whose workers the launcher places on worker pods too."""
    name = "nested"
    cluster.kubectl("apply", "-f", "-", stdin=fiberjob(name, "nested"))
    log = succeeded(cluster, name, timeout_s=300)
    match = re.search(r"^nested pool on (\S+): (.*)$", log, re.MULTILINE)
    assert match, log
    outer, rest = match.group(1), match.group(2)
    counts = {pod: int(count) for pod, count in (item.split("=") for item in rest.split())}
    assert outer.startswith(f"{name}-worker-"), log
    assert sum(counts.values()) == 200, log
    assert all(pod.startswith(f"{name}-worker-") and pod != outer for pod in counts), log
    assert "outer exit code 0" in log, log


def test_shared_state_is_served_to_worker_pods(cluster: Cluster):
    """A Manager's Lock, Value, Barrier and Dict and a bounded Queue, served by the launcher to
    processes and pool workers on worker pods: no update lost, every item taken once."""
    name = "shared"
    cluster.kubectl("apply", "-f", "-", stdin=fiberjob(name, "shared"))
    log = succeeded(cluster, name, timeout_s=300)
    match = re.search(r"^locked increments (\d+) on (.*)$", log, re.MULTILINE)
    assert match, log
    assert int(match.group(1)) == 1000, log
    assert all(pod.startswith(f"{name}-worker-") for pod in match.group(2).split()), log
    assert "fetch_add total 20100, dict size 200" in log, log
    pool_pods = pods_in(log, "pool on")
    assert sum(pool_pods.values()) == 200 and all(pod.startswith(f"{name}-worker-") for pod in pool_pods), log
    assert "queue sum 124750, producer exit code 0" in log, log
