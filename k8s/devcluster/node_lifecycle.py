"""A stand-in for two of kube-controller-manager's controllers, the parts that act when a node is
lost:

- The node lifecycle controller: a node whose kubelet has renewed neither its Lease nor its Ready
  condition for `--node-monitor-grace-period` gets its conditions set to Unknown
  (`NodeStatusUnknown`, "Kubelet stopped posting node status."), the taints
  `node.kubernetes.io/unreachable` (NoExecute and NoSchedule; `not-ready` when the kubelet itself
  reports Ready=False), and its pods' Ready condition set to False. When the kubelet posts Ready
  again, the taints go.
- The taint eviction controller: a pod on a node with a NoExecute taint it does not tolerate is
  deleted at once; one that tolerates it for `tolerationSeconds` is deleted once that long has
  passed since the taint was added (the least of its matching tolerations counts; a toleration
  without seconds tolerates for good). Before the delete the pod gets the condition
  DisruptionTarget (`DeletionByTaintManager`) and a `TaintManagerEviction` Event.

As on a real cluster, a deleted pod of a lost node stays Running with its deletion timestamp set
until its kubelet comes back and ends it: nobody else can tell that its processes are gone."""

from __future__ import annotations

import argparse
import logging
import signal
import threading
import time
from datetime import datetime, timezone
from typing import Any

from .kube import JSON, KubeClient, KubeError, client_from_kubeconfig, core_path, group_path, make_event, pod_path
from .node_process import now_rfc3339
from .scheduler import toleration_matches

UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY = "node.kubernetes.io/not-ready"
# The kubelet's conditions the lifecycle controller sets to Unknown when the kubelet goes silent.
KUBELET_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
SILENT_REASON = "NodeStatusUnknown"
SILENT_MESSAGE = "Kubelet stopped posting node status."
# How often evictions are checked: tolerationSeconds are honoured to about this.
EVICTION_TICK_S = 0.5


def parse_time(text: str | None) -> float:
    """A Time or MicroTime (RFC 3339, `Z`) as seconds since the epoch; 0 for none."""
    if not text:
        return 0.0
    text = text.rstrip("Z")
    for pattern in ("%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S"):
        try:
            return datetime.strptime(text, pattern).replace(tzinfo=timezone.utc).timestamp()
        except ValueError:
            continue
    return 0.0


def condition_of(obj: JSON, kind: str) -> JSON | None:
    return next((c for c in obj.get("status", {}).get("conditions") or [] if c.get("type") == kind), None)


def eviction_delay(pod: JSON, taints: list[JSON]) -> float | None:
    """Seconds after its taint's timeAdded that `pod` is to be deleted: 0 when some NoExecute taint
    is not tolerated, None when every one is tolerated for good."""
    tolerations = pod.get("spec", {}).get("tolerations") or []
    delay: float | None = None
    for taint in taints:
        matching = [t for t in tolerations if toleration_matches(t, taint)]
        if not matching:
            return 0.0
        for toleration in matching:
            seconds = toleration.get("tolerationSeconds")
            if seconds is not None:
                seconds = max(float(seconds), 0.0)
                delay = seconds if delay is None else min(delay, seconds)
    return delay


class NodeLifecycleController:
    """Watches the nodes' heartbeats and evicts the pods of nodes that went silent."""

    def __init__(self, client: KubeClient, grace_s: float, period_s: float):
        self.client = client
        self.grace_s = grace_s
        self.period_s = period_s
        self.stopped = threading.Event()
        self.log = logging.getLogger("node-lifecycle")
        self.last_monitor = 0.0

    def run(self) -> None:
        while not self.stopped.is_set():
            try:
                self.pass_once(time.time())
            except KubeError as error:
                self.log.warning("%s", error)
            except Exception:
                self.log.exception("pass failed")
            self.stopped.wait(EVICTION_TICK_S)

    def pass_once(self, now: float) -> None:
        nodes = self.client.list(core_path("nodes")).get("items") or []
        if now - self.last_monitor >= self.period_s:
            self.last_monitor = now
            leases = {lease["metadata"]["name"]: lease for lease in self.client.list(
                group_path("coordination.k8s.io", "v1", "leases", "kube-node-lease")).get("items") or []}
            nodes = [self.monitor(node, leases.get(node["metadata"]["name"]), now) for node in nodes]
        tainted = {node["metadata"]["name"]: [t for t in node.get("spec", {}).get("taints") or []
                                              if t.get("effect") == "NoExecute"] for node in nodes}
        tainted = {name: taints for name, taints in tainted.items() if taints}
        if tainted:
            self.evict(tainted, now)

    # --- node monitoring --------------------------------------------------------------------------
    def monitor(self, node: JSON, lease: JSON | None, now: float) -> JSON:
        """Marks a silent node Unknown and keeps its taints matching its Ready condition; returns
        the node as it now is."""
        name = node["metadata"]["name"]
        ready = condition_of(node, "Ready")
        heard = max(parse_time((lease or {}).get("spec", {}).get("renewTime")),
                    parse_time((ready or {}).get("lastHeartbeatTime")))
        if ready is not None and ready.get("status") != "Unknown" and now - heard > self.grace_s:
            node = self.mark_silent(node)
            ready = condition_of(node, "Ready")
            self.mark_pods_not_ready(name)
        status = (ready or {}).get("status", "Unknown")
        wanted_key = {"True": None, "False": NOT_READY}.get(status, UNREACHABLE)
        taints = node.get("spec", {}).get("taints") or []
        kept = [t for t in taints if t.get("key") not in (UNREACHABLE, NOT_READY) or t.get("key") == wanted_key]
        if wanted_key is not None:
            for effect in ("NoSchedule", "NoExecute"):
                if not any(t.get("key") == wanted_key and t.get("effect") == effect for t in kept):
                    taint: JSON = {"key": wanted_key, "effect": effect}
                    if effect == "NoExecute":
                        taint["timeAdded"] = now_rfc3339()
                    kept.append(taint)
        if kept != taints:
            node = self.client.patch(core_path("nodes", name=name), {"spec": {"taints": kept or None}})
            self.log.info("node %s: taints now %s", name, [f"{t['key']}:{t['effect']}" for t in kept])
        return node

    def mark_silent(self, node: JSON) -> JSON:
        name = node["metadata"]["name"]
        now = now_rfc3339()
        conditions = []
        for condition in node.get("status", {}).get("conditions") or []:
            if condition.get("type") in KUBELET_CONDITIONS and condition.get("status") != "Unknown":
                condition = dict(condition, status="Unknown", reason=SILENT_REASON, message=SILENT_MESSAGE,
                                 lastTransitionTime=now)
            conditions.append(condition)
        node = self.client.patch(core_path("nodes", name=name, subresource="status"),
                                 {"status": {"conditions": conditions}})
        self.log.info("node %s: no heartbeat for over %g s: Ready Unknown", name, self.grace_s)
        self.event(dict(node, kind="Node", apiVersion="v1"), "Normal", "NodeNotReady",
                   f"Node {name} status is now: NodeNotReady", "node-controller")
        return node

    def mark_pods_not_ready(self, node_name: str) -> None:
        pods = self.client.list(core_path("pods"), field_selector=f"spec.nodeName={node_name}").get("items") or []
        for pod in pods:
            ready = condition_of(pod, "Ready")
            if ready is None or ready.get("status") == "False":
                continue
            conditions = [dict(c, status="False", lastTransitionTime=now_rfc3339()) if c is ready else c
                          for c in pod["status"]["conditions"]]
            metadata = pod["metadata"]
            try:
                self.client.patch(pod_path(metadata["namespace"], metadata["name"], "status"),
                                  {"status": {"conditions": conditions}})
            except KubeError as error:
                if error.code != 404:
                    raise
                continue
            self.event(pod, "Warning", "NodeNotReady", "Node is not ready", "node-controller")

    # --- taint eviction ---------------------------------------------------------------------------
    def evict(self, tainted: dict[str, list[JSON]], now: float) -> None:
        for node_name, taints in tainted.items():
            started = min(parse_time(t.get("timeAdded")) or now for t in taints)
            pods = self.client.list(core_path("pods"),
                                    field_selector=f"spec.nodeName={node_name}").get("items") or []
            for pod in pods:
                if pod["metadata"].get("deletionTimestamp") or \
                        pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
                    continue
                delay = eviction_delay(pod, taints)
                if delay is not None and now >= started + delay:
                    self.evict_pod(pod)

    def evict_pod(self, pod: JSON) -> None:
        metadata = pod["metadata"]
        namespace, name = metadata["namespace"], metadata["name"]
        conditions = [c for c in pod.get("status", {}).get("conditions") or [] if c.get("type") != "DisruptionTarget"]
        conditions.append({"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager",
                           "message": "Taint manager: deleting due to NoExecute taint",
                           "lastProbeTime": None, "lastTransitionTime": now_rfc3339()})
        try:
            self.client.patch(pod_path(namespace, name, "status"), {"status": {"conditions": conditions}})
            self.event(pod, "Normal", "TaintManagerEviction", f"Marking for deletion Pod {namespace}/{name}",
                       "taint-eviction-controller")
            self.client.delete(pod_path(namespace, name))
            self.log.info("evicted pod %s/%s from node %s", namespace, name, pod["spec"].get("nodeName"))
        except KubeError as error:
            if error.code != 404:
                raise

    def event(self, involved: JSON, kind: str, reason: str, message: str, component: str) -> None:
        namespace = involved.get("metadata", {}).get("namespace") or "default"
        try:
            self.client.create(core_path("events", namespace),
                               make_event(dict(involved, metadata=dict(involved["metadata"], namespace=namespace)),
                                          kind, reason, message, component))
        except KubeError as error:
            self.log.debug("event: %s", error)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--node-monitor-grace-period", type=float, default=40.0, metavar="SECONDS",
                        help="silence after which a node is Unknown and tainted unreachable (default 40, "
                             "kube-controller-manager's)")
    parser.add_argument("--node-monitor-period", type=float, default=5.0, metavar="SECONDS",
                        help="how often the nodes' heartbeats are checked (default 5)")


def main(args: Any) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    controller = NodeLifecycleController(client_from_kubeconfig(args.kubeconfig), args.node_monitor_grace_period,
                                         args.node_monitor_period)
    signal.signal(signal.SIGTERM, lambda *_: controller.stopped.set())
    signal.signal(signal.SIGINT, lambda *_: controller.stopped.set())
    controller.run()
    return 0
