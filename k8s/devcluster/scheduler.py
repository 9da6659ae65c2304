"""A scheduler stand-in: binds each unscheduled pod (no spec.nodeName, schedulerName
default-scheduler) to a Ready node through `pods/NAME/binding`, honouring nodeSelector, taints,
the node's allocatable pods, cpu and memory against the pods already there, and spreading pods
to the node with the fewest. A pod that fits nowhere gets PodScheduled=False (Unschedulable) with
the real scheduler's message and a FailedScheduling Event, and is tried again on every change of
pods or nodes."""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from collections import Counter
from typing import Any

from .kube import JSON, KubeClient, KubeError, client_from_kubeconfig, core_path, make_event, parse_quantity, pod_path
from .node_process import now_rfc3339

SCHEDULER_NAME = "default-scheduler"
WATCH_TIMEOUT_S = 60
RETRY_S = 5.0


def pod_requests(pod: JSON) -> dict[str, float]:
    """Effective cpu and memory requests: the sum over containers, or the largest init container."""
    def requests_of(container: JSON) -> dict[str, float]:
        requests = (container.get("resources") or {}).get("requests") or {}
        return {name: parse_quantity(requests[name]) for name in ("cpu", "memory") if name in requests}
    total: Counter[str] = Counter()
    for container in pod.get("spec", {}).get("containers") or []:
        total.update(requests_of(container))
    for container in pod.get("spec", {}).get("initContainers") or []:
        for name, value in requests_of(container).items():
            total[name] = max(total[name], value)
    return dict(total)


def is_active(pod: JSON) -> bool:
    return pod.get("status", {}).get("phase") not in ("Succeeded", "Failed")


def node_ready(node: JSON) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in node.get("status", {}).get("conditions") or [])


def toleration_matches(toleration: JSON, taint: JSON) -> bool:
    """Whether one toleration tolerates `taint` (its effect, then Exists or Equal on the key)."""
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("operator") == "Exists":
        return not toleration.get("key") or toleration["key"] == taint.get("key")
    return toleration.get("key") == taint.get("key") and toleration.get("value", "") == taint.get("value", "")


def tolerates(pod: JSON, taint: JSON) -> bool:
    return any(toleration_matches(t, taint) for t in pod.get("spec", {}).get("tolerations") or [])


def expression_matches(expression: JSON, values_of: dict[str, str]) -> bool:
    """One nodeSelectorRequirement (In, NotIn, Exists, DoesNotExist, Gt, Lt)."""
    key, operator = expression.get("key", ""), expression.get("operator", "")
    values = expression.get("values") or []
    present = key in values_of
    if operator == "In":
        return present and values_of[key] in values
    if operator == "NotIn":
        return not present or values_of[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and values:
        try:
            have, bound = int(values_of[key]), int(values[0])
        except ValueError:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False


def matches_node_affinity(pod: JSON, node: JSON) -> bool:
    """requiredDuringSchedulingIgnoredDuringExecution: any term matches when all its label
    expressions and field expressions (metadata.name) do."""
    required = (((pod.get("spec", {}).get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    labels = node.get("metadata", {}).get("labels") or {}
    fields = {"metadata.name": node.get("metadata", {}).get("name", "")}
    return any(all(expression_matches(e, labels) for e in term.get("matchExpressions") or [])
               and all(expression_matches(e, fields) for e in term.get("matchFields") or [])
               for term in terms)


def misfit(pod: JSON, node: JSON, pods_on_node: list[JSON]) -> str:
    """Why the pod does not fit the node, worded as the scheduler's filters do; empty if it fits."""
    if node.get("spec", {}).get("unschedulable"):
        return "node(s) were unschedulable"
    if not node_ready(node):
        return "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"
    for taint in node.get("spec", {}).get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(pod, taint):
            return f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value', '')}}}"
    labels = node.get("metadata", {}).get("labels") or {}
    selector_matches = all(labels.get(key) == value
                           for key, value in (pod.get("spec", {}).get("nodeSelector") or {}).items())
    if not selector_matches or not matches_node_affinity(pod, node):
        return "node(s) didn't match Pod's node affinity/selector"
    allocatable = node.get("status", {}).get("allocatable") or {}
    if len(pods_on_node) + 1 > int(parse_quantity(allocatable.get("pods", "110"))):
        return "Too many pods"
    wanted = pod_requests(pod)
    for resource in ("cpu", "memory"):
        if resource in wanted and resource in allocatable:
            used = sum(pod_requests(other).get(resource, 0.0) for other in pods_on_node)
            if used + wanted[resource] > parse_quantity(allocatable[resource]) + 1e-9:
                return f"Insufficient {resource}"
    return ""


def unschedulable_message(node_count: int, reasons: list[str]) -> str:
    """`0/2 nodes are available: 1 Insufficient cpu, 1 Too many pods.` as the scheduler writes it."""
    if node_count == 0:
        return "no nodes available to schedule pods"
    counts = Counter(reasons)
    parts = ", ".join(f"{count} {reason}" for reason, count in sorted(counts.items()))
    return f"0/{node_count} nodes are available: {parts}."


def choose_node(pod: JSON, nodes: list[JSON], pods_by_node: dict[str, list[JSON]]) -> tuple[str, str]:
    """(node name, "") for the fitting node with the fewest pods, or ("", why none fits)."""
    fitting = []
    reasons = []
    for node in nodes:
        name = node["metadata"]["name"]
        reason = misfit(pod, node, pods_by_node.get(name, []))
        if reason:
            reasons.append(reason)
        else:
            fitting.append((len(pods_by_node.get(name, [])), name))
    if fitting:
        return min(fitting)[1], ""
    return "", unschedulable_message(len(nodes), reasons)


class Cache:
    """List + watch of one resource into a dict by uid; calls `changed` on every change."""

    def __init__(self, client: KubeClient, path: str, changed: threading.Event, stopped: threading.Event):
        self.client = client.clone()
        self.path = path
        self.changed = changed
        self.stopped = stopped
        self.items: dict[str, JSON] = {}
        self.lock = threading.Lock()
        self.synced = threading.Event()

    def snapshot(self) -> list[JSON]:
        with self.lock:
            return list(self.items.values())

    def run(self) -> None:
        log = logging.getLogger(f"scheduler cache {self.path}")
        while not self.stopped.is_set():
            try:
                listed = self.client.list(self.path)
                with self.lock:
                    self.items = {item["metadata"]["uid"]: item for item in listed.get("items") or []}
                self.synced.set()
                self.changed.set()
                version = listed["metadata"]["resourceVersion"]
                while not self.stopped.is_set():
                    version = self.follow(version)
            except KubeError as error:
                if error.code != 410:
                    log.warning("%s", error)
                    self.stopped.wait(1.0)

    def follow(self, version: str) -> str:
        for kind, item in self.client.watch_changes(self.path, version, timeout_seconds=WATCH_TIMEOUT_S):
            version = item.get("metadata", {}).get("resourceVersion", version)
            if kind == "BOOKMARK":
                continue
            with self.lock:
                if kind == "DELETED":
                    self.items.pop(item["metadata"]["uid"], None)
                else:
                    self.items[item["metadata"]["uid"]] = item
            self.changed.set()
        return version


class Scheduler:
    """Binds pending pods whenever pods or nodes change."""

    def __init__(self, client: KubeClient):
        self.client = client
        self.changed = threading.Event()
        self.stopped = threading.Event()
        self.pods = Cache(client, core_path("pods"), self.changed, self.stopped)
        self.nodes = Cache(client, core_path("nodes"), self.changed, self.stopped)
        self.assumed: dict[str, str] = {}       # pod uid -> node, bound but not yet seen bound
        self.reported: dict[str, str] = {}      # pod uid -> last unschedulable message
        self.log = logging.getLogger("scheduler")

    def run(self) -> None:
        for cache in (self.pods, self.nodes):
            threading.Thread(target=cache.run, daemon=True).start()
        while not self.stopped.is_set():
            self.changed.wait(RETRY_S)
            self.changed.clear()
            if self.pods.synced.is_set() and self.nodes.synced.is_set():
                self.schedule_pending()

    def schedule_pending(self) -> None:
        pods = self.pods.snapshot()
        nodes = sorted(self.nodes.snapshot(), key=lambda node: node["metadata"]["name"])
        pods_by_node: dict[str, list[JSON]] = {}
        pending = []
        for pod in pods:
            uid = pod["metadata"]["uid"]
            node_name = pod.get("spec", {}).get("nodeName") or self.assumed.get(uid, "")
            if pod.get("spec", {}).get("nodeName"):
                self.assumed.pop(uid, None)
            if node_name:
                if is_active(pod):
                    pods_by_node.setdefault(node_name, []).append(pod)
            elif (pod.get("spec", {}).get("schedulerName") or SCHEDULER_NAME) == SCHEDULER_NAME \
                    and not pod["metadata"].get("deletionTimestamp") and is_active(pod):
                pending.append(pod)
        live = {pod["metadata"]["uid"] for pod in pods}
        self.reported = {uid: message for uid, message in self.reported.items() if uid in live}
        self.assumed = {uid: node for uid, node in self.assumed.items() if uid in live}
        pending.sort(key=lambda pod: pod["metadata"].get("creationTimestamp", ""))
        for pod in pending:
            node_name, why = choose_node(pod, nodes, pods_by_node)
            if node_name and self.bind(pod, node_name):
                pods_by_node.setdefault(node_name, []).append(pod)
            elif why:
                self.report_unschedulable(pod, why)

    def bind(self, pod: JSON, node_name: str) -> bool:
        metadata = pod["metadata"]
        binding = {"apiVersion": "v1", "kind": "Binding",
                   "metadata": {"name": metadata["name"], "namespace": metadata.get("namespace", "default"),
                                "uid": metadata["uid"]},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}}
        try:
            self.client.create(pod_path(metadata.get("namespace", "default"), metadata["name"], "binding"), binding)
        except KubeError as error:
            self.log.warning("binding %s/%s to %s: %s", metadata.get("namespace"), metadata["name"], node_name, error)
            return False
        self.assumed[metadata["uid"]] = node_name
        self.reported.pop(metadata["uid"], None)
        self.event(pod, "Normal", "Scheduled",
                   f"Successfully assigned {metadata.get('namespace', 'default')}/{metadata['name']} to {node_name}")
        return True

    def report_unschedulable(self, pod: JSON, message: str) -> None:
        metadata = pod["metadata"]
        uid = metadata["uid"]
        if self.reported.get(uid) == message:
            return
        self.reported[uid] = message
        conditions = [c for c in pod.get("status", {}).get("conditions") or [] if c.get("type") != "PodScheduled"]
        conditions.append({"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message,
                           "lastProbeTime": None, "lastTransitionTime": now_rfc3339()})
        try:
            self.client.patch(pod_path(metadata.get("namespace", "default"), metadata["name"], "status"),
                              {"status": {"conditions": conditions}})
        except KubeError as error:
            self.log.warning("status of %s: %s", metadata["name"], error)
        self.event(pod, "Warning", "FailedScheduling", message)

    def event(self, pod: JSON, kind: str, reason: str, message: str) -> None:
        try:
            self.client.create(core_path("events", pod["metadata"].get("namespace", "default")),
                               make_event(dict(pod, kind="Pod", apiVersion="v1"), kind, reason, message,
                                          SCHEDULER_NAME))
        except KubeError as error:
            self.log.debug("event: %s", error)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", required=True)


def main(args: Any) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    scheduler = Scheduler(client_from_kubeconfig(args.kubeconfig))
    signal.signal(signal.SIGTERM, lambda *_: (scheduler.stopped.set(), scheduler.changed.set()))
    signal.signal(signal.SIGINT, lambda *_: (scheduler.stopped.set(), scheduler.changed.set()))
    scheduler.run()
    return 0
