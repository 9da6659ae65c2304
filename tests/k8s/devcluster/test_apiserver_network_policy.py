"""NetworkPolicies in the API server stand-in: served in discovery, stored with the server's
defaults, refused with kube-apiserver's wording where its networking validation refuses them,
listed by the real kubectl (`get netpol`), and collected with their owner."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import ApiServerProcess
from test_apiserver_schema_kubectl import VERSIONS, Kubectl, kubectl_path

BASE = "/apis/networking.k8s.io/v1"


def policy(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": name},
            "spec": spec}


def causes(response) -> list[tuple[str, str]]:
    assert response.status_code == 422, f"{response.status_code}: {response.text}"
    return [(c["field"], c["message"]) for c in response.json()["details"]["causes"]]


def test_discovery_lists_network_policies(apiserver: ApiServerProcess):
    groups = apiserver.ok(apiserver.get("/apis"))["groups"]
    assert any(g["name"] == "networking.k8s.io" for g in groups)
    resources = apiserver.ok(apiserver.get(BASE))["resources"]
    entry = next(r for r in resources if r["name"] == "networkpolicies")
    assert entry["kind"] == "NetworkPolicy" and entry["namespaced"] and entry["shortNames"] == ["netpol"]


def test_a_policy_is_stored_with_the_server_defaults(apiserver: ApiServerProcess):
    ns = apiserver.namespace("netpol-store")
    created = apiserver.ok(apiserver.post(f"{BASE}/namespaces/{ns}/networkpolicies",
                                          policy("same-job", policyTypes=["Ingress"], ingress=[
                                              {"from": [{"podSelector": {"matchLabels": {"job": "a"}}}]}])), 201)
    assert created["spec"]["podSelector"] == {}
    assert created["metadata"]["generation"] == 1
    listed = apiserver.ok(apiserver.get(f"{BASE}/namespaces/{ns}/networkpolicies"))
    assert [p["metadata"]["name"] for p in listed["items"]] == ["same-job"]


@pytest.mark.parametrize("spec, expected", [
    ({"ingress": [{"from": [{}]}]}, [("spec.ingress[0].from[0]", "Required value: must specify a peer")]),
    ({"egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}]}]},
     [("spec.egress[0].to[0]", "Forbidden: may not specify both ipBlock and another peer")]),
    ({"ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.1"}}]}]},
     [("spec.ingress[0].from[0].ipBlock.cidr",
       'Invalid value: "10.0.0.1": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)')]),
    ({"ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["11.0.0.0/16"]}}]}]},
     [("spec.ingress[0].from[0].ipBlock.except[0]", 'Invalid value: "11.0.0.0/16": must be a strict subset of '
       "`cidr`")]),
    ({"ingress": [{"ports": [{"protocol": "ICMP", "port": 0}]}]},
     [("spec.ingress[0].ports[0].protocol", 'Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"'),
      ("spec.ingress[0].ports[0].port", "Invalid value: 0: must be between 1 and 65535, inclusive")]),
    ({"ingress": [{"ports": [{"port": 90, "endPort": 80}]}]},
     [("spec.ingress[0].ports[0].endPort", "Invalid value: 90: must be greater than or equal to `port`")]),
    ({"policyTypes": ["Ingress", "Sideways"]},
     [("spec.policyTypes[1]", 'Unsupported value: "Sideways": supported values: "Ingress", "Egress"')]),
    ({"podSelector": {"matchLabels": {"job": "not valid!"}}},
     [("spec.podSelector.matchLabels", 'Invalid value: "not valid!": a valid label must be an empty string or '
       "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
       "character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
       "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")]),
])
def test_what_the_server_refuses_is_refused(apiserver: ApiServerProcess, spec, expected):
    ns = "default"
    response = apiserver.post(f"{BASE}/namespaces/{ns}/networkpolicies", policy("refused", **spec))
    assert causes(response) == expected


def test_a_rules_list_of_the_wrong_type_is_a_decode_error(apiserver: ApiServerProcess):
    response = apiserver.post(f"{BASE}/namespaces/default/networkpolicies", policy("bad", ingress={"from": []}))
    assert response.status_code == 400
    assert "cannot unmarshal object into Go struct field NetworkPolicy.spec.ingress" in response.text


def test_a_policy_goes_with_its_owner(apiserver: ApiServerProcess):
    ns = apiserver.namespace("netpol-gc")
    owner = apiserver.ok(apiserver.post(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "owner"}}))
    owned = policy("owned")
    owned["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                                             "uid": owner["metadata"]["uid"], "controller": True}]
    apiserver.ok(apiserver.post(f"{BASE}/namespaces/{ns}/networkpolicies", owned), 201)
    apiserver.ok(apiserver.delete(f"/api/v1/namespaces/{ns}/configmaps/owner"))
    apiserver.wait_gone(f"{BASE}/namespaces/{ns}/networkpolicies/owned")


@pytest.mark.parametrize("version", VERSIONS)
def test_kubectl_gets_network_policies(apiserver: ApiServerProcess, tmp_path: Path, version: str):
    kubectl = Kubectl(kubectl_path(version), tmp_path / "home", apiserver)
    ns = apiserver.namespace("netpol-kubectl-" + version.replace(".", "-"))
    apiserver.ok(apiserver.post(f"{BASE}/namespaces/{ns}/networkpolicies",
                                policy("job-a", podSelector={"matchLabels": {"job": "a"}},
                                       policyTypes=["Ingress"])), 201)
    assert kubectl.ok("get", "netpol", "-n", ns, "-o", "name").split() == [
        "networkpolicy.networking.k8s.io/job-a"]
