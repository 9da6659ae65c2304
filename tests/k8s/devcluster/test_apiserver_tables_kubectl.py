"""The real kubectl (oldest and newest here) sorting with --sort-by against the API server stand-in:
kubectl then asks for Table rows with includeObject=Object and sorts by the field path in each row's
object, so the rows must carry whole objects with their kind (without one kubectl printed an empty
NAME/AGE table)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from test_apiserver_schema_kubectl import VERSIONS, Kubectl, kubectl_path

if TYPE_CHECKING:
    from conftest import ApiServerProcess


@pytest.fixture(params=VERSIONS)
def kubectl(request: pytest.FixtureRequest, apiserver: ApiServerProcess, tmp_path: Path) -> Kubectl:
    return Kubectl(kubectl_path(request.param), tmp_path / "home", apiserver)


def namespace_for(kubectl: Kubectl, server: ApiServerProcess, what: str) -> str:
    """A namespace of its own per kubectl version and test, so listings hold only their objects."""
    name = f"sort-{what}-" + kubectl.binary.name.split(".", 1)[1].replace(".", "-")
    server.namespace(name)
    return name


def rows(output: str) -> list[list[str]]:
    return [line.split() for line in output.splitlines()]


def test_get_events_sorted_by_last_timestamp_prints_the_event_columns(
        kubectl: Kubectl, apiserver: ApiServerProcess):
    namespace = namespace_for(kubectl, apiserver, "events")
    # names in another order than the times, so the output shows which one kubectl sorted by
    for name, last, reason in (("a.1", "2024-03-01T00:00:00Z", "Second"),
                               ("b.1", "2024-05-01T00:00:00Z", "Third"),
                               ("c.1", "2024-01-01T00:00:00Z", "First")):
        apiserver.ok(apiserver.post(f"/api/v1/namespaces/{namespace}/events", {
            "metadata": {"name": name}, "type": "Normal", "reason": reason,
            "message": f"{reason} event",
            "involvedObject": {"kind": "Pod", "name": name[0], "namespace": namespace},
            "firstTimestamp": last, "lastTimestamp": last, "count": 1,
            "source": {"component": "kubelet"}}))
    table = rows(kubectl.ok("get", "events", "-n", namespace, "--sort-by=.lastTimestamp"))
    assert table[0] == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert [row[1:] for row in table[1:]] == [["Normal", "First", "pod/c", "First", "event"],
                                              ["Normal", "Second", "pod/a", "Second", "event"],
                                              ["Normal", "Third", "pod/b", "Third", "event"]]
    by_name = rows(kubectl.ok("get", "events", "-n", namespace, "--sort-by=.metadata.name"))
    assert [row[2] for row in by_name[1:]] == ["Second", "Third", "First"]


def test_get_pods_sorted_prints_the_pod_columns_in_the_objects_order(
        kubectl: Kubectl, apiserver: ApiServerProcess):
    namespace = namespace_for(kubectl, apiserver, "pods")
    for name, node in (("p-b", "node-1"), ("p-c", "node-2"), ("p-a", "node-3")):
        apiserver.ok(apiserver.post(f"/api/v1/namespaces/{namespace}/pods", {
            "metadata": {"name": name},
            "spec": {"nodeName": node, "containers": [{"name": "main", "image": "busybox"}]}}))
    table = rows(kubectl.ok("get", "pods", "-n", namespace, "--sort-by=.metadata.name"))
    assert table[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert [row[:4] for row in table[1:]] == [["p-a", "0/1", "Pending", "0"],
                                              ["p-b", "0/1", "Pending", "0"],
                                              ["p-c", "0/1", "Pending", "0"]]
    wide = rows(kubectl.ok("get", "pods", "-n", namespace, "-o", "wide",
                           "--sort-by=.spec.nodeName"))
    assert [(row[0], row[6]) for row in wide[1:]] == [("p-b", "node-1"), ("p-c", "node-2"),
                                                     ("p-a", "node-3")]
