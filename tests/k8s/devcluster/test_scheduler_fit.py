"""The scheduler's decisions as pure functions: which node fits, spreading, and the message of a
pod that fits nowhere."""

from __future__ import annotations

from typing import Any

from k8s.devcluster.scheduler import choose_node, misfit, pod_requests, unschedulable_message


def node(name: str, pods: int = 110, cpu: str = "2", memory: str = "4Gi", ready: bool = True,
         labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": spec,
            "status": {"allocatable": {"pods": str(pods), "cpu": cpu, "memory": memory},
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def pod(name: str, cpu: str = "", memory: str = "", **spec: Any) -> dict[str, Any]:
    requests = {key: value for key, value in (("cpu", cpu), ("memory", memory)) if value}
    return {"metadata": {"name": name, "uid": name},
            "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}], **spec}}


def test_spreads_to_the_node_with_fewest_pods() -> None:
    nodes = [node("node-1"), node("node-2")]
    assert choose_node(pod("a"), nodes, {"node-1": [pod("x")]}) == ("node-2", "")
    assert choose_node(pod("a"), nodes, {"node-2": [pod("x")]}) == ("node-1", "")
    assert choose_node(pod("a"), nodes, {}) == ("node-1", "")


def test_too_many_pods_message_is_the_real_one() -> None:
    nodes = [node("node-1", pods=1), node("node-2", pods=1)]
    busy = {"node-1": [pod("x")], "node-2": [pod("y")]}
    assert choose_node(pod("a"), nodes, busy) == ("", "0/2 nodes are available: 2 Too many pods.")


def test_resources_selector_and_readiness() -> None:
    nodes = [node("node-1", cpu="1"), node("node-2", labels={"disk": "ssd"}, memory="1Gi"),
             node("node-3", ready=False)]
    hungry = pod("a", cpu="1500m", memory="2Gi", nodeSelector={"disk": "ssd"})
    _, why = choose_node(hungry, nodes, {})
    assert why == ("0/3 nodes are available: 1 Insufficient memory, 1 node(s) didn't match Pod's node "
                   "affinity/selector, 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }.")
    assert choose_node(pod("b", cpu="500m", nodeSelector={"disk": "ssd"}), nodes, {}) == ("node-2", "")
    assert misfit(pod("c", cpu="600m"), nodes[0], [pod("d", cpu="500m")]) == "Insufficient cpu"


def test_required_node_affinity() -> None:
    nodes = [node("node-1", labels={"zone": "a", "slots": "4"}), node("node-2", labels={"zone": "b", "slots": "16"})]
    def affine(*expressions: dict[str, Any], fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        term: dict[str, Any] = {"matchExpressions": list(expressions)}
        if fields:
            term["matchFields"] = fields
        return pod("a", affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [term]}}})
    assert choose_node(affine({"key": "zone", "operator": "In", "values": ["b"]}), nodes, {})[0] == "node-2"
    assert choose_node(affine({"key": "slots", "operator": "Gt", "values": ["8"]}), nodes, {})[0] == "node-2"
    assert choose_node(affine({"key": "zone", "operator": "NotIn", "values": ["b"]}), nodes, {})[0] == "node-1"
    assert choose_node(affine(fields=[{"key": "metadata.name", "operator": "In", "values": ["node-2"]}]),
                       nodes, {})[0] == "node-2"
    assert choose_node(affine({"key": "gpu", "operator": "Exists"}), nodes, {}) == (
        "", "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.")


def test_taints_need_tolerations() -> None:
    tainted = node("node-1", taints=[{"key": "gpu", "value": "yes", "effect": "NoSchedule"}])
    assert misfit(pod("a"), tainted, []) == "node(s) had untolerated taint {gpu: yes}"
    tolerant = pod("b", tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}])
    assert misfit(tolerant, tainted, []) == ""
    assert misfit(pod("c"), node("node-2", unschedulable=True), []) == "node(s) were unschedulable"


def test_requests_take_the_largest_init_container() -> None:
    spec_pod = pod("a", cpu="250m", memory="64Mi")
    spec_pod["spec"]["containers"].append({"name": "d", "resources": {"requests": {"cpu": "250m"}}})
    spec_pod["spec"]["initContainers"] = [{"name": "i", "resources": {"requests": {"cpu": "2", "memory": "1Mi"}}}]
    assert pod_requests(spec_pod) == {"cpu": 2.0, "memory": 64 * 2**20}


def test_no_nodes() -> None:
    assert unschedulable_message(0, []) == "no nodes available to schedule pods"
