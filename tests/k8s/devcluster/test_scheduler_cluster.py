"""The scheduler in a running development cluster of two nodes with room for two pods each:
pods spread over both nodes, a fifth pod is Unschedulable with the real message and a
FailedScheduling Event, and is bound once a place frees up."""

from __future__ import annotations

import os
import subprocess
import uuid
from typing import Any, Iterator

import pytest

from k8s.devcluster.cluster import down
from k8s.devcluster.kube import KubeClient, client_from_kubeconfig, core_path, pod_path, wait_for_object
from tests.support.waiting import wait_until

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DEV_CLUSTER = os.path.join(REPO, "scripts", "dev-cluster")
NAMESPACE = "default"


@pytest.fixture(scope="module")
def client(tmp_path_factory: Any) -> Iterator[KubeClient]:
    state_dir = str(tmp_path_factory.mktemp("cluster"))
    up = subprocess.run([DEV_CLUSTER, "up", state_dir, "--no-controller", "--pods-per-node", "2"],
                        capture_output=True, text=True, timeout=120)
    assert up.returncode == 0, up.stderr
    try:
        yield client_from_kubeconfig(os.path.join(state_dir, "kubeconfig"))
    finally:
        assert down(state_dir, quiet=True) == []


def sleeper(client: KubeClient, name: str) -> None:
    client.create(pod_path(NAMESPACE), {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                 "containers": [{"name": "main", "image": "debian", "command": ["sleep", "300"]}]}})


def test_spread_unschedulable_then_bound(client: KubeClient) -> None:
    prefix = uuid.uuid4().hex[:6]
    names = [f"{prefix}-{index}" for index in range(4)]
    for name in names:
        sleeper(client, name)
    placed = [wait_for_object(client, pod_path(NAMESPACE), name,
                              lambda pod: pod is not None and bool(pod["spec"].get("nodeName")), 30) for name in names]
    assert sorted(pod["spec"]["nodeName"] for pod in placed) == ["node-1", "node-1", "node-2", "node-2"]

    extra = f"{prefix}-extra"
    sleeper(client, extra)

    def unschedulable(pod: Any) -> bool:
        return pod is not None and any(c["type"] == "PodScheduled" and c["status"] == "False"
                                       for c in pod.get("status", {}).get("conditions") or [])
    pending = wait_for_object(client, pod_path(NAMESPACE), extra, unschedulable, 30)
    condition = next(c for c in pending["status"]["conditions"] if c["type"] == "PodScheduled")
    assert condition["reason"] == "Unschedulable"
    assert condition["message"] == "0/2 nodes are available: 2 Too many pods."

    def failed_scheduling() -> bool:
        events = client.list(core_path("events", NAMESPACE))["items"]
        return any(event["involvedObject"]["name"] == extra and event["reason"] == "FailedScheduling"
                   and event["message"] == condition["message"] for event in events)
    # The scheduler writes the Event after the pod's condition, as the real one does.
    wait_until("the FailedScheduling Event", failed_scheduling, timeout_s=30, interval_s=0.05)

    client.delete(pod_path(NAMESPACE, names[0]), grace_period_seconds=1)
    bound = wait_for_object(client, pod_path(NAMESPACE), extra,
                            lambda pod: pod is not None and bool(pod["spec"].get("nodeName")), 30)
    assert bound["spec"]["nodeName"] == placed[0]["spec"]["nodeName"]
    running = wait_for_object(client, pod_path(NAMESPACE), extra,
                              lambda pod: pod is not None and pod["status"].get("phase") == "Running", 30)
    assert running["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
