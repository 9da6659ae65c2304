"""A node's loss in a running development cluster: its kubelet paused, the node lifecycle controller
marks it Unknown and taints it unreachable after the grace period, the taint eviction controller
deletes its pods as their tolerations allow (the server's 300 s default, a few seconds, for good),
the pods stay Running with their deletion pending while the kubelet is away, new pods go to the
other node, and the kubelet's return clears the taints and ends the evicted pods. Also: the
eviction rule alone, and the DefaultTolerationSeconds defaults."""

from __future__ import annotations

import os
import re
import subprocess
import time
import uuid
from typing import Any, Iterator

import pytest

from k8s.devcluster.cluster import down
from k8s.devcluster.kube import KubeClient, client_from_kubeconfig, core_path, pod_path, wait_for_object
from k8s.devcluster.node_lifecycle import UNREACHABLE, eviction_delay
from tests.support.waiting import wait_until

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DEV_CLUSTER = os.path.join(REPO, "scripts", "dev-cluster")
NAMESPACE = "default"
GRACE_S = 6
BRIEF_S = 2


def test_eviction_delay_is_the_least_matching_toleration() -> None:
    taints = [{"key": UNREACHABLE, "effect": "NoExecute"}]

    def pod(*tolerations: Any) -> Any:
        return {"spec": {"tolerations": list(tolerations)}}
    assert eviction_delay(pod(), taints) == 0.0
    assert eviction_delay(pod({"key": "other", "operator": "Exists"}), taints) == 0.0
    assert eviction_delay(pod({"key": UNREACHABLE, "operator": "Exists", "effect": "NoSchedule"}), taints) == 0.0
    assert eviction_delay(pod({"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}), taints) is None
    assert eviction_delay(pod({"operator": "Exists"}), taints) is None
    assert eviction_delay(pod({"key": UNREACHABLE, "operator": "Exists", "tolerationSeconds": 30},
                              {"key": UNREACHABLE, "operator": "Exists", "tolerationSeconds": 5}), taints) == 5.0
    assert eviction_delay(pod({"key": UNREACHABLE, "operator": "Exists", "tolerationSeconds": -3}), taints) == 0.0
    both = taints + [{"key": "gpu", "value": "broken", "effect": "NoExecute"}]
    assert eviction_delay(pod({"key": UNREACHABLE, "operator": "Exists"}), both) == 0.0
    assert eviction_delay(pod({"key": UNREACHABLE, "operator": "Exists", "tolerationSeconds": 9},
                              {"key": "gpu", "operator": "Equal", "value": "broken"}), both) == 9.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: Any) -> Iterator[tuple[str, KubeClient]]:
    state_dir = str(tmp_path_factory.mktemp("cluster"))
    up = subprocess.run([DEV_CLUSTER, "up", state_dir, "--no-controller", "--node-monitor-grace-period",
                         str(GRACE_S)], capture_output=True, text=True, timeout=120)
    assert up.returncode == 0, up.stderr
    try:
        yield state_dir, client_from_kubeconfig(os.path.join(state_dir, "kubeconfig"))
    finally:
        subprocess.run([DEV_CLUSTER, "resume-node", state_dir, "node-2"], capture_output=True, timeout=30)
        assert down(state_dir, quiet=True) == []


def sleeper(client: KubeClient, name: str, node: str | None, tolerations: list[Any] | None) -> Any:
    spec: Any = {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                 "containers": [{"name": "main", "image": "debian", "command": ["sleep", "300"]}]}
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return client.create(pod_path(NAMESPACE), {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                                               "spec": spec})


def condition(obj: Any, kind: str) -> Any:
    return next((c for c in obj.get("status", {}).get("conditions") or [] if c["type"] == kind), None)


def test_the_server_defaults_toleration_seconds(cluster: tuple[str, KubeClient]) -> None:
    _, client = cluster
    prefix = uuid.uuid4().hex[:6]
    plain = sleeper(client, f"{prefix}-plain", None, None)
    defaults = sorted((t["key"], t["operator"], t["effect"], t["tolerationSeconds"])
                      for t in plain["spec"]["tolerations"])
    assert defaults == [("node.kubernetes.io/not-ready", "Exists", "NoExecute", 300),
                        (UNREACHABLE, "Exists", "NoExecute", 300)]
    own = sleeper(client, f"{prefix}-own", None, [{"key": UNREACHABLE, "operator": "Exists",
                                                   "effect": "NoExecute", "tolerationSeconds": 7}])
    assert [(t["key"], t.get("tolerationSeconds")) for t in own["spec"]["tolerations"]] == \
        [(UNREACHABLE, 7), ("node.kubernetes.io/not-ready", 300)]
    everything = sleeper(client, f"{prefix}-all", None, [{"operator": "Exists"}])
    assert everything["spec"]["tolerations"] == [{"operator": "Exists"}]
    for name in ("plain", "own", "all"):
        client.delete(pod_path(NAMESPACE, f"{prefix}-{name}"), grace_period_seconds=0)


def test_a_silent_node_is_tainted_and_its_pods_evicted_as_they_tolerate(cluster: tuple[str, KubeClient]) -> None:
    state_dir, client = cluster
    prefix = uuid.uuid4().hex[:6]
    brief, defaulted, forever, elsewhere = (f"{prefix}-{n}" for n in ("brief", "defaulted", "forever", "elsewhere"))
    sleeper(client, brief, "node-2", [{"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute",
                                       "tolerationSeconds": BRIEF_S}])
    sleeper(client, defaulted, "node-2", None)
    sleeper(client, forever, "node-2", [{"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}])
    sleeper(client, elsewhere, "node-1", [{"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 0}])
    for name in (brief, defaulted, forever, elsewhere):
        wait_for_object(client, pod_path(NAMESPACE), name,
                        lambda pod: pod is not None and pod["status"].get("phase") == "Running", 60)

    paused = subprocess.run([DEV_CLUSTER, "pause-node", state_dir, "node-2"], capture_output=True, text=True,
                            timeout=30)
    assert paused.returncode == 0, paused.stderr
    started = time.monotonic()
    status = subprocess.run([DEV_CLUSTER, "status", state_dir], capture_output=True, text=True, timeout=30)
    assert re.search(r"\bnode-2 +paused \(pause-node\), pid", status.stdout), status.stdout
    assert re.search(r"\bcontroller-manager +running, pid", status.stdout), status.stdout

    def unknown(node: Any) -> bool:
        ready = condition(node, "Ready")
        return ready is not None and ready["status"] == "Unknown"
    node = wait_for_object(client, core_path("nodes"), "node-2", unknown, GRACE_S + 30)
    silent_after = time.monotonic() - started
    ready = condition(node, "Ready")
    assert (ready["reason"], ready["message"]) == ("NodeStatusUnknown", "Kubelet stopped posting node status.")
    assert all(condition(node, kind)["status"] == "Unknown"
               for kind in ("MemoryPressure", "DiskPressure", "PIDPressure"))
    # Not before the grace period (less the last renewal's age, at most the renewal interval).
    assert silent_after >= GRACE_S - 4.5, silent_after

    def tainted() -> Any:
        taints = client.get(core_path("nodes", name="node-2"))["spec"].get("taints") or []
        return {t["effect"]: t for t in taints if t["key"] == UNREACHABLE} if len(taints) == 2 else None
    taints = wait_until("the unreachable taints", tainted, timeout_s=15)
    assert set(taints) == {"NoExecute", "NoSchedule"} and taints["NoExecute"]["timeAdded"]
    assert condition(client.get(core_path("nodes", name="node-1")), "Ready")["status"] == "True"

    evicted = wait_for_object(client, pod_path(NAMESPACE), brief,
                              lambda pod: pod is not None and bool(pod["metadata"].get("deletionTimestamp")), 30)
    # The kubelet is away: nobody ends the pod, which stays Running with its deletion pending.
    assert evicted["status"]["phase"] == "Running"
    target = condition(evicted, "DisruptionTarget")
    assert (target["status"], target["reason"]) == ("True", "DeletionByTaintManager")
    assert condition(evicted, "Ready")["status"] == "False"
    events = client.list(core_path("events", NAMESPACE))["items"]
    assert any(e["involvedObject"]["name"] == brief and e["reason"] == "TaintManagerEviction"
               and e["message"] == f"Marking for deletion Pod {NAMESPACE}/{brief}" for e in events)
    time.sleep(1.5)
    for name in (defaulted, forever):
        pod = client.get(pod_path(NAMESPACE, name))
        assert not pod["metadata"].get("deletionTimestamp"), name
        assert condition(pod, "Ready")["status"] == "False", name
    assert not client.get(pod_path(NAMESPACE, elsewhere))["metadata"].get("deletionTimestamp")

    # New pods go to the node that still answers.
    newcomer = f"{prefix}-newcomer"
    sleeper(client, newcomer, None, None)
    placed = wait_for_object(client, pod_path(NAMESPACE), newcomer,
                             lambda pod: pod is not None and bool(pod["spec"].get("nodeName")), 30)
    assert placed["spec"]["nodeName"] == "node-1"

    resumed = subprocess.run([DEV_CLUSTER, "resume-node", state_dir, "node-2"], capture_output=True, text=True,
                             timeout=30)
    assert resumed.returncode == 0, resumed.stderr
    wait_for_object(client, core_path("nodes"), "node-2",
                    lambda node: condition(node, "Ready")["status"] == "True"
                    and not any(t["key"] == UNREACHABLE for t in node["spec"].get("taints") or []), 30)
    wait_for_object(client, pod_path(NAMESPACE), brief, lambda pod: pod is None, 30)
    back = wait_for_object(client, pod_path(NAMESPACE), forever,
                           lambda pod: condition(pod, "Ready")["status"] == "True", 30)
    assert back["status"]["phase"] == "Running"
    for name in (defaulted, forever, elsewhere, newcomer):
        client.delete(pod_path(NAMESPACE, name), grace_period_seconds=0)
