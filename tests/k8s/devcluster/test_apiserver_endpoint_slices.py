"""EndpointSlices in the API server stand-in: served in discovery, the server's own slice
default/kubernetes (its address and port, which fiber-controller reads for a job's egress policy),
the server's defaults, kube-apiserver's refusals, the `view` role's read, and the real kubectl's
`get endpointslices`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import ApiServerProcess
from test_apiserver_schema_kubectl import VERSIONS, Kubectl, kubectl_path

BASE = "/apis/discovery.k8s.io/v1"


def endpoint_slice(name: str, address_type: str, addresses: list[str], **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": name},
            "addressType": address_type, "endpoints": [{"addresses": addresses}], **extra}


def causes(response) -> list[tuple[str, str]]:
    assert response.status_code == 422, f"{response.status_code}: {response.text}"
    return [(c["field"], c["message"]) for c in response.json()["details"]["causes"]]


def test_discovery_lists_endpoint_slices(apiserver: ApiServerProcess):
    assert any(g["name"] == "discovery.k8s.io" for g in apiserver.ok(apiserver.get("/apis"))["groups"])
    entry = next(r for r in apiserver.ok(apiserver.get(BASE))["resources"] if r["name"] == "endpointslices")
    assert entry["kind"] == "EndpointSlice" and entry["namespaced"]


def test_the_server_publishes_where_it_listens(apiserver: ApiServerProcess):
    own = apiserver.ok(apiserver.get(f"{BASE}/namespaces/default/endpointslices/kubernetes"))
    assert own["addressType"] == "IPv4"
    assert own["endpoints"][0]["addresses"] == ["127.0.0.1"]
    assert own["ports"] == [{"name": "https", "port": int(apiserver.url.rsplit(":", 1)[1]), "protocol": "TCP"}]
    assert own["metadata"]["labels"]["kubernetes.io/service-name"] == "kubernetes"


def test_a_slice_is_stored_with_the_server_defaults(apiserver: ApiServerProcess):
    ns = apiserver.namespace("slices-store")
    created = apiserver.ok(apiserver.post(f"{BASE}/namespaces/{ns}/endpointslices",
                                          endpoint_slice("web", "IPv6", ["fd00::1"], ports=[{"port": 80}])), 201)
    assert created["ports"] == [{"name": "", "port": 80, "protocol": "TCP"}]


def test_what_kube_apiserver_refuses_is_refused(apiserver: ApiServerProcess):
    ns = apiserver.namespace("slices-refused")
    path = f"{BASE}/namespaces/{ns}/endpointslices"
    assert causes(apiserver.post(path, endpoint_slice("a", "IPv5", ["10.0.0.1"]))) == [
        ("addressType", 'Unsupported value: "IPv5": supported values: "IPv4", "IPv6", "FQDN"')]
    assert causes(apiserver.post(path, endpoint_slice("b", "IPv4", ["fd00::1"]))) == [
        ("endpoints[0].addresses[0]", 'Invalid value: "fd00::1": must be a valid IPv4 address')]
    assert causes(apiserver.post(path, endpoint_slice("c", "IPv4", []))) == [
        ("endpoints[0].addresses", "Required value: must contain at least 1 address")]
    assert causes(apiserver.post(path, endpoint_slice("d", "IPv4", ["10.0.0.1"], ports=[{"port": 70000}]))) == [
        ("ports[0].port", "Invalid value: 70000: must be between 1 and 65535, inclusive")]
    apiserver.ok(apiserver.post(path, endpoint_slice("e", "IPv4", ["10.0.0.1"])), 201)
    assert causes(apiserver.patch(f"{path}/e", {"addressType": "IPv6", "endpoints": [{"addresses": ["fd00::1"]}]})) \
        == [("addressType", 'Invalid value: "IPv6": field is immutable')]


def test_the_view_role_reads_endpoint_slices(apiserver: ApiServerProcess):
    view = apiserver.ok(apiserver.get("/apis/rbac.authorization.k8s.io/v1/clusterroles/system:aggregate-to-view"))
    assert {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
            "verbs": ["get", "list", "watch"]} in view["rules"]


@pytest.mark.parametrize("version", VERSIONS)
def test_kubectl_gets_endpoint_slices(apiserver: ApiServerProcess, tmp_path: Path, version: str):
    kubectl = Kubectl(kubectl_path(version), tmp_path / "home", apiserver)
    assert kubectl.ok("get", "endpointslices", "-n", "default", "-o", "name").split() == [
        "endpointslice.discovery.k8s.io/kubernetes"]
    # kubectl apply validates against the server's OpenAPI document of the group.
    ns = apiserver.namespace("slices-kubectl-" + version.replace(".", "-"))
    manifest = ("apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: web\n"
                "addressType: IPv4\nendpoints:\n- addresses: [10.0.0.1, 10.0.0.2, 10.0.0.3, 10.0.0.4]\n"
                "ports:\n- port: 80\n")
    assert "endpointslice.discovery.k8s.io/web created" in kubectl.ok("apply", "-n", ns, "-f", "-", stdin=manifest)
    got = json.loads(kubectl.ok("get", "endpointslices", "web", "-n", ns, "-o", "json"))
    assert got["endpoints"][0]["addresses"] == ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"]
