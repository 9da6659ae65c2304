"""Pods as real containers on the development cluster's nodes: a pod whose image is in podman's
store (fibermpi/runtime:dev, built by scripts/images) runs as a container the way a kubelet runs
it: the image's entrypoint (tini), user, working dir and environment, command/args overriding
them, PID 1 in its own PID namespace, the pod's network namespace and IP, volumes mounted,
securityContext applied (runAsNonRoot refused with the kubelet's words), exit codes, restarts,
termination messages, SIGTERM through tini on deletion, logs through kubectl, and nothing left
behind by `down`, after a crash too."""

from __future__ import annotations

import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from k8s.devcluster.kube import client_from_kubeconfig, core_path  # noqa: E402
from k8s.devcluster.node_container import podman_command  # noqa: E402
from tests.support.waiting import wait_until  # noqa: E402

RUNTIME_IMAGE = os.environ.get("FIBER_RUNTIME_IMAGE", "fibermpi/runtime:dev")
NAMED_USER_IMAGE = "localhost/fibermpi-test/named-user:dev"
ROOT_USER_IMAGE = "localhost/fibermpi-test/root-user:dev"
KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"
RESTRICTED = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
POD_RESTRICTED = {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}}


def podman(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(podman_command(*args), capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)} exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return done


def dev_cluster(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([str(ROOT / "scripts/dev-cluster"), *args], capture_output=True, text=True,
                          timeout=timeout)


class Cluster:
    def __init__(self, state_dir: pathlib.Path):
        self.dir = state_dir
        self.api = client_from_kubeconfig(str(state_dir / "kubeconfigs/admin.yaml"))
        self.cid = json.loads((state_dir / "cluster.json").read_text())["cluster_id"]

    def create(self, name: str, containers: list[dict], **spec: Any) -> dict:
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
               "spec": {"containers": containers, "automountServiceAccountToken": False, **spec}}
        return self.api.create(core_path("pods", "default"), pod)

    def pod(self, name: str) -> dict:
        return self.api.get(core_path("pods", "default", name))

    def phase(self, name: str) -> str:
        return self.pod(name).get("status", {}).get("phase", "")

    def finished(self, name: str, timeout_s: float = 60) -> dict:
        try:
            wait_until(f"pod {name} to end", lambda: self.phase(name) in ("Succeeded", "Failed"), timeout_s)
        except AssertionError as error:
            raise AssertionError(f"{error}\n{self.diagnosis(name)}") from None
        return self.pod(name)

    def diagnosis(self, name: str) -> str:
        """What a pod that did not end was doing: its status, the nodes' log tails, the cluster's
        podman containers and the podman/conmon/runc processes still running."""
        parts = [f"pod status: {json.dumps(self.pod(name).get('status', {}), indent=1)}"]
        for log in sorted((self.dir / "logs").glob("node-*.log")):
            tail = log.read_text(errors="replace").splitlines()[-40:]
            parts.append(f"{log.name} (last 40 lines):\n" + "\n".join(tail))
        parts.append("containers: " + podman("ps", "-a", "--filter", f"label=fibermpi.io/devcluster={self.cid}",
                                             "--format", "{{.Names}} {{.Status}}", check=False).stdout)
        processes = subprocess.run(["ps", "-eo", "pid,ppid,etimes,stat,args"], capture_output=True, text=True).stdout
        parts.append("processes:\n" + "\n".join(line for line in processes.splitlines()
                                                 if re.search(r"podman|conmon|runc|PID", line)))
        return "\n".join(parts)

    def log(self, name: str, container: str = "") -> str:
        args = [KUBECTL, "logs", name] + (["-c", container] if container else [])
        return subprocess.run(args, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "KUBECONFIG": str(self.dir / "kubeconfig")}).stdout

    def delete(self, name: str, grace: int | None = None) -> None:
        path = core_path("pods", "default", name)
        if grace is None:
            self.api.delete(path)
        else:
            self.api.delete(path, grace_period_seconds=grace)

    def gone(self, name: str, timeout_s: float = 60) -> None:
        def missing() -> bool:
            try:
                self.pod(name)
            except Exception:  # noqa: BLE001 - 404
                return True
            return False
        wait_until(f"pod {name} deleted", missing, timeout_s)

    def containers(self) -> list[str]:
        return podman("ps", "-a", "--filter", f"label=fibermpi.io/devcluster={self.cid}", "--format",
                      "{{.Names}}").stdout.split()


def status_of(pod: dict, container: str) -> dict:
    return next(s for s in pod["status"]["containerStatuses"] if s["name"] == container)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Cluster:
    if podman("image", "exists", RUNTIME_IMAGE, check=False).returncode != 0:
        pytest.fail(f"{RUNTIME_IMAGE} is not built: run scripts/images")
    state_dir = tmp_path_factory.mktemp("cluster")
    try:
        up = dev_cluster("up", str(state_dir), "--no-controller")
        assert up.returncode == 0, up.stdout + up.stderr
        yield Cluster(state_dir)
    finally:
        down = dev_cluster("down", str(state_dir))
        if down.returncode != 0:
            print(f"scripts/dev-cluster down failed:\n{down.stdout}{down.stderr}")


def test_a_container_runs_its_images_entrypoint_user_and_environment_as_pid_1(cluster: Cluster):
    script = ("echo pid=$$$$ uid=$(id -u) gid=$(id -g) cwd=$(pwd); echo init=$(tr '\\0' ' ' < /proc/1/cmdline); "
              "echo path=$PATH; echo mine=$MINE; echo host=$(hostname); "
              "echo ip=$(cat /proc/net/fib_trie | grep -c \"$POD_IP\")")
    env = [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
           {"name": "MINE", "value": "$(POD_IP)-x"}]
    cluster.create("entry", [
        {"name": "args", "image": RUNTIME_IMAGE, "args": ["/bin/sh", "-c", script], "env": env},
        {"name": "command", "image": RUNTIME_IMAGE, "command": ["/bin/sh", "-c"],
         "args": ["echo pid=$$$$ cwd=$(pwd)"], "workingDir": "/opt/fibermpi"}], restartPolicy="Never")
    pod = cluster.finished("entry")
    assert pod["status"]["phase"] == "Succeeded", pod["status"]
    log = cluster.log("entry", "args")
    ip = pod["status"]["podIP"]
    # tini (the image's ENTRYPOINT) is PID 1 and runs the args; the image's user, WORKDIR and PATH.
    assert re.search(r"^pid=\d+ uid=1000 gid=1000 cwd=/home/fiber$", log, re.MULTILINE), log
    assert "pid=1 " not in log, log
    assert "init=/usr/bin/tini -- /bin/sh -c" in log, log
    assert "path=/opt/fibermpi/bin:" in log, log
    assert f"mine={ip}-x" in log and "host=entry" in log, log
    assert not log.rstrip().endswith("ip=0"), log  # the pod's own IP is on an interface it sees
    # command replaces the ENTRYPOINT: the shell is PID 1; workingDir replaces WORKDIR.
    assert "pid=1 cwd=/opt/fibermpi" in cluster.log("entry", "command")
    image_id = podman("image", "inspect", "--format", "{{.Id}}", RUNTIME_IMAGE).stdout.strip()
    for name in ("args", "command"):
        status = status_of(pod, name)
        assert status["imageID"] == f"podman://sha256:{image_id}", status
        assert status["state"]["terminated"]["exitCode"] == 0, status
    cluster.delete("entry")
    cluster.gone("entry")


def test_security_context_is_applied(cluster: Cluster):
    probe = ("id -u; id -g; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status | tr -s '\\t' ' '; "
             "touch /probe 2>/dev/null && echo root-writable || echo root-read-only")
    cluster.create("secure", [
        {"name": "restricted", "image": RUNTIME_IMAGE, "args": ["/bin/sh", "-c", probe],
         "securityContext": {**RESTRICTED, "readOnlyRootFilesystem": True, "runAsUser": 2000, "runAsGroup": 3000}},
        {"name": "default", "image": RUNTIME_IMAGE, "args": ["/bin/sh", "-c", probe],
         "securityContext": {"runAsUser": 0, "runAsNonRoot": False, "seccompProfile": {"type": "Unconfined"}}}],
        securityContext=POD_RESTRICTED, restartPolicy="Never")
    pod = cluster.finished("secure")
    assert pod["status"]["phase"] == "Succeeded", pod["status"]
    restricted = cluster.log("secure", "restricted").split("\n")
    assert restricted[:2] == ["2000", "3000"], restricted
    assert "CapEff: 0000000000000000" in restricted and "NoNewPrivs: 1" in restricted, restricted
    assert "Seccomp: 2" in restricted and "root-read-only" in restricted, restricted
    default = cluster.log("secure", "default").split("\n")
    assert default[0] == "0" and "NoNewPrivs: 0" in default and "Seccomp: 0" in default, default
    assert "root-writable" in default and "CapEff: 0000000000000000" not in default, default
    cluster.delete("secure")
    cluster.gone("secure")


@pytest.fixture
def user_images(tmp_path: pathlib.Path) -> dict[str, str]:
    """The runtime image with its user given by name (fiber, uid 1000), which the kubelet cannot
    check against runAsNonRoot, and with root's."""
    images = {"fiber": NAMED_USER_IMAGE, "0:0": ROOT_USER_IMAGE}
    for user, image in images.items():
        (tmp_path / "Containerfile").write_text(f"FROM {RUNTIME_IMAGE}\nUSER {user}\n")
        podman("build", "-q", "-t", image, str(tmp_path))
    yield images
    podman("rmi", "-f", *images.values(), check=False)


def test_run_as_non_root_is_refused_with_the_kubelets_words(cluster: Cluster, user_images: dict[str, str]):
    def waiting_message(name: str) -> str | None:
        statuses = cluster.pod(name).get("status", {}).get("containerStatuses") or []
        state = statuses[0].get("state", {}).get("waiting", {}) if statuses else {}
        return state.get("message") if state.get("reason") == "CreateContainerConfigError" else None

    cluster.create("rootimage", [{"name": "main", "image": user_images["0:0"], "args": ["true"],
                                  "securityContext": {"runAsNonRoot": True}}])
    cluster.create("nameduser", [{"name": "main", "image": user_images["fiber"], "args": ["true"]}],
                   securityContext={"runAsNonRoot": True})
    cluster.create("rootuser", [{"name": "main", "image": RUNTIME_IMAGE, "args": ["true"],
                                 "securityContext": {"runAsNonRoot": True, "runAsUser": 0}}])
    # A pod of an image podman does not have runs on the host's filesystem, as the node's user (root).
    cluster.create("hostroot", [{"name": "main", "image": "fibermpi/not-an-image", "command": ["true"],
                                 "securityContext": {"runAsNonRoot": True}}])
    who = {name: f'(pod: "{name}_default({cluster.pod(name)["metadata"]["uid"]})", container: main)'
           for name in ("rootimage", "nameduser", "rootuser", "hostroot")}
    assert wait_until("rootimage refused", lambda: waiting_message("rootimage")) == \
        f"container has runAsNonRoot and image will run as root {who['rootimage']}"
    assert wait_until("nameduser refused", lambda: waiting_message("nameduser")) == \
        f"container has runAsNonRoot and image has non-numeric user (fiber), cannot verify user is non-root " \
        f"{who['nameduser']}"
    assert wait_until("rootuser refused", lambda: waiting_message("rootuser")) == \
        f"container's runAsUser breaks non-root policy {who['rootuser']}"
    assert wait_until("hostroot refused", lambda: waiting_message("hostroot")) == \
        f"container has runAsNonRoot and image will run as root {who['hostroot']}"
    # The node writes the Failed Event after the container status.
    wait_until("rootimage's Failed Event", lambda: any(
        e["reason"] == "Failed" and "runAsNonRoot" in e["message"] for e in cluster.api.list(
            core_path("events", "default"), field_selector="involvedObject.name=rootimage")["items"]))
    for name in who:
        cluster.delete(name, grace=0)
    for name in who:
        cluster.gone(name)


def test_volumes_exit_codes_termination_messages_and_restarts(cluster: Cluster, tmp_path: pathlib.Path):
    cluster.api.create(core_path("configmaps", "default"), {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"mode": "fast"}})
    host = tmp_path / "host"
    host.mkdir()
    (host / "file").write_text("from the host")
    script = ("cat /etc/settings/mode; echo; cat /host/file; echo; cat /info/name; echo; "
              "touch /etc/settings/x 2>/dev/null || echo settings-read-only; "
              "grep ' /dev/shm ' /proc/mounts | cut -d' ' -f3; df -k /dev/shm | tail -1 | tr -s ' ' | cut -d' ' -f2; "
              "test -s /var/run/secrets/kubernetes.io/serviceaccount/token && echo token-readable; "
              "if [ -e /scratch/once ]; then echo 'second run' > /dev/termination-log; exit 0; fi; "
              "touch /scratch/once; echo 'first run failed' > /dev/termination-log; exit 3")
    cluster.create("volumes", [{
        "name": "main", "image": RUNTIME_IMAGE, "args": ["/bin/sh", "-c", script], "securityContext": RESTRICTED,
        "volumeMounts": [{"name": "settings", "mountPath": "/etc/settings", "readOnly": True},
                         {"name": "host", "mountPath": "/host", "readOnly": True},
                         {"name": "info", "mountPath": "/info"},
                         {"name": "scratch", "mountPath": "/scratch"},
                         {"name": "shm", "mountPath": "/dev/shm"}]}],
        securityContext=POD_RESTRICTED, restartPolicy="OnFailure", automountServiceAccountToken=True,
        volumes=[{"name": "settings", "configMap": {"name": "settings"}},
                 {"name": "host", "hostPath": {"path": str(host)}},
                 {"name": "info", "downwardAPI": {"items": [{"path": "name",
                                                             "fieldRef": {"fieldPath": "metadata.name"}}]}},
                 {"name": "scratch", "emptyDir": {}},
                 {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "128Mi"}}])
    pod = cluster.finished("volumes", timeout_s=90)
    status = status_of(pod, "main")
    assert pod["status"]["phase"] == "Succeeded", pod["status"]
    assert status["restartCount"] == 1, status
    assert status["state"]["terminated"]["message"] == "second run\n", status
    events = cluster.api.list(core_path("events", "default"), field_selector="involvedObject.name=volumes")
    assert any(e["reason"] == "BackOff" for e in events["items"]), events  # the failed first run
    log = cluster.log("volumes").split("\n")
    assert log[:4] == ["fast", "from the host", "volumes", "settings-read-only"], log
    assert log[4:7] == ["tmpfs", str(128 * 1024), "token-readable"], log
    cluster.delete("volumes")
    cluster.gone("volumes")


def test_deletion_sends_sigterm_through_tini_and_sigkill_after_the_grace(cluster: Cluster):
    handles = "trap 'echo got TERM; exit 0' TERM; echo started; while :; do sleep 0.1; done"
    ignores = "trap '' TERM; echo started; while :; do sleep 0.1; done"
    cluster.create("graceful", [{"name": "main", "image": RUNTIME_IMAGE, "args": ["/bin/sh", "-c", handles]}],
                   terminationGracePeriodSeconds=30)
    cluster.create("stubborn", [{"name": "main", "image": RUNTIME_IMAGE, "args": ["/bin/sh", "-c", ignores]}],
                   terminationGracePeriodSeconds=2)
    for name in ("graceful", "stubborn"):
        wait_until(f"{name} started", lambda n=name: "started" in cluster.log(n))
    start = time.monotonic()
    cluster.delete("graceful")
    cluster.gone("graceful")
    assert time.monotonic() - start < 15, "SIGTERM did not reach the program through tini"
    start = time.monotonic()
    cluster.delete("stubborn")
    cluster.gone("stubborn")
    assert 2 <= time.monotonic() - start < 20
    assert not [name for name in cluster.containers()], cluster.containers()


def test_a_pods_end_reaches_the_program_through_tini_and_its_exit_code_is_the_programs(cluster: Cluster):
    # activeDeadlineSeconds ends the pod as a deletion does (SIGTERM, the grace period) but keeps
    # its status to read.
    script = "trap 'echo got TERM; exit 7' TERM; echo started; while :; do sleep 0.1; done"
    cluster.create("deadline", [{"name": "main", "image": RUNTIME_IMAGE, "args": ["/bin/sh", "-c", script]}],
                   activeDeadlineSeconds=3, restartPolicy="Never", terminationGracePeriodSeconds=30)
    pod = cluster.finished("deadline", timeout_s=30)
    assert pod["status"]["reason"] == "DeadlineExceeded", pod["status"]
    assert status_of(pod, "main")["state"]["terminated"]["exitCode"] == 7, pod["status"]
    assert "got TERM" in cluster.log("deadline")
    cluster.delete("deadline")
    cluster.gone("deadline")


def test_down_after_a_crash_leaves_no_container(tmp_path: pathlib.Path):
    state_dir = tmp_path / "crashed"
    try:
        up = dev_cluster("up", str(state_dir), "--no-controller", "--nodes", "1")
        assert up.returncode == 0, up.stdout + up.stderr
        crashed = Cluster(state_dir)
        crashed.create("left", [{"name": "main", "image": RUNTIME_IMAGE, "args": ["sleep", "600"]}])
        wait_until("the pod running", lambda: crashed.phase("left") == "Running")
        assert len(crashed.containers()) == 1
        for component in ("node-1", "apiserver", "scheduler"):
            os.kill(int((state_dir / f"pids/{component}.pid").read_text()), signal.SIGKILL)
    finally:
        down = dev_cluster("down", str(state_dir))
    assert down.returncode == 0, down.stdout + down.stderr
    cid = crashed.cid
    left = podman("ps", "-a", "--filter", f"label=fibermpi.io/devcluster={cid}", "--format", "{{.Names}}")
    assert left.stdout.split() == []
