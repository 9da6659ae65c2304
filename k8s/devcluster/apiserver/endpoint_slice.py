"""discovery.k8s.io/v1 EndpointSlice: stored, defaulted and validated as kube-apiserver does on the
paths the controller and the tests use (the address type, the endpoints' addresses, the ports),
worded as it words them. The server keeps the slice `kubernetes` in `default`: where its own
clients reach it, as the real one publishes its advertised address."""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any

from .network_policy import PROTOCOLS
from .strategies import Strategy
from .validation import Cause, invalid, required, unsupported

if TYPE_CHECKING:
    from .api import Api
    from .resource_info import ResourceInfo

ADDRESS_TYPES = ["IPv4", "IPv6", "FQDN"]
MAX_ENDPOINTS = 1000
MAX_ADDRESSES = 100
MAX_PORTS = 20000


def _address_causes(path: str, address_type: Any, address: Any) -> list[Cause]:
    if address_type == "FQDN":
        return [] if isinstance(address, str) and address else [invalid(path, address, "must be a valid FQDN")]
    family = 4 if address_type == "IPv4" else 6
    try:
        if ipaddress.ip_address(address).version == family:
            return []
    except ValueError:
        pass
    return [invalid(path, address, f"must be a valid IPv{family} address")]


def endpoint_slice_causes(obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    causes: list[Cause] = []
    address_type = obj.get("addressType")
    if not address_type:
        causes.append(required("addressType"))
    elif address_type not in ADDRESS_TYPES:
        causes.append(unsupported("addressType", address_type, ADDRESS_TYPES))
    if old is not None and address_type != old.get("addressType"):
        causes.append(invalid("addressType", address_type, "field is immutable"))
    endpoints = obj.get("endpoints") or []
    if len(endpoints) > MAX_ENDPOINTS:
        causes.append(invalid("endpoints", len(endpoints), f"must have at most {MAX_ENDPOINTS} items"))
    for index, endpoint in enumerate(endpoints[:MAX_ENDPOINTS]):
        addresses = endpoint.get("addresses") or []
        path = f"endpoints[{index}].addresses"
        if not addresses:
            causes.append(required(path, "must contain at least 1 address"))
        elif len(addresses) > MAX_ADDRESSES:
            causes.append(invalid(path, len(addresses), f"must have at most {MAX_ADDRESSES} items"))
        elif address_type in ADDRESS_TYPES:
            for number, address in enumerate(addresses):
                causes += _address_causes(f"{path}[{number}]", address_type, address)
    ports = obj.get("ports") or []
    if len(ports) > MAX_PORTS:
        causes.append(invalid("ports", len(ports), f"must have at most {MAX_PORTS} items"))
    for index, port in enumerate(ports[:MAX_PORTS]):
        protocol = port.get("protocol")
        if protocol not in PROTOCOLS:
            causes.append(unsupported(f"ports[{index}].protocol", protocol, PROTOCOLS))
        number = port.get("port")
        if number is not None and not (isinstance(number, int) and 1 <= number <= 65535):
            causes.append(invalid(f"ports[{index}].port", number, "must be between 1 and 65535, inclusive"))
    return causes


class EndpointSliceStrategy(Strategy):
    def prepare_create(self, api: Api, info: ResourceInfo, obj: dict[str, Any]) -> None:
        self._default(obj)

    def prepare_update(self, api: Api, info: ResourceInfo, obj: dict[str, Any], old: dict[str, Any]) -> None:
        self._default(obj)

    @staticmethod
    def _default(obj: dict[str, Any]) -> None:
        for port in obj.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("name", "")
                port.setdefault("protocol", "TCP")

    def validate(self, api: Api, info: ResourceInfo, obj: dict[str, Any],
                 old: dict[str, Any] | None) -> list[Cause]:
        return endpoint_slice_causes(obj, old)


def api_server_slice(addresses: list[str], port: int) -> dict[str, Any]:
    """The `kubernetes` EndpointSlice of `default`: the API server's addresses (those of the first
    address's family) and port."""
    family = ipaddress.ip_address(addresses[0]).version
    return {
        "metadata": {"name": "kubernetes",
                     "labels": {"kubernetes.io/service-name": "kubernetes",
                                "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
        "addressType": f"IPv{family}",
        "endpoints": [{"addresses": [a for a in addresses if ipaddress.ip_address(a).version == family],
                       "conditions": {"ready": True}}],
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
    }
