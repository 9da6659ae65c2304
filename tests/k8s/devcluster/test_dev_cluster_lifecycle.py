"""`dev-cluster up` refuses a dir whose cluster runs, and `down` cleans up after a crash (every
component killed with SIGKILL while a pod runs), leaving no process, network namespace, veth or
bridge; a second `down` is harmless."""

from __future__ import annotations

import glob
import json
import os
import re
import signal
import subprocess
from typing import Any

from k8s.devcluster import netns
from k8s.devcluster.cluster import pid_alive, processes_mentioning, read_pid
from k8s.devcluster.kube import client_from_kubeconfig, pod_path, wait_for_object

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DEV_CLUSTER = os.path.join(REPO, "scripts", "dev-cluster")


def dev_cluster(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([DEV_CLUSTER, *args], capture_output=True, text=True, timeout=120)


def test_up_without_a_built_controller_says_what_to_do(tmp_path: Any) -> None:
    state_dir = str(tmp_path / "c")
    environment = dict(os.environ, FIBER_BUILD_DIR=str(tmp_path / "empty-build"))
    result = subprocess.run([DEV_CLUSTER, "up", state_dir], capture_output=True, text=True, timeout=60,
                            env=environment)
    assert result.returncode == 1
    assert "the controller is not built" in result.stderr and "--no-controller" in result.stderr
    assert processes_mentioning(state_dir) == []


def test_up_twice_refused_and_down_after_a_crash(tmp_path: Any) -> None:
    state_dir = str(tmp_path / "c")
    cid = netns.cluster_id(state_dir)
    first = dev_cluster("up", state_dir, "--no-controller", "--nodes", "1")
    try:
        assert first.returncode == 0, first.stderr
        status = dev_cluster("status", state_dir)
        assert status.returncode == 0 and re.search(r"\bnode-1 +running, pid", status.stdout), status.stdout
        second = dev_cluster("up", state_dir, "--no-controller")
        assert second.returncode == 1
        assert "a cluster is already running in" in second.stderr and "down" in second.stderr

        client = client_from_kubeconfig(os.path.join(state_dir, "kubeconfig"))
        client.create(pod_path("default"), {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "orphan"},
            "spec": {"restartPolicy": "Never",
                     "containers": [{"name": "main", "image": "debian", "command": ["sleep", "600"]}]}})
        wait_for_object(client, pod_path("default"), "orphan",
                        lambda pod: pod is not None and pod["status"].get("phase") == "Running", 30)
        pod_pids = [read_pid(path) for path in glob.glob(os.path.join(state_dir, "nodes", "pids", "pods", "*"))]
        assert len(pod_pids) == 1 and pod_pids[0] > 0
        for pid_file in glob.glob(os.path.join(state_dir, "pids", "*.pid")):
            os.kill(read_pid(pid_file), signal.SIGKILL)
        assert pid_alive(pod_pids[0])   # the pod's process outlives the crash of its node
    finally:
        stopped = dev_cluster("down", state_dir)
    assert stopped.returncode == 0, stopped.stderr
    assert processes_mentioning(state_dir) == []
    assert netns.cluster_network_leftovers(cid) == []
    assert not pid_alive(pod_pids[0]), f"pod process {pod_pids[0]} survived down"
    again = dev_cluster("down", state_dir)
    assert again.returncode == 0, again.stderr
    assert dev_cluster("status", state_dir).returncode == 1


def test_two_clusters_at_once_have_their_own_networks(tmp_path: Any) -> None:
    dirs = [str(tmp_path / "one"), str(tmp_path / "two")]
    try:
        for state_dir in dirs:
            started = dev_cluster("up", state_dir, "--no-controller", "--nodes", "1")
            assert started.returncode == 0, started.stderr
        records = [json.load(open(os.path.join(state_dir, "cluster.json"))) for state_dir in dirs]
        assert records[0]["cluster_id"] != records[1]["cluster_id"]
        if records[0]["network"] == "pod-netns":
            assert records[0]["bridge"] != records[1]["bridge"] and records[0]["subnet"] != records[1]["subnet"]
        ips = []
        for state_dir in dirs:
            client = client_from_kubeconfig(os.path.join(state_dir, "kubeconfig"))
            client.create(pod_path("default"), {
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "same-name"},
                "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                         "containers": [{"name": "main", "image": "debian", "command": ["sleep", "600"]}]}})
            running = wait_for_object(client, pod_path("default"), "same-name",
                                      lambda pod: pod is not None and pod["status"].get("phase") == "Running", 30)
            ips.append(running["status"]["podIP"])
        if records[0]["network"] == "pod-netns":
            assert ips[0] != ips[1]
    finally:
        results = [dev_cluster("down", state_dir) for state_dir in dirs]
    for state_dir, result in zip(dirs, results):
        assert result.returncode == 0, result.stderr
        assert processes_mentioning(state_dir) == []
        assert netns.cluster_network_leftovers(netns.cluster_id(state_dir)) == []
