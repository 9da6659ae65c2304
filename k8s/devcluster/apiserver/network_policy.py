"""networking.k8s.io/v1 NetworkPolicy: stored and validated as kube-apiserver does (the peer, port,
IP block and policyTypes rules of its networking validation, worded as it words them). Enforcing a
policy is the network plugin's job, and the development cluster has none: pods reach each other
whatever the policies say."""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any

from .strategies import Strategy
from .validation import Cause, forbidden, invalid, label_selector_causes, required, unsupported

if TYPE_CHECKING:
    from .api import Api
    from .resource_info import ResourceInfo

PROTOCOLS = ["TCP", "UDP", "SCTP"]
POLICY_TYPES = ["Ingress", "Egress"]
_PORT_RANGE = "must be between 1 and 65535, inclusive"


def _port_name_errors(name: str) -> list[str]:
    """An IANA service name, as a named port must be."""
    errors = []
    if not 1 <= len(name) <= 15:
        errors.append("must be no more than 15 characters")
    if not all(c.islower() or c.isdigit() or c == "-" for c in name):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not any(c.islower() for c in name):
        errors.append("must contain at least one letter (a-z)")
    if "--" in name:
        errors.append("must not contain consecutive hyphens")
    if name.startswith("-") or name.endswith("-"):
        errors.append("must not begin or end with a hyphen")
    return errors


def _port_causes(path: str, port: dict[str, Any]) -> list[Cause]:
    causes = []
    protocol = port.get("protocol")
    if protocol is not None and protocol not in PROTOCOLS:
        causes.append(unsupported(f"{path}.protocol", protocol, PROTOCOLS))
    number, end = port.get("port"), port.get("endPort")
    if isinstance(number, int) and not isinstance(number, bool):
        if not 1 <= number <= 65535:
            causes.append(invalid(f"{path}.port", number, _PORT_RANGE))
        if end is not None:
            if end < number:
                causes.append(invalid(f"{path}.endPort", number, "must be greater than or equal to `port`"))
            if not 1 <= end <= 65535:
                causes.append(invalid(f"{path}.endPort", end, _PORT_RANGE))
    elif number is not None:
        if end is not None:
            causes.append(invalid(f"{path}.endPort", end, "may not be specified when `port` is non-numeric"))
        causes += [invalid(f"{path}.port", number, e) for e in _port_name_errors(str(number))]
    elif end is not None:
        causes.append(invalid(f"{path}.endPort", end, "may not be specified when `port` is not specified"))
    return causes


def _network(path: str, cidr: str) -> tuple[list[Cause], ipaddress.IPv4Network | ipaddress.IPv6Network | None]:
    try:
        if "/" not in cidr:      # a bare address is no CIDR to the server's parser
            raise ValueError(cidr)
        return [], ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return [invalid(path, cidr, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)")], None


def _ip_block_causes(path: str, block: dict[str, Any]) -> list[Cause]:
    cidr = block.get("cidr") or ""
    if not cidr:
        return [required(f"{path}.cidr")]
    causes, network = _network(f"{path}.cidr", cidr)
    if network is None:
        return causes
    for index, text in enumerate(block.get("except") or []):
        where = f"{path}.except[{index}]"
        found, excluded = _network(where, text)
        causes += found
        if excluded is None:
            continue
        if (excluded.version != network.version or excluded.network_address not in network
                or network.prefixlen >= excluded.prefixlen):
            causes.append(invalid(where, text, "must be a strict subset of `cidr`"))
    return causes


def _peer_causes(path: str, peer: dict[str, Any]) -> list[Cause]:
    causes, peers = [], 0
    for field in ("podSelector", "namespaceSelector"):
        if peer.get(field) is not None:
            peers += 1
            causes += label_selector_causes(f"{path}.{field}", peer[field])
    if peer.get("ipBlock") is not None:
        peers += 1
        causes += _ip_block_causes(f"{path}.ipBlock", peer["ipBlock"])
    if peers == 0:
        causes.append(required(path, "must specify a peer"))
    elif peers > 1 and peer.get("ipBlock") is not None:
        causes.append(forbidden(path, "may not specify both ipBlock and another peer"))
    return causes


class NetworkPolicyStrategy(Strategy):
    has_generation = True

    def prepare_create(self, api: Api, info: ResourceInfo, obj: dict[str, Any]) -> None:
        # podSelector is a struct, not a pointer: an absent one is the empty selector (every pod).
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            spec.setdefault("podSelector", {})

    def prepare_update(self, api: Api, info: ResourceInfo, obj: dict[str, Any], old: dict[str, Any]) -> None:
        self.prepare_create(api, info, obj)

    def validate(self, api: Api, info: ResourceInfo, obj: dict[str, Any],
                 old: dict[str, Any] | None) -> list[Cause]:
        spec = obj.get("spec") or {}
        causes = label_selector_causes("spec.podSelector", spec.get("podSelector") or {})
        for direction, peers in (("ingress", "from"), ("egress", "to")):
            for index, rule in enumerate(spec.get(direction) or []):
                path = f"spec.{direction}[{index}]"
                for number, port in enumerate(rule.get("ports") or []):
                    causes += _port_causes(f"{path}.ports[{number}]", port)
                for number, peer in enumerate(rule.get(peers) or []):
                    causes += _peer_causes(f"{path}.{peers}[{number}]", peer)
        types = spec.get("policyTypes") or []
        if len(types) > len(POLICY_TYPES):
            return causes + [invalid("spec.policyTypes", types, "may not specify more than two policyTypes")]
        for index, kind in enumerate(types):
            if kind not in POLICY_TYPES:
                causes.append(unsupported(f"spec.policyTypes[{index}]", kind, POLICY_TYPES))
        return causes


def decode_errors(spec: Any) -> list[tuple[str, str, Any]]:
    """(path, Go type, value) of the spec's fields of a JSON type the server's decoder refuses."""
    if not isinstance(spec, dict):
        return []
    found = []
    if spec.get("podSelector") is not None and not isinstance(spec["podSelector"], dict):
        found.append(("NetworkPolicy.spec.podSelector", "v1.LabelSelector", spec["podSelector"]))
    for field, go_type in (("ingress", "v1.NetworkPolicyIngressRule"), ("egress", "v1.NetworkPolicyEgressRule"),
                           ("policyTypes", "v1.PolicyType")):
        value = spec.get(field)
        if value is None:
            continue
        if not isinstance(value, list):
            found.append((f"NetworkPolicy.spec.{field}", "[]" + go_type, value))
            continue
        wanted = str if field == "policyTypes" else dict
        found += [(f"NetworkPolicy.spec.{field}", go_type, item) for item in value if not isinstance(item, wanted)]
    for field in ("ingress", "egress"):
        for rule in spec.get(field) if isinstance(spec.get(field), list) else []:
            if not isinstance(rule, dict):
                continue
            for key, go_type in (("ports", "v1.NetworkPolicyPort"), ("from", "v1.NetworkPolicyPeer"),
                                 ("to", "v1.NetworkPolicyPeer")):
                items = rule.get(key)
                if items is not None and (not isinstance(items, list)
                                          or any(not isinstance(i, dict) for i in items)):
                    found.append((f"NetworkPolicy.spec.{field}.{key}", "[]" + go_type, items))
    return found
