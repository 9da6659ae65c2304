"""Pod networking of the development cluster: one Linux bridge per cluster, and for each pod a
network namespace joined to the bridge by a veth pair, so that traffic between pods crosses a
network interface.

Addresses: the cluster owns 10.S.0.0/16 (S derived from the cluster id, moved on if taken). The
bridge holds 10.S.0.1 (where pods reach the API server) and 10.S.K.1 for node K (its InternalIP and
its pods' gateway); node K gives its pods 10.S.K.2-254 (its podCIDR 10.S.K.0/24). All pods share
the bridge's layer 2 segment, so pods of different nodes reach each other directly.

Every name carries the cluster id (a short hash of the cluster's state dir), so two clusters can
run at once and `down` finds everything of its own cluster even after a crash."""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import signal
import subprocess
from dataclasses import dataclass


class NetworkError(Exception):
    """An `ip` command failed; the message has the command and its error output."""


def cluster_id(state_dir: str) -> str:
    """Six hex digits naming a cluster, from its state dir's real path."""
    return hashlib.sha1(os.path.realpath(state_dir).encode()).hexdigest()[:6]


def bridge_name(cid: str) -> str:
    return f"fbr{cid}"


def netns_prefix(cid: str) -> str:
    return f"fiber-{cid}-"


def pod_netns_name(cid: str, pod_uid: str) -> str:
    return netns_prefix(cid) + pod_uid.replace("-", "")[:12]


def veth_prefix(cid: str) -> str:
    return f"fv{cid}"


def pod_veth_name(cid: str, pod_uid: str) -> str:
    """Host side of a pod's veth pair: at most 15 characters, as Linux requires."""
    return veth_prefix(cid) + hashlib.sha1(pod_uid.encode()).hexdigest()[:6]


def run_ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Runs `ip ARGS`; raises NetworkError with its stderr when it fails and check is set."""
    result = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and result.returncode != 0:
        raise NetworkError(f"ip {' '.join(args)}: {result.stderr.strip() or result.returncode}")
    return result


def probe_network_namespaces(cid: str) -> str:
    """Empty if this process may create network namespaces, veths and bridges; otherwise why not."""
    probe = netns_prefix(cid) + "probe"
    try:
        run_ip("netns", "add", probe)
    except (NetworkError, OSError) as error:
        return str(error)
    try:
        run_ip("-n", probe, "link", "add", "probe0", "type", "veth", "peer", "name", "probe1")
        run_ip("-n", probe, "link", "add", "probebr", "type", "bridge")
    except NetworkError as error:
        return str(error)
    finally:
        run_ip("netns", "del", probe, check=False)
    return ""


def probe_mount_namespaces() -> str:
    """Empty if a private mount namespace with bind mounts can be made; otherwise why not."""
    try:
        result = subprocess.run(["unshare", "--mount", "--propagation", "private", "mount", "--bind",
                                 "/", "/mnt"], capture_output=True, text=True, timeout=30)
    except OSError as error:
        return str(error)
    return "" if result.returncode == 0 else (result.stderr.strip() or f"exit {result.returncode}")


def existing_subnets() -> list[ipaddress.IPv4Network]:
    """IPv4 networks already routed on this machine."""
    routes = json.loads(run_ip("-j", "-4", "route", "show", "table", "all").stdout or "[]")
    networks = []
    for route in routes:
        destination = route.get("dst", "")
        if destination and destination != "default" and not destination.startswith(("broadcast", "local")):
            try:
                networks.append(ipaddress.ip_network(destination, strict=False))
            except ValueError:
                continue
    return networks


def choose_cluster_subnet(cid: str) -> ipaddress.IPv4Network:
    """A 10.S.0.0/16 that overlaps no route of this machine, S from the cluster id first."""
    taken = existing_subnets()
    start = int(cid, 16) % 150
    for step in range(150):
        candidate = ipaddress.ip_network(f"10.{100 + (start + step) % 150}.0.0/16")
        if not any(candidate.overlaps(network) for network in taken):
            return candidate
    raise NetworkError("no free 10.S.0.0/16 subnet for the cluster (S in 100..249)")


@dataclass(frozen=True)
class ClusterNetwork:
    """The addresses of one cluster's network."""

    cid: str
    subnet: ipaddress.IPv4Network

    @property
    def bridge(self) -> str:
        return bridge_name(self.cid)

    @property
    def api_address(self) -> str:
        """Where pods reach the API server."""
        return str(self.subnet.network_address + 1)

    def node_address(self, index: int) -> str:
        """InternalIP of node `index` (1-based) and its pods' gateway."""
        return str(self.subnet.network_address + 256 * index + 1)

    def node_pod_cidr(self, index: int) -> str:
        return str(ipaddress.ip_network(f"{self.subnet.network_address + 256 * index}/24"))

    def create_bridge(self, node_count: int) -> None:
        """The bridge with the API server's and every node's address."""
        run_ip("link", "add", self.bridge, "type", "bridge")
        # A bridge whose MAC address was not set takes the lowest of its ports' and changes it as pods'
        # veths come and go; pods then send to the old address of 10.S.0.1 until their neighbour entry
        # is checked again (30-50 s of an unreachable API server seen from pods while pods were added
        # and deleted). A fixed, locally administered address keeps it.
        digest = hashlib.sha256(self.cid.encode()).digest()
        mac = ":".join(f"{byte:02x}" for byte in (0x02, *digest[:5]))
        run_ip("link", "set", "dev", self.bridge, "address", mac)
        prefix = self.subnet.prefixlen
        run_ip("addr", "add", f"{self.api_address}/{prefix}", "dev", self.bridge)
        for index in range(1, node_count + 1):
            run_ip("addr", "add", f"{self.node_address(index)}/{prefix}", "dev", self.bridge)
        run_ip("link", "set", self.bridge, "up")


@dataclass(frozen=True)
class PodNetwork:
    """A pod's network namespace and veth pair."""

    cid: str
    pod_uid: str

    @property
    def netns(self) -> str:
        return pod_netns_name(self.cid, self.pod_uid)

    @property
    def host_veth(self) -> str:
        return pod_veth_name(self.cid, self.pod_uid)

    def create(self, pod_ip: str, prefix_length: int, gateway: str) -> None:
        """Namespace with loopback up, eth0 holding pod_ip, a default route via the gateway."""
        self.delete()
        run_ip("netns", "add", self.netns)
        try:
            run_ip("-n", self.netns, "link", "set", "lo", "up")
            run_ip("link", "add", self.host_veth, "type", "veth", "peer", "name", "eth0", "netns", self.netns)
            run_ip("link", "set", self.host_veth, "master", bridge_name(self.cid), "up")
            run_ip("-n", self.netns, "addr", "add", f"{pod_ip}/{prefix_length}", "dev", "eth0")
            run_ip("-n", self.netns, "link", "set", "eth0", "up")
            run_ip("-n", self.netns, "route", "add", "default", "via", gateway)
        except NetworkError:
            self.delete()
            raise

    def delete(self) -> None:
        """Removes the veth pair (at once: a namespace's own links go only when the kernel gets to
        it), then kills what still runs inside and removes the namespace (idempotent)."""
        run_ip("link", "del", self.host_veth, check=False)
        delete_netns(self.netns)


def delete_netns(name: str) -> None:
    """Kills every process left in the namespace, then deletes it; a missing one is fine."""
    result = run_ip("netns", "pids", name, check=False)
    for pid in result.stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            continue
    run_ip("netns", "del", name, check=False)


def delete_cluster_network(cid: str) -> list[str]:
    """Removes every namespace, veth and the bridge of cluster `cid`; returns what it removed."""
    removed = []
    links = json.loads(run_ip("-j", "link", "show", check=False).stdout or "[]")
    for link in links:
        name = link.get("ifname", "")
        if name.startswith(veth_prefix(cid)) or name == bridge_name(cid):
            run_ip("link", "del", name, check=False)
            removed.append(f"link {name}")
    for line in run_ip("netns", "list", check=False).stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        if name.startswith(netns_prefix(cid)):
            delete_netns(name)
            removed.append(f"netns {name}")
    return removed


def cluster_network_leftovers(cid: str) -> list[str]:
    """Namespaces and links of cluster `cid` still present (empty after a clean `down`)."""
    left = [f"netns {line.split()[0]}" for line in run_ip("netns", "list", check=False).stdout.splitlines()
            if line.split() and line.split()[0].startswith(netns_prefix(cid))]
    links = json.loads(run_ip("-j", "link", "show", check=False).stdout or "[]")
    left += [f"link {link['ifname']}" for link in links
             if link.get("ifname", "").startswith((veth_prefix(cid), bridge_name(cid)))]
    return left
