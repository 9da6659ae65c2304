"""`dev-cluster up|down|status DIR`: starts, stops and reports a development cluster whose every
file lives in DIR (certificates, kubeconfigs, logs, pid files, pods' files) and whose every
network name carries the cluster id derived from DIR.

DIR layout: cluster.json (what `down` needs, written before anything starts), pki/, kubeconfig
(admin, context fiber-dev), kubeconfigs/ (one per component), logs/ (component logs and, in
<ns>_<pod>_<uid>/, the pods' container logs), pids/ (one file per component), nodes/ (pods'
volumes and scratch files, the pod processes' pid files)."""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import signal
import subprocess
import sys
import time
from typing import Any

import yaml

from . import netns
from .node_container import cluster_containers, remove_cluster_containers
from .node_volumes import mounts_below, unmount_below
from .node_images import DEFAULT_MOUNT_PATH, ImageError, ImageTable, LocalImage, parse_image_argument
from .kube import JSON, KubeClient, KubeError, client_from_kubeconfig, core_path, resource_path, write_kubeconfig
from .node import LEASE_RENEW_S
from .scheduler import node_ready

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CRD_FILE = os.path.join(REPO_ROOT, "k8s", "config", "crd", "bases", "fibermpi.io_fiberjobs.yaml")
# The controller's RBAC, and the ClusterRoles that give a namespace's users FiberJobs.
RBAC_DIRS = (os.path.join(REPO_ROOT, "k8s", "config", "rbac"), os.path.join(REPO_ROOT, "k8s", "config", "user_roles"))
# Where `cmake --install build-openmpi4 --prefix <repo>/build-openmpi4/image/opt/fibermpi` puts the
# examples and the runtime: the default local images' files.
DEFAULT_IMAGE_DIR = os.path.join(REPO_ROOT, "build-openmpi4", "image", "opt", "fibermpi")
DEFAULT_IMAGE_NAMES = ("fibermpi/examples", "fibermpi/runtime")
CONTROLLER_NAMESPACE = "fiber-system"
CONTROLLER_ACCOUNT = "fiber-controller"
CONTEXT = "fiber-dev"
START_TIMEOUT_S = 60.0
STOP_GRACE_S = 10.0
KILL_WAIT_S = 2.0
NETWORK_CLEANUP_S = 5.0
# kube-controller-manager's defaults: a node silent for 40 s is Unknown; heartbeats are checked
# every 5 s (at most a quarter of the grace period here, so that a short one keeps its meaning).
NODE_MONITOR_GRACE_PERIOD_S = 40.0
NODE_MONITOR_PERIOD_S = 5.0


class ClusterError(Exception):
    """`up`, `down` or `status` cannot go on; the message says why and what to do."""


def log(message: str) -> None:
    print(f"dev-cluster: {message}", file=sys.stderr, flush=True)


# --- processes ---------------------------------------------------------------------------------
def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def read_pid(path: str) -> int:
    try:
        with open(path, encoding="utf-8") as handle:
            return int(handle.read().strip() or 0)
    except (OSError, ValueError):
        return 0


def start_component(state_dir: str, name: str, argv: list[str]) -> int:
    """Starts a detached component (own session, output to logs/NAME.log) and records its pid."""
    log_path = os.path.join(state_dir, "logs", f"{name}.log")
    environment = dict(os.environ, PYTHONPATH=REPO_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
                       PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
    with open(log_path, "ab") as output:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                                   start_new_session=True, cwd=REPO_ROOT, env=environment, close_fds=True)
    with open(os.path.join(state_dir, "pids", f"{name}.pid"), "w", encoding="utf-8") as handle:
        handle.write(str(process.pid))
    return process.pid


def log_tail(state_dir: str, name: str, lines: int = 15) -> str:
    try:
        with open(os.path.join(state_dir, "logs", f"{name}.log"), encoding="utf-8", errors="replace") as handle:
            return "".join(handle.readlines()[-lines:])
    except OSError:
        return ""


def signal_group_or_process(pid: int, signal_number: int) -> None:
    for send in (os.killpg, os.kill):
        try:
            send(pid, signal_number)
            return
        except (ProcessLookupError, PermissionError):
            continue


def wait_gone(pids: list[int], timeout_s: float) -> None:
    """Polls until the processes are gone (they are not our children: no wait() applies)."""
    deadline = time.monotonic() + timeout_s
    while any(pid_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.02)


def stop_pids(pids: list[int], grace_s: float) -> None:
    """SIGTERM to each process's group, SIGKILL to what is left after grace_s."""
    alive = [pid for pid in pids if pid > 0 and pid_alive(pid)]
    for pid in alive:
        signal_group_or_process(pid, signal.SIGTERM)
    wait_gone(alive, grace_s)
    for pid in alive:
        signal_group_or_process(pid, signal.SIGKILL)
    wait_gone(alive, KILL_WAIT_S)


def own_lineage() -> set[int]:
    """This process and its ancestors (they mention DIR on their command lines too)."""
    lineage = set()
    pid = os.getpid()
    while pid > 1 and pid not in lineage:
        lineage.add(pid)
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
                pid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            break
    return lineage


def processes_mentioning(state_dir: str) -> list[int]:
    """Processes (not this one or its ancestors) with an argument that is the cluster's dir or a
    path inside it (also as `--option=PATH`)."""
    directory = re.escape(os.path.realpath(state_dir).encode())
    names_dir = re.compile(rb"(^|[=:,])" + directory + rb"(/|$)")
    found = []
    excluded = own_lineage()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in excluded:
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                arguments = handle.read().split(b"\0")
        except OSError:
            continue
        if any(names_dir.search(argument) for argument in arguments) and pid_alive(int(entry)):
            found.append(int(entry))
    return found


# --- certificates ------------------------------------------------------------------------------
def openssl(*args: str) -> None:
    result = subprocess.run(["openssl", *args], capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise ClusterError(f"openssl {args[0]} failed: {result.stderr.strip()}")


def issue_certificate(pki: str, name: str, subject: str, extensions: str) -> None:
    """pki/NAME.key and pki/NAME.crt signed by pki/ca.crt."""
    key, csr, cert = (os.path.join(pki, f"{name}.{suffix}") for suffix in ("key", "csr", "crt"))
    extension_file = os.path.join(pki, f"{name}.ext")
    with open(extension_file, "w", encoding="utf-8") as handle:
        handle.write(extensions)
    openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-subj", subject, "-out", csr)
    openssl("x509", "-req", "-in", csr, "-CA", os.path.join(pki, "ca.crt"), "-CAkey", os.path.join(pki, "ca.key"),
            "-CAcreateserial", "-days", "365", "-sha256", "-extfile", extension_file, "-out", cert)
    os.chmod(key, 0o600)


def make_pki(pki: str, server_ips: list[str], clients: dict[str, str]) -> None:
    """A CA, the API server's certificate and one client certificate per entry of `clients`
    (name -> subject)."""
    os.makedirs(pki, exist_ok=True)
    openssl("req", "-x509", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", os.path.join(pki, "ca.key"),
            "-subj", "/CN=fiber-dev-ca", "-days", "365", "-sha256", "-out", os.path.join(pki, "ca.crt"),
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    names = ",".join([f"IP:{ip}" for ip in server_ips] + ["DNS:localhost", "DNS:kubernetes", "DNS:kubernetes.default",
                                                          "DNS:kubernetes.default.svc"])
    issue_certificate(pki, "apiserver", "/CN=kube-apiserver",
                      f"basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                      f"extendedKeyUsage=serverAuth\nsubjectAltName={names}\n")
    for name, subject in clients.items():
        issue_certificate(pki, name, subject, "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,"
                                              "keyEncipherment\nextendedKeyUsage=clientAuth\n")


# --- installing manifests ----------------------------------------------------------------------
PLURALS = {"Namespace": "namespaces", "ServiceAccount": "serviceaccounts", "ClusterRole": "clusterroles",
           "ClusterRoleBinding": "clusterrolebindings", "Role": "roles", "RoleBinding": "rolebindings",
           "CustomResourceDefinition": "customresourcedefinitions", "ConfigMap": "configmaps"}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"}


def apply_object(client: KubeClient, item: JSON, default_namespace: str = "") -> None:
    """Creates the object, or replaces it when it exists (a small `kubectl apply`)."""
    kind = item.get("kind", "")
    if kind not in PLURALS:
        raise ClusterError(f"cannot install a {kind or 'document without kind'}: not a kind the installer knows")
    namespace = ""
    if kind not in CLUSTER_SCOPED:
        namespace = item["metadata"].get("namespace") or default_namespace or "default"
    if namespace:
        item["metadata"]["namespace"] = namespace
    collection = resource_path(item["apiVersion"], PLURALS[kind], namespace)
    try:
        client.create(collection, item)
    except KubeError as error:
        if error.code != 409:
            raise ClusterError(f"installing {kind} {item['metadata'].get('name')}: {error.message}") from error
        path = resource_path(item["apiVersion"], PLURALS[kind], namespace, item["metadata"]["name"])
        current = client.get(path)
        item["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        client.update(path, item)


def apply_file(client: KubeClient, path: str, default_namespace: str = "") -> int:
    with open(path, encoding="utf-8") as handle:
        documents = [document for document in yaml.safe_load_all(handle) if document]
    for document in documents:
        apply_object(client, document, default_namespace)
    return len(documents)


def rbac_manifests() -> list[str]:
    """The controller's RBAC files and the users' ClusterRoles, in the order of their
    kustomizations (all *.yaml of a folder without one); the namespace they name is the one
    `kubectl apply -k k8s/config/default` gives them, fiber-system."""
    manifests: list[str] = []
    for folder in RBAC_DIRS:
        kustomization = os.path.join(folder, "kustomization.yaml")
        if os.path.exists(kustomization):
            with open(kustomization, encoding="utf-8") as handle:
                listed = (yaml.safe_load(handle) or {}).get("resources") or []
            manifests += [os.path.join(folder, name) for name in listed if os.path.exists(os.path.join(folder, name))]
        else:
            manifests += sorted(glob.glob(os.path.join(folder, "*.yaml")))
    return manifests


# The built-in ClusterRole each aggregation label feeds (the bootstrap policy's selectors).
AGGREGATION_TARGETS = {f"rbac.authorization.k8s.io/aggregate-to-{name}": name for name in ("admin", "edit", "view")}


def aggregation_pending(client: KubeClient, manifests: list[str]) -> list[str]:
    """`ROLE <- LABELLED` for each ClusterRole of the manifests labelled to aggregate into a built-in
    role (admin, edit, view) that does not hold all of its rules yet: the aggregation controller
    writes them after the apply returns."""
    pending = []
    for path in manifests:
        with open(path, encoding="utf-8") as handle:
            documents = [document for document in yaml.safe_load_all(handle) if document]
        for document in documents:
            if document.get("kind") != "ClusterRole":
                continue
            meta = document["metadata"]
            for label, target in AGGREGATION_TARGETS.items():
                if (meta.get("labels") or {}).get(label) != "true":
                    continue
                held = client.get(resource_path("rbac.authorization.k8s.io/v1", "clusterroles", "", target))
                if any(rule not in (held.get("rules") or []) for rule in document.get("rules") or []):
                    pending.append(f"{target} <- {meta['name']}")
    return pending


def wait_for(what: str, check: Any, timeout_s: float = START_TIMEOUT_S, interval_s: float = 0.1) -> Any:
    """Polls check() (a component started elsewhere has no event to wait on) until it is truthy."""
    deadline = time.monotonic() + timeout_s
    last_error = ""
    while time.monotonic() < deadline:
        try:
            result = check()
            if result:
                return result
        except (KubeError, OSError, ValueError) as error:
            last_error = str(error)
        time.sleep(interval_s)
    detail = f" ({last_error})" if last_error else ""
    raise ClusterError(f"timed out after {timeout_s:.0f} s waiting for {what}{detail}")


# --- up ----------------------------------------------------------------------------------------
def controller_binary() -> str:
    build_dir = os.environ.get("FIBER_BUILD_DIR", os.path.join(REPO_ROOT, "build"))
    return os.path.join(build_dir, "k8s", "controller", "fiber-controller")


def record_path(state_dir: str) -> str:
    return os.path.join(state_dir, "cluster.json")


def read_record(state_dir: str) -> JSON:
    try:
        with open(record_path(state_dir), encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def write_record(state_dir: str, record: JSON) -> None:
    with open(record_path(state_dir) + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(record, handle, indent=2)
    os.replace(record_path(state_dir) + ".tmp", record_path(state_dir))


def running_components(state_dir: str) -> dict[str, int]:
    found = {}
    for pid_file in glob.glob(os.path.join(state_dir, "pids", "*.pid")):
        pid = read_pid(pid_file)
        if pid and pid_alive(pid):
            found[os.path.basename(pid_file)[: -len(".pid")]] = pid
    return found


def default_images() -> list[LocalImage]:
    """fibermpi/examples and fibermpi/runtime, when their installed files exist."""
    if not os.path.isdir(DEFAULT_IMAGE_DIR):
        return []
    return [LocalImage(name, DEFAULT_IMAGE_DIR, DEFAULT_MOUNT_PATH, fallback=True) for name in DEFAULT_IMAGE_NAMES]


def image_table(arguments: list[str]) -> ImageTable:
    """The cluster's local images: `--image` entries, then the defaults they do not name."""
    try:
        table = ImageTable([parse_image_argument(argument) for argument in arguments])
    except ImageError as error:
        raise ClusterError(str(error)) from error
    for image in table.images:
        if not os.path.isdir(image.directory):
            log(f"image {image.name}: {image.directory} does not exist (yet): its pods wait in ErrImagePull "
                f"until it does")
    return table.with_defaults(default_images())


def up(state_dir: str, node_count: int, with_controller: bool, pods_per_node: int,
       images: ImageTable | None = None, node_monitor_grace_period_s: float = NODE_MONITOR_GRACE_PERIOD_S) -> None:
    images = images or ImageTable()
    state_dir = os.path.realpath(state_dir)
    if node_count < 1:
        raise ClusterError(f"--nodes must be at least 1, not {node_count}")
    if not node_monitor_grace_period_s > LEASE_RENEW_S:
        raise ClusterError(f"--node-monitor-grace-period must exceed the nodes' Lease renewal interval "
                           f"({LEASE_RENEW_S:g} s), not {node_monitor_grace_period_s:g}")
    running = running_components(state_dir)
    if running:
        raise ClusterError(f"a cluster is already running in {state_dir} ("
                           + ", ".join(f"{name} pid {pid}" for name, pid in sorted(running.items()))
                           + f"); stop it first with: scripts/dev-cluster down {state_dir}")
    if read_record(state_dir):
        log("cleaning up what a previous cluster in this dir left")
        down(state_dir, quiet=True)
    if with_controller and not os.access(controller_binary(), os.X_OK):
        raise ClusterError(f"the controller is not built ({controller_binary()} missing): build the "
                           f"fiber-controller target, or start the cluster without it with --no-controller")
    for sub in ("logs", "pids", "kubeconfigs", "nodes"):
        os.makedirs(os.path.join(state_dir, sub), exist_ok=True)
    cid = netns.cluster_id(state_dir)
    record: JSON = {"cluster_id": cid, "nodes": [f"node-{i}" for i in range(1, node_count + 1)],
                    "images": [image.record() for image in images.images],
                    "node_monitor_grace_period_s": node_monitor_grace_period_s}
    write_record(state_dir, record)
    try:
        start_all(state_dir, record, node_count, with_controller, pods_per_node, images)
    except BaseException:
        log(f"start failed; stopping what started (logs in {state_dir}/logs)")
        down(state_dir, quiet=True)
        raise
    print(f"export KUBECONFIG={state_dir}/kubeconfig")


def start_all(state_dir: str, record: JSON, node_count: int, with_controller: bool, pods_per_node: int,
              images: ImageTable) -> None:
    cid = record["cluster_id"]
    refusal = netns.probe_network_namespaces(cid)
    network = None
    if refusal:
        log(f"network namespaces unavailable ({refusal}): pods run in the host network with the host's IP")
    else:
        network = netns.ClusterNetwork(cid, netns.choose_cluster_subnet(cid))
        record.update(subnet=str(network.subnet), bridge=network.bridge)
        write_record(state_dir, record)
        network.create_bridge(node_count)
    mount_refusal = netns.probe_mount_namespaces()
    if mount_refusal:
        log(f"mount namespaces unavailable ({mount_refusal}): volumes and the service-account token are "
            f"not mounted in pods")
    record.update(network="pod-netns" if network else "host", private_mounts=not mount_refusal)
    write_record(state_dir, record)

    pki = os.path.join(state_dir, "pki")
    server_ips = ["127.0.0.1"] + ([network.api_address] if network else [])
    clients = {"admin": "/O=system:masters/CN=kubernetes-admin",
               "scheduler": "/O=system:masters/CN=system:kube-scheduler",
               "controller-manager": "/O=system:masters/CN=system:kube-controller-manager"}
    for name in record["nodes"]:
        clients[name] = f"/O=system:masters/O=system:nodes/CN=system:node:{name}"
    make_pki(pki, server_ips, clients)
    token_file = os.path.join(pki, "tokens.csv")
    with open(token_file, "w", encoding="utf-8") as handle:
        handle.write("")
    os.chmod(token_file, 0o600)

    port_file = os.path.join(state_dir, "apiserver.port")
    if os.path.exists(port_file):
        os.unlink(port_file)
    apiserver_pid = start_component(state_dir, "apiserver", [
        sys.executable, "-m", "k8s.devcluster.apiserver", "--port", "0", "--port-file", port_file,
        "--state-dir", state_dir, "--tls-cert", os.path.join(pki, "apiserver.crt"),
        "--tls-key", os.path.join(pki, "apiserver.key"), "--client-ca", os.path.join(pki, "ca.crt"),
        "--token-file", token_file, *[argument for ip in server_ips for argument in ("--bind", ip)]])

    def port_written() -> int:
        if not pid_alive(apiserver_pid):
            raise ClusterError("the API server exited at start:\n" + log_tail(state_dir, "apiserver"))
        with open(port_file, encoding="utf-8") as handle:
            return int(handle.read().strip() or 0)
    port = wait_for("the API server's port file", port_written)
    record.update(api_port=port, server=f"https://127.0.0.1:{port}")
    write_record(state_dir, record)
    ca_file = os.path.join(pki, "ca.crt")
    for name in ["admin", "scheduler", "controller-manager", *record["nodes"]]:
        write_kubeconfig(os.path.join(state_dir, "kubeconfigs", f"{name}.yaml"), record["server"], ca_file, CONTEXT,
                         name, os.path.join(pki, f"{name}.crt"), os.path.join(pki, f"{name}.key"))
    admin = client_from_kubeconfig(os.path.join(state_dir, "kubeconfigs", "admin.yaml"))
    wait_for("the API server to answer", lambda: admin.get("/version"))

    for namespace in (CONTROLLER_NAMESPACE, "kube-node-lease"):
        apply_object(admin, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    apply_file(admin, CRD_FILE)
    crd_name = "fiberjobs.fibermpi.io"
    wait_for(f"CRD {crd_name} to be Established", lambda: any(
        c.get("type") == "Established" and c.get("status") == "True"
        for c in admin.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd_name}")
        .get("status", {}).get("conditions") or []))
    for manifest in rbac_manifests():
        apply_file(admin, manifest, CONTROLLER_NAMESPACE)
    wait_for("the FiberJob rules to be aggregated into the admin, edit and view ClusterRoles",
             lambda: not aggregation_pending(admin, rbac_manifests()))

    start_component(state_dir, "scheduler", [sys.executable, "-m", "k8s.devcluster", "scheduler", "--kubeconfig",
                                             os.path.join(state_dir, "kubeconfigs", "scheduler.yaml")])
    start_component(state_dir, "controller-manager", [
        sys.executable, "-m", "k8s.devcluster", "controller-manager",
        "--kubeconfig", os.path.join(state_dir, "kubeconfigs", "controller-manager.yaml"),
        "--node-monitor-grace-period", str(record["node_monitor_grace_period_s"]),
        "--node-monitor-period", str(min(NODE_MONITOR_PERIOD_S, record["node_monitor_grace_period_s"] / 4))])
    for index, name in enumerate(record["nodes"], start=1):
        argv = [sys.executable, "-m", "k8s.devcluster", "node", "--name", name,
                "--kubeconfig", os.path.join(state_dir, "kubeconfigs", f"{name}.yaml"), "--state-dir", state_dir,
                "--pod-log-dir", os.path.join(state_dir, "logs"), "--ca-file", ca_file,
                "--api-port", str(port), "--pods", str(pods_per_node), "--cluster-id", cid]
        if network:
            argv += ["--host-ip", network.node_address(index), "--subnet", str(network.subnet),
                     "--pod-cidr", network.node_pod_cidr(index), "--api-host", network.api_address]
        else:
            argv += ["--host-ip", "127.0.0.1", "--api-host", "127.0.0.1"]
        if mount_refusal:
            argv.append("--no-private-mounts")
        for image in images.images:
            argv += ["--fallback-image" if image.fallback else "--image", image.to_argument()]
        start_component(state_dir, name, argv)

    def nodes_ready() -> bool:
        for name in record["nodes"]:
            component_pid = read_pid(os.path.join(state_dir, "pids", f"{name}.pid"))
            if not pid_alive(component_pid):
                raise ClusterError(f"{name} exited at start:\n" + log_tail(state_dir, name))
        nodes = admin.list(core_path("nodes")).get("items") or []
        ready = {n["metadata"]["name"] for n in nodes if node_ready(n)}
        return set(record["nodes"]) <= ready
    wait_for(f"{node_count} nodes to be Ready", nodes_ready)

    if with_controller:
        start_controller(state_dir, admin, record, ca_file)
    write_kubeconfig(os.path.join(state_dir, "kubeconfig"), record["server"], ca_file, CONTEXT, "kubernetes-admin",
                     os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))


def start_controller(state_dir: str, admin: KubeClient, record: JSON, ca_file: str) -> None:
    """The controller runs as ServiceAccount fiber-system/fiber-controller (so RBAC applies to it),
    with a token from the TokenRequest API."""
    account_path = core_path("serviceaccounts", CONTROLLER_NAMESPACE, CONTROLLER_ACCOUNT)
    try:
        admin.get(account_path)
    except KubeError as error:
        if error.code != 404:
            raise
        apply_object(admin, {"apiVersion": "v1", "kind": "ServiceAccount",
                             "metadata": {"name": CONTROLLER_ACCOUNT, "namespace": CONTROLLER_NAMESPACE}})
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
               "spec": {"audiences": [], "expirationSeconds": 7 * 24 * 3600}}
    token = admin.create(account_path + "/token", request)["status"]["token"]
    kubeconfig = os.path.join(state_dir, "kubeconfigs", "controller.yaml")
    write_kubeconfig(kubeconfig, record["server"], ca_file, CONTEXT,
                     f"system:serviceaccount:{CONTROLLER_NAMESPACE}:{CONTROLLER_ACCOUNT}", token=token,
                     namespace=CONTROLLER_NAMESPACE)
    record["controller"] = {"kubeconfig": kubeconfig}
    write_record(state_dir, record)
    # Its health and metrics endpoints on loopback ports the kernel picks, so that two clusters (or
    # anything else on the well-known 8080/8081) do not meet. A port probed free beforehand could be
    # taken (by any outgoing connection) before the controller binds it; the controller logs the
    # addresses it got instead, and they are recorded for tests and users.
    log_path = os.path.join(state_dir, "logs", "controller.log")
    log_start = os.path.getsize(log_path) if os.path.exists(log_path) else 0
    pid = start_component(state_dir, "controller", [
        controller_binary(), "--kubeconfig", kubeconfig, "--health-addr", "127.0.0.1:0",
        "--metrics-addr", "127.0.0.1:0"])

    def serving() -> tuple[str, str] | None:
        if not pid_alive(pid):
            raise ClusterError("the controller exited at start:\n" + log_tail(state_dir, "controller"))
        with open(log_path, "rb") as handle:
            handle.seek(log_start)
            text = handle.read().decode("utf-8", errors="replace")
        health = re.search(r"serving /healthz and /readyz on (\S+)", text)
        metrics = re.search(r"serving /metrics on (\S+)", text)
        return (health.group(1), metrics.group(1)) if health and metrics else None
    record["controller"]["health"], record["controller"]["metrics"] = wait_for(
        "the controller's health and metrics endpoints", serving)
    write_record(state_dir, record)


# --- down --------------------------------------------------------------------------------------
def down(state_dir: str, quiet: bool = False) -> list[str]:
    """Stops everything of the cluster in state_dir; returns what it still found afterwards."""
    state_dir = os.path.realpath(state_dir)
    record = read_record(state_dir)
    cid = record.get("cluster_id") or netns.cluster_id(state_dir)
    nodes = sorted(record.get("nodes") or [
        os.path.basename(p)[: -len(".pid")] for p in glob.glob(os.path.join(state_dir, "pids", "node-*.pid"))])
    # A paused node (pause_node) must run again to take its SIGTERM.
    for name in nodes:
        resume_pid(read_pid(os.path.join(state_dir, "pids", f"{name}.pid")))
    for tier in (["controller"], nodes, ["scheduler", "controller-manager"], ["apiserver"]):   # nodes stop together
        pid_files = [os.path.join(state_dir, "pids", f"{name}.pid") for name in tier]
        stop_pids([read_pid(path) for path in pid_files], STOP_GRACE_S)
        for pid_file in pid_files:
            if os.path.exists(pid_file):
                os.unlink(pid_file)
    pod_pid_files = glob.glob(os.path.join(state_dir, "nodes", "pids", "pods", "*"))
    stop_pids([read_pid(path) for path in pod_pid_files], 0.0)
    for pid_file in pod_pid_files:
        os.unlink(pid_file)
    stop_pids(processes_mentioning(state_dir), 0.0)
    # Pods' podman containers outlive a killed `podman run` (conmon keeps them).
    removed_containers = remove_cluster_containers(cid)
    unmount_below(state_dir)
    removed = netns.delete_cluster_network(cid)
    for cut_list in glob.glob(os.path.join(state_dir, "nodes", "*.cut")):   # pause-node --cut-network's
        os.unlink(cut_list)
    # The kernel tears a namespace's veth down asynchronously: look again until it is gone.
    deadline = time.monotonic() + NETWORK_CLEANUP_S
    while netns.cluster_network_leftovers(cid) and time.monotonic() < deadline:
        time.sleep(0.1)
        removed += netns.delete_cluster_network(cid)
    host_dirs = os.path.join(state_dir, "nodes", "host-dirs.txt")
    if os.path.exists(host_dirs):
        with open(host_dirs, encoding="utf-8") as handle:
            for directory in sorted(set(handle.read().split())):
                try:
                    os.rmdir(directory)
                except OSError as error:
                    log(f"left {directory} in place: {error.strerror}")
        os.unlink(host_dirs)
    if os.path.exists(record_path(state_dir)):
        os.unlink(record_path(state_dir))
    leftovers = [f"process {pid}" for pid in processes_mentioning(state_dir)] + netns.cluster_network_leftovers(cid)
    leftovers += [f"container {name}" for name in cluster_containers(cid)] + \
        [f"mount {point}" for point in mounts_below(state_dir)]
    if not quiet:
        log(f"stopped the cluster in {state_dir}" + (f" (removed {len(removed)} network names)" if removed else "")
            + (f" (removed {len(removed_containers)} containers)" if removed_containers else ""))
        for leftover in leftovers:
            log(f"still present: {leftover}")
    return leftovers


# --- a node's loss ------------------------------------------------------------------------------
def is_paused(pid: int) -> bool:
    """Whether the process is stopped (SIGSTOP): state T in /proc/PID/stat."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "T"
    except (OSError, IndexError):
        return False


def resume_pid(pid: int) -> None:
    if pid > 0 and pid_alive(pid):
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


def node_pid(state_dir: str, node: str) -> int:
    state_dir = os.path.realpath(state_dir)
    if node not in (read_record(state_dir).get("nodes") or []):
        raise ClusterError(f"no node {node} in the cluster in {state_dir}")
    pid = read_pid(os.path.join(state_dir, "pids", f"{node}.pid"))
    if not pid_alive(pid):
        raise ClusterError(f"{node} of the cluster in {state_dir} is not running")
    return pid


def cut_list_path(state_dir: str, node: str) -> str:
    return os.path.join(os.path.realpath(state_dir), "nodes", f"{node}.cut")


def cut_pod_network(state_dir: str, node: str) -> list[str]:
    """Sets down the bridge side of the veth of every pod bound to `node`, so that nothing reaches
    them or leaves them (a partition: no reset, packets are simply lost); returns the links."""
    state_dir = os.path.realpath(state_dir)
    record = read_record(state_dir)
    if record.get("network") != "pod-netns":
        raise ClusterError("the cluster's pods share the host's network (no network namespaces here): "
                           "there is no pod network to cut")
    admin = client_from_kubeconfig(os.path.join(state_dir, "kubeconfig"))
    pods = admin.list(core_path("pods"), field_selector=f"spec.nodeName={node}").get("items") or []
    present = {link.get("ifname") for link in json.loads(netns.run_ip("-j", "link", "show").stdout or "[]")}
    links = [name for name in (netns.pod_veth_name(record["cluster_id"], pod["metadata"]["uid"])
                               for pod in pods if not pod["spec"].get("hostNetwork")) if name in present]
    with open(cut_list_path(state_dir, node), "a", encoding="utf-8") as handle:
        handle.writelines(f"{name}\n" for name in links)
    for name in links:
        netns.run_ip("link", "set", name, "down")
    return links


def restore_pod_network(state_dir: str, node: str) -> None:
    path = cut_list_path(state_dir, node)
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as handle:
        links = handle.read().split()
    for name in links:
        netns.run_ip("link", "set", name, "up", check=False)   # a pod deleted meanwhile took its link
    os.unlink(path)


def pause_node(state_dir: str, node: str, cut_network: bool = False) -> None:
    """The node's kubelet stops (SIGSTOP), as when a node is cut off: its pods' processes go on,
    its Lease and pod statuses are no longer renewed, so the node lifecycle controller marks it
    Unknown and taints it after the grace period, and evicts its pods as they tolerate. With
    `cut_network` its pods are cut off too (cut_pod_network), as in a network partition."""
    pid = node_pid(state_dir, node)
    if cut_network:
        cut_pod_network(state_dir, node)
    os.kill(pid, signal.SIGSTOP)


def resume_node(state_dir: str, node: str) -> None:
    """The node's kubelet goes on: it posts Ready again and ends the pods deleted meanwhile; its
    pods' network, if pause_node cut it, comes back first."""
    pid = node_pid(state_dir, node)
    restore_pod_network(state_dir, node)
    os.kill(pid, signal.SIGCONT)


# --- status ------------------------------------------------------------------------------------
def status(state_dir: str) -> int:
    state_dir = os.path.realpath(state_dir)
    record = read_record(state_dir)
    running = running_components(state_dir)
    if not record and not running:
        print(f"no cluster in {state_dir}")
        return 1
    print(f"cluster {record.get('cluster_id', '?')} in {state_dir}: server {record.get('server', '?')}, "
          f"network {record.get('network', '?')} {record.get('subnet', '')}")
    for name in ["apiserver", "scheduler", "controller-manager", *(record.get("nodes") or []), "controller"]:
        pid = running.get(name)
        state = "not running"
        if pid:
            state = ("paused (pause-node), pid " if is_paused(pid) else "running, pid ") + str(pid)
        print(f"  {name:<18} {state}")
    return 0 if "apiserver" in running else 1


# --- command line ------------------------------------------------------------------------------
def add_arguments(subparsers: Any) -> None:
    up_parser = subparsers.add_parser("up", help="start a cluster in DIR")
    up_parser.add_argument("dir")
    up_parser.add_argument("--nodes", type=int, default=2)
    up_parser.add_argument("--no-controller", action="store_true", help="do not start fiber-controller")
    up_parser.add_argument("--pods-per-node", type=int, default=110, help="allocatable pods of each node")
    up_parser.add_argument("--node-monitor-grace-period", type=float, default=NODE_MONITOR_GRACE_PERIOD_S,
                           metavar="SECONDS", help="silence after which a node is Unknown and tainted "
                                                   "unreachable (default 40, as kube-controller-manager's)")
    up_parser.add_argument("--image", action="append", default=[], metavar="NAME=HOSTDIR[:MOUNTPATH]",
                           help=f"a local image: containers of image NAME (a repository, any tag, or "
                                f"repository:tag) get HOSTDIR mounted read-only at MOUNTPATH (default "
                                f"{DEFAULT_MOUNT_PATH}) and its bin/ on PATH; repeatable. fibermpi/examples and "
                                f"fibermpi/runtime default to {DEFAULT_IMAGE_DIR} when it exists")
    down_parser = subparsers.add_parser("down", help="stop the cluster in DIR and remove its network")
    down_parser.add_argument("dir")
    status_parser = subparsers.add_parser("status", help="what of the cluster in DIR runs")
    status_parser.add_argument("dir")
    for command, text in (("pause-node", "stop NODE's kubelet as if the node were cut off (its pods run on)"),
                          ("resume-node", "let NODE's kubelet go on (and its pods' network come back)")):
        node_parser = subparsers.add_parser(command, help=text)
        node_parser.add_argument("dir")
        node_parser.add_argument("node", help="node-1, node-2, ...")
        if command == "pause-node":
            node_parser.add_argument("--cut-network", action="store_true",
                                     help="cut NODE's pods off the network too, as in a partition")


def main(args: argparse.Namespace) -> int:
    try:
        if args.command == "up":
            up(args.dir, args.nodes, not args.no_controller, args.pods_per_node, image_table(args.image),
               args.node_monitor_grace_period)
            return 0
        if args.command == "down":
            return 1 if down(args.dir) else 0
        if args.command == "pause-node":
            pause_node(args.dir, args.node, args.cut_network)
            return 0
        if args.command == "resume-node":
            resume_node(args.dir, args.node)
            return 0
        return status(args.dir)
    except (ClusterError, KubeError, netns.NetworkError) as error:
        log(f"{args.command} failed: {error}")
        return 1
