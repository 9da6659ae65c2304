"""A node cut off while a FiberJob maps: its kubelet stops and its pods' network goes (a partition,
`scripts/dev-cluster pause-node --cut-network`). The launcher declares the silent workers lost and
runs their tasks again elsewhere, the node lifecycle controller taints the node and the pods'
short node-loss tolerations get them evicted, the pool grows back onto replacements on the node
that answers, and every result arrives exactly once. When the node comes back its kubelet ends
the evicted pods.

The launcher and the name service are pinned to node-1, so that the cut takes only workers; the
cluster's grace period is short (6 s, where kube-controller-manager's is 40 s)."""

from __future__ import annotations

import subprocess
import time
from typing import Iterator

import pytest
import yaml

from test_k8s_runtime import ROOT, Cluster, dev_cluster, fiberjob, pods_in, succeeded, wait_until, workers_in

GRACE_S = 6
TOLERATION_S = 2
ON_NODE_1 = {"nodeSelector": {"kubernetes.io/hostname": "node-1"}}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    with dev_cluster(tmp_path_factory.mktemp("cluster"), "--node-monitor-grace-period", str(GRACE_S)) as started:
        yield started


def dev_cluster_command(cluster: Cluster, *args: str) -> None:
    done = subprocess.run([str(ROOT / "scripts/dev-cluster"), *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_workers_on_a_partitioned_node_are_replaced_and_the_map_stays_exact(cluster: Cluster):
    name = "partition"
    job = yaml.safe_load(fiberjob(name, "partition", run_policy={"nodeLossTolerationSeconds": TOLERATION_S}))
    job["spec"]["launcher"]["template"]["spec"].update(ON_NODE_1)
    job["spec"]["nameService"] = {"template": {"spec": {**ON_NODE_1, "containers": [{
        "name": "name-service", "image": "fibermpi/runtime",
        "command": ["stdbuf", "-oL", "ompi-server", "--no-daemonize", "-r", "-"],
        "env": [{"name": "OMPI_ALLOW_RUN_AS_ROOT", "value": "1"},
                {"name": "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "value": "1"}]}]}}}
    cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(job))
    wait_until("4 workers ready", lambda: "4 workers ready" in cluster.log(f"{name}-launcher"), timeout_s=90)
    first = cluster.pods(name, "worker")
    cut_off = sorted(pod["metadata"]["name"] for pod in first if pod["spec"].get("nodeName") == "node-2")
    assert cut_off, f"no worker pod on node-2: {[pod['spec'].get('nodeName') for pod in first]}"
    time.sleep(1.0)  # the map is under way (about 7.5 s on 4 workers)
    dev_cluster_command(cluster, "pause-node", "--cut-network", str(cluster.dir), "node-2")
    cut_at = time.monotonic()
    try:
        log = succeeded(cluster, name, timeout_s=240)
        mapped = workers_in(log, "map of 3000")
        assert sum(mapped.values()) == 3000, mapped
        # The cut-off workers fell silent: the launcher's heartbeat checks, not a closed
        # connection, declared them lost.
        assert "heartbeat timeout" in log, log
        # The pool grew back onto replacement pods (new names: the cut-off pods still hold theirs).
        after = pods_in(log, "map after")
        assert sum(after.values()) == 400 and not set(after) & set(cut_off), (after, cut_off)
        assert set(after) - {pod["metadata"]["name"] for pod in first}, f"no replacement took tasks: {after}"
        # The cut-off pods were evicted (their 2 s toleration of the node's unreachable taint) but,
        # their kubelet away, are still there: only it can end them.
        for pod in cut_off:
            state = cluster.get("pod", pod)
            assert state["metadata"].get("deletionTimestamp"), state
            assert any(c["type"] == "DisruptionTarget" and c.get("reason") == "DeletionByTaintManager"
                       for c in state["status"]["conditions"]), state
        node = cluster.get("node", "node-2")
        assert any(t["key"] == "node.kubernetes.io/unreachable" for t in node["spec"].get("taints") or []), node
        print(f"job done {time.monotonic() - cut_at:.1f} s after the cut")
    finally:
        dev_cluster_command(cluster, "resume-node", str(cluster.dir), "node-2")
    wait_until("the cut-off pods to end once their kubelet is back",
               lambda: not set(cut_off) & {p["metadata"]["name"] for p in cluster.pods(name, "worker")},
               timeout_s=60)
