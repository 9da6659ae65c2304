"""A kubelet stand-in: registers its Node, renews its Lease in kube-node-lease, lists and watches
the pods bound to it (relisting on 410 Gone) and gives each one a PodWorker that runs its
containers as podman containers (an image in podman's store) or local processes. SIGTERM or SIGINT stops it, killing its pods' processes."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import platform
import signal
import threading
import time
import uuid
from typing import Any

from .kube import JSON, KubeClient, KubeError, client_from_kubeconfig, core_path, group_path
from .netns import ClusterNetwork
from .node_container import PodmanImages
from .node_images import ImageTable, parse_image_argument
from .node_pod import NodeContext, PodWorker, clear_pod_dir
from .node_process import now_rfc3339

LEASE_DURATION_S = 40
LEASE_RENEW_S = 4.0
NODE_STATUS_REFRESH_S = 60.0
WATCH_TIMEOUT_S = 60
RECONNECT_DELAY_S = 1.0
KUBELET_VERSION = "v1.33.0-fiber-devcluster"


def total_memory_bytes() -> int:
    with open("/proc/meminfo", encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    return 0


def lease_time() -> str:
    """A MicroTime, as Leases carry them."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + f".{int(time.time() * 1e6) % 1000000:06d}Z"


class Node:
    """One node: registration, lease, pod watch and the pods' workers."""

    def __init__(self, name: str, client: KubeClient, context: NodeContext, capacity: JSON, pod_cidr: str):
        self.name = name
        self.client = client
        self.context = context
        self.capacity = capacity
        self.pod_cidr = pod_cidr
        self.workers: dict[str, PodWorker] = {}
        self.finished: set[str] = set()
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.log = logging.getLogger(f"node {name}")

    # --- registration and heartbeat ------------------------------------------------------------
    def node_object(self) -> JSON:
        labels = {"kubernetes.io/hostname": self.name, "kubernetes.io/os": "linux",
                  "kubernetes.io/arch": "amd64" if platform.machine() == "x86_64" else platform.machine(),
                  "beta.kubernetes.io/os": "linux"}
        spec: JSON = {"podCIDR": self.pod_cidr, "podCIDRs": [self.pod_cidr]} if self.pod_cidr else {}
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": self.name, "labels": labels},
                "spec": spec, "status": self.node_status()}

    def node_status(self) -> JSON:
        now = now_rfc3339()

        def condition(kind: str, status: str, reason: str, message: str) -> JSON:
            return {"type": kind, "status": status, "reason": reason, "message": message,
                    "lastHeartbeatTime": now, "lastTransitionTime": self.started_at}
        return {
            "capacity": self.capacity, "allocatable": self.capacity,
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory",
                          "kubelet has sufficient memory available"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            "addresses": [{"type": "InternalIP", "address": self.context.host_ip},
                          {"type": "Hostname", "address": self.name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
            "nodeInfo": {"machineID": uuid.uuid5(uuid.NAMESPACE_DNS, self.name).hex, "systemUUID": "",
                         "bootID": self.boot_id, "kernelVersion": platform.release(),
                         "osImage": "fibermpi development cluster", "containerRuntimeVersion": "devcluster://1",
                         "kubeletVersion": KUBELET_VERSION, "kubeProxyVersion": "", "operatingSystem": "linux",
                         "architecture": "amd64" if platform.machine() == "x86_64" else platform.machine()},
        }

    def register(self) -> None:
        self.started_at = now_rfc3339()
        self.boot_id = str(uuid.uuid4())
        try:
            self.client.create(core_path("nodes"), self.node_object())
        except KubeError as error:
            if error.code != 409:
                raise
            wanted = self.node_object()
            self.client.patch(core_path("nodes", name=self.name),
                              {"metadata": {"labels": wanted["metadata"]["labels"]}, "spec": wanted["spec"]})
        self.post_node_status(self.client)
        self.log.info("registered (InternalIP %s, podCIDR %s)", self.context.host_ip, self.pod_cidr or "none")

    def post_node_status(self, client: KubeClient) -> None:
        client.patch(core_path("nodes", name=self.name, subresource="status"), {"status": self.node_status()})

    def posted_ready(self, client: KubeClient) -> bool:
        """Whether the server's copy of this node says Ready=True."""
        node = client.get(core_path("nodes", name=self.name))
        return any(c.get("type") == "Ready" and c.get("status") == "True"
                   for c in node.get("status", {}).get("conditions") or [])

    def renew_lease(self, client: KubeClient) -> None:
        path = group_path("coordination.k8s.io", "v1", "leases", "kube-node-lease", self.name)
        try:
            client.patch(path, {"spec": {"holderIdentity": self.name, "renewTime": lease_time(),
                                         "leaseDurationSeconds": LEASE_DURATION_S}})
            return
        except KubeError as error:
            if error.code != 404:
                raise
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": self.name, "namespace": "kube-node-lease"},
                 "spec": {"holderIdentity": self.name, "leaseDurationSeconds": LEASE_DURATION_S,
                          "renewTime": lease_time()}}
        try:
            node = client.get(core_path("nodes", name=self.name))
            lease["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": self.name,
                                                     "uid": node["metadata"]["uid"]}]
        except KubeError:
            pass
        try:
            client.create(group_path("coordination.k8s.io", "v1", "leases", "kube-node-lease"), lease)
        except KubeError as error:
            if error.code != 404:
                raise
            client.create(core_path("namespaces"), {"apiVersion": "v1", "kind": "Namespace",
                                                    "metadata": {"name": "kube-node-lease"}})

    def heartbeat_loop(self) -> None:
        client = self.client.clone()
        last_status = time.monotonic()
        while not self.stopped.is_set():
            try:
                self.renew_lease(client)
                # Back after a silence (this process stopped, say): the node lifecycle controller
                # has set Ready to Unknown meanwhile, and the kubelet posts its own status at once
                # when the server's differs from it.
                ready = self.posted_ready(client)
                if not ready:
                    self.started_at = now_rfc3339()    # the conditions' new lastTransitionTime
                if not ready or time.monotonic() - last_status >= NODE_STATUS_REFRESH_S:
                    self.post_node_status(client)
                    last_status = time.monotonic()
            except KubeError as error:
                self.log.warning("lease renewal: %s", error)
            self.stopped.wait(LEASE_RENEW_S)

    # --- pods ----------------------------------------------------------------------------------
    def watch_loop(self) -> None:
        client = self.client.clone()
        selector = f"spec.nodeName={self.name}"
        while not self.stopped.is_set():
            try:
                listed = client.list(core_path("pods"), field_selector=selector)
                version = listed["metadata"]["resourceVersion"]
                self.sync(listed.get("items") or [])
                while not self.stopped.is_set():
                    version = self.watch_once(client, selector, version)
            except KubeError as error:
                if error.code == 410:
                    self.log.info("watch expired (%s): relisting", error.message)
                    continue
                self.log.warning("pod watch: %s", error)
                self.stopped.wait(RECONNECT_DELAY_S)
            except Exception:
                self.log.exception("pod watch failed")
                self.stopped.wait(RECONNECT_DELAY_S)

    def watch_once(self, client: KubeClient, selector: str, version: str) -> str:
        """Follows one watch stream; returns the version to resume from. Raises KubeError(410) when
        the server says the version is too old."""
        for kind, item in client.watch_changes(core_path("pods"), version, field_selector=selector,
                                               timeout_seconds=WATCH_TIMEOUT_S):
            version = item.get("metadata", {}).get("resourceVersion", version)
            if kind in ("ADDED", "MODIFIED"):
                self.dispatch(item)
            elif kind == "DELETED":
                self.forget(item["metadata"]["uid"])
            if self.stopped.is_set():
                break
        return version

    def sync(self, pods: list[JSON]) -> None:
        """After a (re)list: every listed pod dispatched, every worker whose pod is gone told so."""
        listed = {pod["metadata"]["uid"] for pod in pods}
        for pod in pods:
            self.dispatch(pod)
        with self.lock:
            vanished = [uid for uid in self.workers if uid not in listed]
        for uid in vanished:
            self.forget(uid)

    def dispatch(self, pod: JSON) -> None:
        uid = pod["metadata"]["uid"]
        with self.lock:
            self.reap()
            if uid in self.finished or self.stopped.is_set():
                return
            worker = self.workers.get(uid)
            if worker is None:
                worker = PodWorker(self.context, pod)
                self.workers[uid] = worker
                worker.start()
                return
        worker.update(pod)

    def forget(self, uid: str) -> None:
        with self.lock:
            worker = self.workers.get(uid)
            self.finished.add(uid)
        if worker is not None:
            worker.mark_gone()

    def reap(self) -> None:
        """Drops workers whose pods are deleted (called with the lock held)."""
        for uid, worker in list(self.workers.items()):
            if not worker.is_alive():
                del self.workers[uid]
                self.finished.add(uid)
                clear_pod_dir(self.context, uid)

    # --- run -----------------------------------------------------------------------------------
    def run(self) -> None:
        self.register()
        threading.Thread(target=self.heartbeat_loop, name="heartbeat", daemon=True).start()
        threading.Thread(target=self.watch_loop, name="pod-watch", daemon=True).start()
        self.stopped.wait()
        self.shutdown()

    def shutdown(self) -> None:
        self.log.info("stopping: killing the processes of %d pods", len(self.workers))
        with self.lock:
            workers = list(self.workers.values())
        for worker in workers:
            worker.stop()
        for worker in workers:
            worker.join(timeout=30)


def parse_capacity(cpu: str, memory: str, pods: int) -> JSON:
    return {"cpu": cpu, "memory": memory, "pods": str(pods), "ephemeral-storage": "10Gi"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name", required=True, help="node name (node-1)")
    parser.add_argument("--kubeconfig", required=True, help="kubeconfig the node talks to the API server with")
    parser.add_argument("--state-dir", required=True, help="the cluster's dir: pod files, pid files")
    parser.add_argument("--pod-log-dir", required=True, help="where <ns>_<pod>_<uid>/<container>.log files go")
    parser.add_argument("--host-ip", required=True, help="the node's InternalIP (and its pods' gateway)")
    parser.add_argument("--subnet", default="", help="the cluster's pod network (10.S.0.0/16); empty: host network")
    parser.add_argument("--pod-cidr", default="", help="this node's pod CIDR within the subnet (10.S.K.0/24)")
    parser.add_argument("--cluster-id", default="", help="short id in the cluster's network names")
    parser.add_argument("--api-host", required=True, help="the API server's address as pods see it")
    parser.add_argument("--api-port", required=True, type=int)
    parser.add_argument("--ca-file", required=True, help="CA certificate given to pods as ca.crt")
    parser.add_argument("--no-private-mounts", action="store_true",
                        help="the machine refuses mount namespaces: volumes are not mounted in pods")
    parser.add_argument("--image", action="append", default=[], metavar="NAME=HOSTDIR:MOUNTPATH",
                        help="a local image: pods of image NAME get HOSTDIR read-only at MOUNTPATH (repeatable)")
    parser.add_argument("--fallback-image", action="append", default=[], metavar="NAME=HOSTDIR:MOUNTPATH",
                        help="a local image used only when podman's store has no image NAME (repeatable)")
    parser.add_argument("--no-podman", action="store_true",
                        help="never run pods as podman containers (images are host directories or the host)")
    parser.add_argument("--cpu", default=str(os.cpu_count() or 1))
    parser.add_argument("--memory", default=f"{total_memory_bytes() // 1024}Ki")
    parser.add_argument("--pods", type=int, default=110, help="allocatable pods")


def main(args: Any) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    network = None
    prefix = ""
    if args.subnet:
        network = ClusterNetwork(args.cluster_id, ipaddress.ip_network(args.subnet))
        prefix = args.pod_cidr.rsplit(".", 1)[0] + "."
    client = client_from_kubeconfig(args.kubeconfig)
    context = NodeContext(
        node_name=args.name, state_dir=os.path.join(args.state_dir, "nodes"), client_factory=client.clone,
        host_ip=args.host_ip, api_host=args.api_host, api_port=args.api_port, ca_file=args.ca_file,
        allocatable=parse_capacity(args.cpu, args.memory, args.pods), network=network, cid=args.cluster_id,
        pod_cidr_prefix=prefix, private_mounts=not args.no_private_mounts, log_dir=args.pod_log_dir,
        base_path=os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        images=ImageTable([parse_image_argument(argument) for argument in args.image]
                          + [parse_image_argument(argument, fallback=True) for argument in args.fallback_image]),
        podman=None if args.no_podman else PodmanImages())
    os.makedirs(context.pid_dir(), exist_ok=True)
    node = Node(args.name, client, context, parse_capacity(args.cpu, args.memory, args.pods), args.pod_cidr)
    signal.signal(signal.SIGTERM, lambda *_: node.stopped.set())
    signal.signal(signal.SIGINT, lambda *_: node.stopped.set())
    node.run()
    return 0
