"""Discovery and OpenAPI documents: their shape as kube-apiserver serves them, FiberJob's status and
scale subresources, and what kubectl reads in the OpenAPI v3 documents."""

from __future__ import annotations

from pathlib import Path

import yaml

from k8s.devcluster.apiserver.discovery import (aggregated_content_type, aggregated_discovery,
                                               discovery_document, version_priority,
                                               wanted_aggregated_version)
from k8s.devcluster.apiserver.openapi import OPENAPI_V2_PROTOBUF, openapi_v2, openapi_v3
from k8s.devcluster.apiserver.resource_info import ResourceInfo

CRD_FILE = Path(__file__).resolve().parents[3] / "k8s/config/crd/bases/fibermpi.io_fiberjobs.yaml"
CRD = yaml.safe_load(CRD_FILE.read_text())
FIBERJOBS = ResourceInfo("fibermpi.io", "v1alpha1", "fiberjobs", "fiberjob", "FiberJob",
                         "FiberJobList", True, short_names=("fj",), categories=("all",),
                         subresources=("status", "scale"), crd=CRD)
PODS = ResourceInfo("", "v1", "pods", "pod", "Pod", "PodList", True, short_names=("po",),
                    categories=("all",), subresources=("status", "log", "binding", "eviction"))
NODES = ResourceInfo("", "v1", "nodes", "node", "Node", "NodeList", False, short_names=("no",),
                     subresources=("status",))
LEASES = ResourceInfo("coordination.k8s.io", "v1", "leases", "lease", "Lease", "LeaseList", True)
INFOS = [PODS, NODES, LEASES, FIBERJOBS]
VERSION = {"major": "1", "minor": "30", "gitVersion": "v1.30.0"}


def test_version_is_returned_as_given():
    assert discovery_document("/version", INFOS, VERSION) == VERSION


def test_core_api_versions_carry_the_server_address():
    document = discovery_document("/api", INFOS, VERSION, server_address="10.0.0.1:6443")
    assert document == {"kind": "APIVersions", "versions": ["v1"],
                        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                        "serverAddress": "10.0.0.1:6443"}]}


def test_core_resource_list_has_resources_and_subresources():
    document = discovery_document("/api/v1", INFOS, VERSION)
    assert document["kind"] == "APIResourceList" and "apiVersion" not in document
    assert document["groupVersion"] == "v1"
    by_name = {r["name"]: r for r in document["resources"]}
    assert by_name["pods"]["namespaced"] and by_name["pods"]["shortNames"] == ["po"]
    assert not by_name["nodes"]["namespaced"]
    assert by_name["pods/log"] == {"name": "pods/log", "singularName": "", "namespaced": True,
                                   "kind": "Pod", "verbs": ["get"]}
    assert by_name["pods/binding"]["kind"] == "Binding"
    assert by_name["pods/eviction"]["group"] == "policy"
    assert "leases" not in by_name and "fiberjobs" not in by_name


def test_group_list_names_each_group_with_its_preferred_version():
    document = discovery_document("/apis", INFOS, VERSION)
    assert document["kind"] == "APIGroupList" and document["apiVersion"] == "v1"
    assert [g["name"] for g in document["groups"]] == ["coordination.k8s.io", "fibermpi.io"]
    assert document["groups"][1]["preferredVersion"] == {"groupVersion": "fibermpi.io/v1alpha1",
                                                         "version": "v1alpha1"}


def test_one_group():
    document = discovery_document("/apis/fibermpi.io", INFOS, VERSION)
    assert document["kind"] == "APIGroup" and document["name"] == "fibermpi.io"
    assert document["versions"] == [{"groupVersion": "fibermpi.io/v1alpha1",
                                     "version": "v1alpha1"}]


def test_fiberjob_resources_list_status_and_scale():
    document = discovery_document("/apis/fibermpi.io/v1alpha1", INFOS, VERSION)
    assert document["kind"] == "APIResourceList" and document["apiVersion"] == "v1"
    resources = {r["name"]: r for r in document["resources"]}
    main = resources["fiberjobs"]
    assert (main["singularName"], main["kind"], main["shortNames"], main["categories"]) == (
        "fiberjob", "FiberJob", ["fj"], ["all"])
    assert main["verbs"] == ["create", "delete", "deletecollection", "get", "list", "patch",
                             "update", "watch"]
    assert len(main["storageVersionHash"]) == 12
    assert resources["fiberjobs/status"] == {"name": "fiberjobs/status", "singularName": "",
                                             "namespaced": True, "kind": "FiberJob",
                                             "verbs": ["get", "patch", "update"]}
    assert resources["fiberjobs/scale"] == {"name": "fiberjobs/scale", "singularName": "",
                                            "namespaced": True, "group": "autoscaling",
                                            "version": "v1", "kind": "Scale",
                                            "verbs": ["get", "patch", "update"]}


def test_other_paths_are_not_discovery():
    for path in ("/apis/none.io", "/apis/fibermpi.io/v1", "/api/v2", "/healthz",
                 "/apis/fibermpi.io/v1alpha1/fiberjobs"):
        assert discovery_document(path, INFOS, VERSION) is None


def test_versions_sort_ga_then_beta_then_alpha():
    versions = ["v1alpha1", "v2beta1", "v1", "v1beta2", "v2", "foo"]
    assert sorted(versions, key=version_priority) == ["v2", "v1", "v2beta1", "v1beta2",
                                                      "v1alpha1", "foo"]


# ---------------------------------------------------------------- OpenAPI

def test_openapi_index_points_at_each_group_version_with_a_hash():
    index = openapi_v3("/openapi/v3", INFOS)
    assert sorted(index["paths"]) == ["api/v1", "apis/coordination.k8s.io/v1",
                                      "apis/fibermpi.io/v1alpha1"]
    url = index["paths"]["apis/fibermpi.io/v1alpha1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/fibermpi.io/v1alpha1?hash=")
    assert len(url.split("hash=")[1]) == 128
    assert openapi_v3("/openapi/v3?timeout=32s", INFOS) == index


def fiberjob_document() -> dict:
    return openapi_v3("/openapi/v3/apis/fibermpi.io/v1alpha1?hash=X", INFOS)


def test_fiberjob_schema_is_published_with_its_kind_and_object_meta():
    schemas = fiberjob_document()["components"]["schemas"]
    job = schemas["io.fibermpi.v1alpha1.FiberJob"]
    assert job["x-kubernetes-group-version-kind"] == [{"group": "fibermpi.io",
                                                       "version": "v1alpha1", "kind": "FiberJob"}]
    assert job["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]
    workers = job["properties"]["spec"]["properties"]["workers"]
    assert workers["required"] == ["template", "maxReplicas"]
    assert workers["properties"]["minReplicas"]["description"] == (
        "Fewest worker pods the controller keeps.")
    assert "io.fibermpi.v1alpha1.FiberJobList" in schemas
    assert "io.k8s.api.autoscaling.v1.Scale" in schemas
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in schemas


def test_patch_of_a_fiberjob_declares_field_validation_and_no_strategic_merge():
    paths = fiberjob_document()["paths"]
    item = paths["/apis/fibermpi.io/v1alpha1/namespaces/{namespace}/fiberjobs/{name}"]
    patch = item["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "fibermpi.io",
                                                        "version": "v1alpha1", "kind": "FiberJob"}
    assert "fieldValidation" in [p["name"] for p in patch["parameters"] if p["in"] == "query"]
    assert sorted(patch["requestBody"]["content"]) == [
        "application/apply-patch+yaml", "application/json-patch+json",
        "application/merge-patch+json"]
    assert {"get", "put", "delete"} <= set(item)
    scale = paths["/apis/fibermpi.io/v1alpha1/namespaces/{namespace}/fiberjobs/{name}/scale"]
    assert scale["patch"]["x-kubernetes-group-version-kind"]["kind"] == "Scale"
    assert "/apis/fibermpi.io/v1alpha1/fiberjobs" in paths


def test_every_reference_resolves_inside_its_document():
    for key in openapi_v3("/openapi/v3", INFOS)["paths"]:
        document = openapi_v3(f"/openapi/v3/{key}", INFOS)
        schemas = document["components"]["schemas"]
        refs: list[str] = []

        def collect(node: object) -> None:
            if isinstance(node, dict):
                if "$ref" in node:
                    refs.append(node["$ref"])
                for value in node.values():
                    collect(value)
            elif isinstance(node, list):
                for value in node:
                    collect(value)
        collect(document)
        assert refs, key
        for target in refs:
            assert target.removeprefix("#/components/schemas/") in schemas, (key, target)


def test_builtin_kinds_are_published_by_their_usual_names():
    schemas = openapi_v3("/openapi/v3/api/v1", INFOS)["components"]["schemas"]
    assert schemas["io.k8s.api.core.v1.Pod"]["x-kubernetes-group-version-kind"] == [
        {"group": "", "version": "v1", "kind": "Pod"}]
    lease = openapi_v3("/openapi/v3/apis/coordination.k8s.io/v1", INFOS)
    assert "io.k8s.api.coordination.v1.Lease" in lease["components"]["schemas"]


def test_builtin_kinds_carry_kubernetes_own_definitions_and_take_strategic_merge_patches():
    document = openapi_v3("/openapi/v3/api/v1", INFOS)
    schemas = document["components"]["schemas"]
    pod = schemas["io.k8s.api.core.v1.Pod"]
    assert pod["type"] == "object"
    assert pod["properties"]["spec"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}]
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"] == "int-or-string"
    assert "enum" not in pod["properties"]["kind"]
    patch = document["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert "application/strategic-merge-patch+json" in patch["requestBody"]["content"]


def test_unpublished_paths():
    for path in ("/openapi/v3/apis/none.io/v1", "/openapi/v3/apis", "/openapi/v2", "/api"):
        assert openapi_v3(path, INFOS) is None


def test_openapi_v2_is_an_empty_document():
    assert openapi_v2("/openapi/v2?timeout=32s",
                      "application/com.github.proto-openapi.spec.v2@v1.0+protobuf") == (
        b"", OPENAPI_V2_PROTOBUF)
    body, content_type = openapi_v2("/openapi/v2", "application/json")
    assert content_type == "application/json" and b'"swagger": "2.0"' in body
    assert openapi_v2("/openapi/v3", "application/json") is None


def test_aggregated_discovery_lists_every_group_with_resources_and_subresources():
    document = aggregated_discovery("/apis", INFOS, "v2")
    assert (document["kind"], document["apiVersion"]) == ("APIGroupDiscoveryList",
                                                          "apidiscovery.k8s.io/v2")
    groups = {item["metadata"]["name"]: item for item in document["items"]}
    assert list(groups) == ["coordination.k8s.io", "fibermpi.io"]
    version = groups["fibermpi.io"]["versions"][0]
    assert version["version"] == "v1alpha1" and version["freshness"] == "Current"
    fiberjobs = version["resources"][0]
    assert fiberjobs["resource"] == "fiberjobs" and fiberjobs["scope"] == "Namespaced"
    assert fiberjobs["responseKind"] == {"group": "fibermpi.io", "version": "v1alpha1",
                                         "kind": "FiberJob"}
    assert fiberjobs["shortNames"] == ["fj"]
    assert fiberjobs["subresources"] == [
        {"subresource": "status", "responseKind": {"group": "fibermpi.io",
                                                   "version": "v1alpha1", "kind": "FiberJob"},
         "verbs": ["get", "patch", "update"]},
        {"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1",
                                                  "kind": "Scale"},
         "verbs": ["get", "patch", "update"]}]
    core = aggregated_discovery("/api", INFOS, "v2beta1")
    assert core["apiVersion"] == "apidiscovery.k8s.io/v2beta1"
    assert [r["resource"] for r in core["items"][0]["versions"][0]["resources"]] == ["pods",
                                                                                      "nodes"]
    assert aggregated_discovery("/apis/fibermpi.io", INFOS) is None


def test_the_aggregated_version_is_read_from_accept():
    kubectl_accept = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                      "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
                      "application/json")
    assert wanted_aggregated_version(kubectl_accept) == "v2"
    assert wanted_aggregated_version(kubectl_accept.split(",", 1)[1]) == "v2beta1"
    assert wanted_aggregated_version("application/json, */*") is None
    assert aggregated_content_type("v2") == (
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
