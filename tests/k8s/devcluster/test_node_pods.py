"""The node's pod lifecycle against a recording fake of the API: processes, exit codes, phases,
environment, working dir, volumes, graceful deletion, restarts and pod networking. The API server
itself is exercised by test_dev_cluster*.py."""

from __future__ import annotations

import base64
import copy
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from typing import Any, Callable

import pytest

from k8s.devcluster import netns
from k8s.devcluster.kube import KubeError
from k8s.devcluster.node_pod import NodeContext, PodWorker

PYTHON = sys.executable
WAIT_S = 20.0


class FakeApi:
    """Records what a PodWorker writes; answers ConfigMap reads and TokenRequests."""

    def __init__(self, pod: dict[str, Any]):
        self.pod = pod
        self.configmaps: dict[str, dict[str, Any]] = {}
        self.secrets: dict[str, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self.deleted: list[dict[str, Any]] = []
        self.changed = threading.Condition()

    def clone(self) -> "FakeApi":
        return self

    def _notify(self) -> None:
        with self.changed:
            self.changed.notify_all()

    def wait(self, what: str, predicate: Callable[[], bool], timeout_s: float = WAIT_S) -> None:
        with self.changed:
            if not self.changed.wait_for(predicate, timeout_s):
                raise AssertionError(f"timed out waiting for {what}; pod status: {self.pod.get('status')}")

    def get(self, path: str, params: Any = None) -> dict[str, Any]:
        name = path.rsplit("/", 1)[1]
        if "/configmaps/" in path and name in self.configmaps:
            return self.configmaps[name]
        if "/secrets/" in path and name in self.secrets:
            return self.secrets[name]
        raise KubeError(404, "NotFound", f"{path} not found")

    def patch(self, path: str, body: Any, patch_type: str = "merge") -> dict[str, Any]:
        with self.changed:
            if path.endswith("/status"):
                self.pod["status"] = copy.deepcopy(body["status"])
            else:
                annotations = self.pod["metadata"].setdefault("annotations", {})
                annotations.update(body["metadata"]["annotations"])
            self.changed.notify_all()
            return copy.deepcopy(self.pod)

    def create(self, path: str, body: Any) -> dict[str, Any]:
        if path.endswith("/token"):
            return {"status": {"token": "token-for-" + body["spec"]["boundObjectRef"]["name"]}}
        with self.changed:
            self.events.append(body)
            self.changed.notify_all()
        return body

    def delete(self, path: str, grace_period_seconds: int | None = None, precondition_uid: str | None = None,
               propagation_policy: str | None = None) -> dict[str, Any]:
        with self.changed:
            self.deleted.append({"path": path, "grace": grace_period_seconds, "uid": precondition_uid})
            self.changed.notify_all()
        return {}

    # what the tests read
    def container(self, index: int = 0) -> dict[str, Any]:
        return (self.pod.get("status", {}).get("containerStatuses") or [{}])[index]

    def phase(self) -> str:
        return self.pod.get("status", {}).get("phase", "")


def make_pod(name: str, containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "team", "uid": str(uuid.uuid4()), "labels": {"app": "demo"},
                         "annotations": {"note": "hello"}},
            "spec": {"nodeName": "node-1", "restartPolicy": "Never", "containers": containers, **spec},
            "status": {"phase": "Pending"}}


@pytest.fixture
def context(tmp_path: Any) -> NodeContext:
    ca_file = tmp_path / "ca.crt"
    ca_file.write_text("CA-CERT\n")
    return NodeContext(node_name="node-1", state_dir=str(tmp_path / "nodes"), client_factory=lambda: None,
                       host_ip="127.0.0.1", api_host="127.0.0.1", api_port=6443, ca_file=str(ca_file),
                       allocatable={"cpu": "2", "memory": "1Gi"}, network=None, cid="", pod_cidr_prefix="",
                       private_mounts=not netns.probe_mount_namespaces(), log_dir=str(tmp_path / "logs"),
                       base_path=os.environ.get("PATH", "/usr/bin:/bin"))


def start(context: NodeContext, pod: dict[str, Any]) -> tuple[PodWorker, FakeApi]:
    api = FakeApi(pod)
    context.client_factory = lambda: api
    os.makedirs(context.pid_dir(), exist_ok=True)
    worker = PodWorker(context, copy.deepcopy(pod))
    worker.start()
    return worker, api


def wait_for_file(path: Any, timeout_s: float = WAIT_S) -> None:
    """Waits for a pod's process to say it is ready (it writes the file once its traps are set)."""
    deadline = time.monotonic() + timeout_s
    while not os.path.exists(path):
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def request_deletion(worker: PodWorker, api: FakeApi, grace_s: int) -> None:
    with api.changed:
        api.pod["metadata"]["deletionTimestamp"] = "2030-01-01T00:00:00Z"
        api.pod["metadata"]["deletionGracePeriodSeconds"] = grace_s
        worker.update(copy.deepcopy(api.pod))


def test_exit_zero_succeeds_and_three_fails(context: NodeContext) -> None:
    worker, api = start(context, make_pod("ok", [{"name": "main", "image": "debian", "command": ["true"]}]))
    api.wait("Succeeded", lambda: api.phase() == "Succeeded")
    terminated = api.container()["state"]["terminated"]
    assert terminated["exitCode"] == 0 and terminated["reason"] == "Completed"
    assert api.container()["image"] == "debian"
    worker2, api2 = start(context, make_pod("bad", [{"name": "main", "image": "x", "command": ["sh", "-c", "exit 3"]}]))
    api2.wait("Failed", lambda: api2.phase() == "Failed")
    assert api2.container()["state"]["terminated"]["exitCode"] == 3
    assert api2.container()["state"]["terminated"]["reason"] == "Error"
    conditions = {c["type"]: c for c in api2.pod["status"]["conditions"]}
    assert conditions["Ready"]["status"] == "False" and conditions["Ready"]["reason"] == "PodCompleted"
    request_deletion(worker, api, 30)
    api.wait("deletion", lambda: bool(api.deleted))
    assert api.deleted[0]["grace"] == 0 and api.deleted[0]["uid"] == api.pod["metadata"]["uid"]


def test_environment_downward_api_configmap_and_working_dir(context: NodeContext, tmp_path: Any) -> None:
    out = tmp_path / "env.txt"
    work = tmp_path / "work"
    work.mkdir()
    script = (f"import os; open({str(out)!r}, 'w').write('\\n'.join(f'{{k}}={{os.environ.get(k)}}' for k in "
              "['NAME','NS','UID','APP','NOTE','NODE','SA','IP','HOSTIP','FROM_CM','FROM_SECRET','COMBINED',"
              "'KUBERNETES_SERVICE_HOST','KUBERNETES_SERVICE_PORT']) + '\\nCWD=' + os.getcwd())")
    env = [{"name": "NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
           {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
           {"name": "UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
           {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
           {"name": "NOTE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['note']"}}},
           {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
           {"name": "SA", "valueFrom": {"fieldRef": {"fieldPath": "spec.serviceAccountName"}}},
           {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
           {"name": "HOSTIP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
           {"name": "FROM_CM", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode"}}},
           {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
           {"name": "COMBINED", "value": "$(NAME)-in-$(NS)"}]
    pod = make_pod("envy", [{"name": "main", "image": "x", "command": [PYTHON, "-c", script], "env": env,
                             "workingDir": str(work)}])
    api_holder = FakeApi(pod)
    api_holder.configmaps["settings"] = {"data": {"mode": "fast"}}
    api_holder.secrets["creds"] = {"data": {"password": base64.b64encode(b"s3cret").decode()}}
    context.client_factory = lambda: api_holder
    os.makedirs(context.pid_dir(), exist_ok=True)
    PodWorker(context, copy.deepcopy(pod)).start()
    api_holder.wait("Succeeded", lambda: api_holder.phase() in ("Succeeded", "Failed"))
    assert api_holder.phase() == "Succeeded", api_holder.container()
    values = dict(line.split("=", 1) for line in out.read_text().splitlines())
    assert values["NAME"] == "envy" and values["NS"] == "team" and values["UID"] == pod["metadata"]["uid"]
    assert values["APP"] == "demo" and values["NOTE"] == "hello" and values["NODE"] == "node-1"
    assert values["SA"] == "default" and values["IP"] == "127.0.0.1" and values["HOSTIP"] == "127.0.0.1"
    assert values["FROM_CM"] == "fast" and values["FROM_SECRET"] == "s3cret"
    assert values["COMBINED"] == "envy-in-team"
    assert values["KUBERNETES_SERVICE_HOST"] == "127.0.0.1" and values["KUBERNETES_SERVICE_PORT"] == "6443"
    assert values["CWD"] == str(work)


def test_missing_configmap_is_a_config_error(context: NodeContext) -> None:
    env = [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "absent", "key": "k"}}}]
    worker, api = start(context, make_pod("cfg", [{"name": "main", "image": "x", "command": ["true"], "env": env}]))
    api.wait("the config error", lambda: api.container().get("state", {}).get("waiting", {}).get("reason")
             == "CreateContainerConfigError")
    assert 'configmap "absent" not found' in api.container()["state"]["waiting"]["message"]
    assert api.phase() == "Pending"
    request_deletion(worker, api, 0)
    api.wait("deletion", lambda: bool(api.deleted))


def test_no_command_is_reported(context: NodeContext) -> None:
    worker, api = start(context, make_pod("nocmd", [{"name": "main", "image": "busybox"}]))
    api.wait("Failed", lambda: api.phase() == "Failed")
    terminated = api.container()["state"]["terminated"]
    assert terminated["reason"] == "NoCommand" and "has no command" in terminated["message"]


def test_missing_executable_is_a_start_error(context: NodeContext) -> None:
    worker, api = start(context, make_pod("nox", [{"name": "main", "image": "x", "command": ["/no/such/binary"]}]))
    api.wait("Failed", lambda: api.phase() == "Failed")
    terminated = api.container()["state"]["terminated"]
    assert terminated["exitCode"] == 128 and terminated["reason"] == "StartError", terminated
    assert "/no/such/binary" in terminated["message"]


def test_delete_sends_sigterm_that_a_trap_sees(context: NodeContext, tmp_path: Any) -> None:
    marker, ready = tmp_path / "got-term", tmp_path / "ready"
    script = f"trap 'echo term > {marker}; exit 0' TERM; echo ready; touch {ready}; while true; do sleep 0.1; done"
    worker, api = start(context, make_pod("polite", [{"name": "main", "image": "x", "command": ["bash", "-c", script]}]))
    wait_for_file(ready)
    request_deletion(worker, api, 10)
    api.wait("deletion", lambda: bool(api.deleted))
    assert marker.read_text().strip() == "term"
    terminated = api.container()["state"]["terminated"]
    assert terminated["exitCode"] == 0
    assert api.deleted[0]["grace"] == 0 and api.deleted[0]["uid"] == api.pod["metadata"]["uid"]
    log_dir = os.path.join(context.log_dir, f"team_polite_{api.pod['metadata']['uid']}")
    assert open(os.path.join(log_dir, "main.log")).read().startswith("ready")


def test_pre_stop_hook_runs_before_sigterm(context: NodeContext, tmp_path: Any) -> None:
    record, ready = tmp_path / "record", tmp_path / "ready"
    script = f"trap 'echo term >> {record}; exit 0' TERM; touch {ready}; while true; do sleep 0.1; done"
    container = {"name": "main", "image": "x", "command": ["bash", "-c", script],
                 "lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", f"echo pre-stop >> {record}"]}},
                               "postStart": {"exec": {"command": ["sh", "-c", f"echo post-start >> {record}"]}}}}
    worker, api = start(context, make_pod("hooked", [container]))
    wait_for_file(ready)
    request_deletion(worker, api, 10)
    api.wait("deletion", lambda: bool(api.deleted))
    assert record.read_text().split() == ["post-start", "pre-stop", "term"]


def test_delete_kills_one_that_ignores_sigterm_after_the_grace_period(context: NodeContext, tmp_path: Any) -> None:
    ready = tmp_path / "ready"
    script = f"trap '' TERM; touch {ready}; while true; do sleep 0.1; done"
    worker, api = start(context, make_pod("stubborn", [{"name": "main", "image": "x", "command": ["bash", "-c", script]}]))
    wait_for_file(ready)
    began = time.monotonic()
    request_deletion(worker, api, 2)
    api.wait("deletion", lambda: bool(api.deleted))
    elapsed = time.monotonic() - began
    terminated = api.container()["state"]["terminated"]
    assert terminated["exitCode"] == 137 and terminated["signal"] == 9
    assert 2.0 <= elapsed < 10.0
    assert api.phase() == "Failed"


def test_tty_gives_a_terminal_whose_output_reaches_the_log(context: NodeContext) -> None:
    script = "import sys; print('terminal' if sys.stdout.isatty() else 'pipe')"
    worker, api = start(context, make_pod("tty", [{"name": "main", "image": "x", "command": [PYTHON, "-c", script],
                                                    "tty": True}]))
    api.wait("Succeeded", lambda: api.phase() == "Succeeded")
    log_path = os.path.join(context.log_dir, f"team_tty_{api.pod['metadata']['uid']}", "main.log")
    assert open(log_path).read().split() == ["terminal"]


def test_active_deadline_fails_the_pod(context: NodeContext) -> None:
    worker, api = start(context, make_pod("late", [{"name": "main", "image": "x", "command": ["sleep", "60"]}],
                                          activeDeadlineSeconds=1, terminationGracePeriodSeconds=1))
    api.wait("Failed", lambda: api.phase() == "Failed", 15)
    assert api.pod["status"]["reason"] == "DeadlineExceeded"
    assert api.container()["state"]["terminated"]["exitCode"] == 143   # sleep ends on SIGTERM


def test_readiness_probes_exec_and_tcp(context: NodeContext, tmp_path: Any) -> None:
    flag = tmp_path / "ready-now"
    port = 7000 + os.getpid() % 1000
    server = f"import socket, time; time.sleep(0.5); s = socket.create_server(('127.0.0.1', {port})); time.sleep(60)"
    containers = [
        {"name": "file", "image": "x", "command": ["sleep", "60"],
         "readinessProbe": {"exec": {"command": ["test", "-e", str(flag)]}, "periodSeconds": 1}},
        {"name": "port", "image": "x", "command": [PYTHON, "-c", server], "ports": [{"name": "web", "containerPort": port}],
         "readinessProbe": {"tcpSocket": {"port": "web"}, "periodSeconds": 1}},
    ]
    worker, api = start(context, make_pod("probed", containers, terminationGracePeriodSeconds=1))

    def ready(name: str) -> bool:
        return any(c["name"] == name and c["ready"] for c in api.pod.get("status", {}).get("containerStatuses") or [])
    api.wait("port ready", lambda: ready("port"))
    assert not ready("file")
    conditions = {c["type"]: c for c in api.pod["status"]["conditions"]}
    assert conditions["Ready"]["status"] == "False" and "file" in conditions["Ready"]["message"]
    flag.touch()
    api.wait("file ready", lambda: ready("file"))
    api.wait("pod Ready", lambda: any(c["type"] == "Ready" and c["status"] == "True"
                                      for c in api.pod["status"]["conditions"]))
    request_deletion(worker, api, 1)
    api.wait("deletion", lambda: bool(api.deleted))


def test_failing_liveness_probe_restarts_the_container(context: NodeContext) -> None:
    containers = [{"name": "main", "image": "x", "command": ["sleep", "60"],
                   "livenessProbe": {"exec": {"command": ["false"]}, "periodSeconds": 1, "failureThreshold": 1}}]
    worker, api = start(context, make_pod("sick", containers, restartPolicy="Always",
                                          terminationGracePeriodSeconds=1))
    api.wait("a restart", lambda: api.container().get("restartCount", 0) >= 1, 30)
    assert api.container()["lastState"]["terminated"]["exitCode"] == 143
    assert any(e["reason"] == "Killing" and "failed liveness probe" in e["message"] for e in api.events)
    request_deletion(worker, api, 1)
    api.wait("deletion", lambda: bool(api.deleted))


def test_node_shutdown_kills_the_processes_and_leaves_the_pod(context: NodeContext, tmp_path: Any) -> None:
    ready = tmp_path / "ready"
    worker, api = start(context, make_pod("victim", [{"name": "main", "image": "x",
                                                       "command": ["sh", "-c", f"touch {ready}; sleep 600"]}]))
    wait_for_file(ready)
    pid_files = os.listdir(context.pid_dir())
    assert len(pid_files) == 1
    worker.stop()
    worker.join(10)
    assert not worker.is_alive() and api.deleted == []
    assert os.listdir(context.pid_dir()) == []


def test_on_failure_restarts_until_success(context: NodeContext, tmp_path: Any) -> None:
    marker = tmp_path / "tried"
    script = f"if [ -e {marker} ]; then exit 0; fi; touch {marker}; exit 5"
    worker, api = start(context, make_pod("retry", [{"name": "main", "image": "x", "command": ["sh", "-c", script]}],
                                          restartPolicy="OnFailure"))
    api.wait("Succeeded", lambda: api.phase() == "Succeeded")
    status = api.container()
    assert status["restartCount"] == 1
    assert status["state"]["terminated"]["exitCode"] == 0
    assert any(event["reason"] == "BackOff" for event in api.events)


def test_init_container_runs_first(context: NodeContext, tmp_path: Any) -> None:
    order = tmp_path / "order"
    pod = make_pod("init", [{"name": "main", "image": "x", "command": ["sh", "-c", f"echo main >> {order}"]}],
                   initContainers=[{"name": "prep", "image": "x", "command": ["sh", "-c", f"echo prep >> {order}"]}])
    worker, api = start(context, pod)
    api.wait("Succeeded", lambda: api.phase() == "Succeeded")
    assert order.read_text().split() == ["prep", "main"]
    assert api.pod["status"]["initContainerStatuses"][0]["state"]["terminated"]["exitCode"] == 0


mount_refusal = netns.probe_mount_namespaces()


@pytest.mark.skipif(bool(mount_refusal), reason=f"no mount namespaces here: {mount_refusal}")
def test_service_account_and_volumes_are_mounted(context: NodeContext, tmp_path: Any) -> None:
    out = tmp_path / "seen"
    script = ("d=/var/run/secrets/kubernetes.io/serviceaccount; "
              f"{{ cat $d/token; echo; cat $d/namespace; echo; cat $d/ca.crt; cat /etc/cfg/mode; echo; "
              f"echo scratch > /scratch/file && cat /scratch/file; hostname; grep -c mounts /etc/hosts; }} > {out}")
    pod = make_pod("mounts", [{"name": "main", "image": "x", "command": ["sh", "-c", script],
                               "volumeMounts": [{"name": "cfg", "mountPath": "/etc/cfg"},
                                                {"name": "tmp", "mountPath": "/scratch"}]}],
                   volumes=[{"name": "cfg", "configMap": {"name": "settings"}}, {"name": "tmp", "emptyDir": {}}])
    api = FakeApi(pod)
    api.configmaps["settings"] = {"data": {"mode": "fast"}}
    context.client_factory = lambda: api
    os.makedirs(context.pid_dir(), exist_ok=True)
    scratch_existed = os.path.exists("/scratch")
    PodWorker(context, copy.deepcopy(pod)).start()
    api.wait("Succeeded", lambda: api.phase() in ("Succeeded", "Failed"))
    assert api.phase() == "Succeeded", open(os.path.join(
        context.log_dir, f"team_mounts_{pod['metadata']['uid']}", "main.log")).read()
    assert out.read_text().split() == ["token-for-mounts", "team", "CA-CERT", "fast", "scratch", "mounts", "1"]
    assert not os.path.exists("/run/secrets/kubernetes.io"), "the mount point leaked to the host"
    if not scratch_existed:
        os.rmdir("/scratch")


network_refusal = "" if os.geteuid() == 0 and shutil.which("ip") else "needs root and iproute2"
if not network_refusal:
    network_refusal = netns.probe_network_namespaces(netns.cluster_id("/probe-unit"))


@pytest.fixture
def network(tmp_path: Any) -> Any:
    cid = netns.cluster_id(str(tmp_path))
    cluster_network = netns.ClusterNetwork(cid, netns.choose_cluster_subnet(cid))
    cluster_network.create_bridge(1)
    yield cluster_network
    netns.delete_cluster_network(cid)
    assert netns.cluster_network_leftovers(cid) == []


@pytest.mark.skipif(bool(network_refusal), reason=f"no network namespaces here: {network_refusal}")
def test_pods_in_their_own_namespaces_talk_over_tcp(context: NodeContext, network: Any, tmp_path: Any) -> None:
    context.network = network
    context.cid = network.cid
    context.host_ip = network.node_address(1)
    context.pod_cidr_prefix = network.node_pod_cidr(1).rsplit(".", 1)[0] + "."
    server_out, client_out = tmp_path / "server", tmp_path / "client"
    addresses = ("import socket, subprocess; "
                 "ips = subprocess.run(['ip', '-4', '-o', 'addr'], capture_output=True, text=True).stdout")
    server = (f"{addresses}\nsrv = socket.create_server(('0.0.0.0', 7000)); conn, peer = srv.accept(); "
              f"data = conn.recv(100); conn.sendall(b'pong:' + data); "
              f"open({str(server_out)!r}, 'w').write(peer[0] + '|' + ips)")
    server_pod = make_pod("server", [{"name": "main", "image": "x", "command": [PYTHON, "-c", server]}])
    server_worker, server_api = start(context, server_pod)
    server_api.wait("server Running", lambda: server_api.phase() == "Running")
    server_ip = server_api.pod["status"]["podIP"]
    client = (f"{addresses}\nimport time\nfor _ in range(100):\n  try:\n    s = socket.create_connection(({server_ip!r}, 7000)); break\n"
              f"  except OSError: time.sleep(0.1)\ns.sendall(b'ping'); reply = s.recv(100).decode(); "
              f"open({str(client_out)!r}, 'w').write(reply + '|' + ips)")
    client_pod = make_pod("client", [{"name": "main", "image": "x", "command": [PYTHON, "-c", client]}])
    client_worker, client_api = start(context, client_pod)
    client_api.wait("client Succeeded", lambda: client_api.phase() in ("Succeeded", "Failed"))
    server_api.wait("server Succeeded", lambda: server_api.phase() in ("Succeeded", "Failed"))
    client_ip = client_api.pod["status"]["podIP"]
    assert client_ip != server_ip and client_ip.startswith(context.pod_cidr_prefix)
    peer, server_ips = server_out.read_text().split("|", 1)
    reply, client_ips = client_out.read_text().split("|", 1)
    assert reply == "pong:ping" and peer == client_ip
    assert server_ip in server_ips and client_ip not in server_ips and context.host_ip not in server_ips
    assert client_ip in client_ips and server_ip not in client_ips
    assert server_api.pod["metadata"]["annotations"]["devcluster.fibermpi.io/network"] == "pod-netns"
    for worker, api in ((server_worker, server_api), (client_worker, client_api)):
        request_deletion(worker, api, 1)
        api.wait("deletion", lambda: bool(api.deleted))
        worker.join(10)
    result = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    assert netns.netns_prefix(network.cid) not in result.stdout


@pytest.mark.skipif(bool(network_refusal), reason=f"no network namespaces here: {network_refusal}")
def test_a_pods_address_is_released_once(context: NodeContext, network: Any) -> None:
    """The sandbox of an ended pod is removed when it ends and again when it is deleted: the second
    removal must not free the address another pod took meanwhile (two pods with one IP)."""
    context.network = network
    context.cid = network.cid
    context.host_ip = network.node_address(1)
    context.pod_cidr_prefix = network.node_pod_cidr(1).rsplit(".", 1)[0] + "."
    worker, api = start(context, make_pod("short", [{"name": "main", "image": "x", "command": ["true"]}]))
    api.wait("Succeeded", lambda: api.phase() == "Succeeded")
    address = api.pod["status"]["podIP"]
    deadline = time.monotonic() + WAIT_S
    while address in context.used_ips:
        assert time.monotonic() < deadline, "the ended pod kept its address"
        time.sleep(0.02)
    assert context.allocate_ip() == address  # the next pod gets it
    request_deletion(worker, api, 1)
    api.wait("deletion", lambda: bool(api.deleted))
    worker.join(10)
    assert address in context.used_ips
