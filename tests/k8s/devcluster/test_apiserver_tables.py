"""Table answers: FiberJob's printer columns and the built-in printers' columns and cells."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import ApiServerProcess
from k8s.devcluster.apiserver.errors import ApiError
from k8s.devcluster.apiserver.resource_info import ResourceInfo
from k8s.devcluster.apiserver.tables import human_duration, to_table

CRD_FILE = Path(__file__).resolve().parents[3] / "k8s/config/crd/bases/fibermpi.io_fiberjobs.yaml"
CRD = yaml.safe_load(CRD_FILE.read_text())
FIBERJOBS = ResourceInfo("fibermpi.io", "v1alpha1", "fiberjobs", "fiberjob", "FiberJob",
                         "FiberJobList", True, crd=CRD)
NOW = datetime.datetime(2026, 1, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)
CREATED = "2026-01-01T11:55:00Z"  # five minutes before NOW


def core(plural: str, kind: str, namespaced: bool = True, group: str = "") -> ResourceInfo:
    return ResourceInfo(group, "v1", plural, plural[:-1], kind, f"{kind}List", namespaced)


def names(table: dict[str, Any]) -> list[str]:
    return [c["name"] for c in table["columnDefinitions"]]


def cells(table: dict[str, Any]) -> list[list[Any]]:
    return [row["cells"] for row in table["rows"]]


def fiberjob(name: str, **status: Any) -> dict[str, Any]:
    return {"apiVersion": "fibermpi.io/v1alpha1", "kind": "FiberJob",
            "metadata": {"name": name, "namespace": "default", "creationTimestamp": CREATED,
                         "resourceVersion": "7"},
            "spec": {"workers": {"minReplicas": 1, "maxReplicas": 8}}, "status": status}


def test_fiberjob_table_has_the_crd_printer_columns():
    table = to_table(FIBERJOBS, [fiberjob("a", phase="Running", workers={"desired": 2,
                                                                          "ready": 1}),
                                 fiberjob("b")],
                     include_object="", list_metadata={"resourceVersion": "9"}, now=NOW)
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    assert table["metadata"] == {"resourceVersion": "9"}
    assert names(table) == ["Name", "Phase", "Desired", "Ready", "Min", "Max", "Age"]
    assert [c["type"] for c in table["columnDefinitions"]] == [
        "string", "string", "integer", "integer", "integer", "integer", "date"]
    assert table["columnDefinitions"][0]["format"] == "name"
    assert table["columnDefinitions"][1]["description"].startswith("Where the job is")
    assert cells(table) == [["a", "Running", 2, 1, 1, 8, "5m"], ["b", None, None, None, 1, 8, "5m"]]


def test_row_objects_follow_include_object():
    job = fiberjob("a")
    metadata_row = to_table(FIBERJOBS, [job], include_object="Metadata", list_metadata={},
                            now=NOW)["rows"][0]
    assert metadata_row["object"] == {"kind": "PartialObjectMetadata",
                                      "apiVersion": "meta.k8s.io/v1",
                                      "metadata": job["metadata"]}
    full = to_table(FIBERJOBS, [job], include_object="Object", list_metadata={}, now=NOW)
    assert full["rows"][0]["object"] == job
    bare = to_table(FIBERJOBS, [job], include_object="None", list_metadata={}, now=NOW)
    assert "object" not in bare["rows"][0]


def test_object_rows_carry_the_kind_and_version_a_typed_list_item_lacks():
    item = pod("p", [running()], phase="Running")  # as a PodList item: no kind, no apiVersion
    row = to_table(PODS, [item], include_object="Object", list_metadata={}, now=NOW)["rows"][0]
    assert row["object"] == {"kind": "Pod", "apiVersion": "v1", **item}
    assert list(row["object"])[:2] == ["kind", "apiVersion"]
    assert "kind" not in item
    rbac = core("roles", "Role", group="rbac.authorization.k8s.io")
    role = {"metadata": {"name": "reader", "creationTimestamp": CREATED}, "rules": []}
    assert to_table(rbac, [role], include_object="Object", list_metadata={}, now=NOW)["rows"][0][
        "object"] == {"kind": "Role", "apiVersion": "rbac.authorization.k8s.io/v1", **role}


@pytest.mark.parametrize("value,quoted", [("All", '"All"'), ("PartialObjectMetadata",
                                                            '"PartialObjectMetadata"'),
                                          ('a"b', '"a\\"b"'), ("object", '"object"')])
def test_an_unknown_include_object_policy_is_the_servers_bad_request(value: str, quoted: str):
    for objects in ([fiberjob("a")], []):  # refused even when no row would carry an object
        with pytest.raises(ApiError) as caught:
            to_table(FIBERJOBS, objects, include_object=value, list_metadata={}, now=NOW)
        assert (caught.value.code, caught.value.reason) == (400, "BadRequest")
        assert caught.value.message == (
            f"Unable to convert to Table as requested: includeObject: Invalid value: {quoted}: "
            "must be 'Metadata', 'Object', 'None', or empty")


TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io"


def test_a_bad_policy_is_refused_before_a_list_or_watch_starts(apiserver: ApiServerProcess):
    namespace = apiserver.namespace("tables-bad-policy")
    path = f"/api/v1/namespaces/{namespace}/events"
    for params in ({"includeObject": "All"}, {"includeObject": "All", "watch": "true"}):
        answer = apiserver.get(path, params=params, headers={"Accept": TABLE_ACCEPT})
        assert answer.status_code == 400
        assert (answer.json()["reason"], answer.json()["message"]) == (
            "BadRequest", 'Unable to convert to Table as requested: includeObject: Invalid '
            'value: "All": must be \'Metadata\', \'Object\', \'None\', or empty')
    plain = apiserver.get(path, params={"includeObject": "All"})  # only Tables read it
    assert apiserver.ok(plain)["kind"] == "EventList"


def test_a_listed_pod_comes_back_whole_in_object_rows(apiserver: ApiServerProcess):
    namespace = apiserver.namespace("tables-object-rows")
    created = apiserver.ok(apiserver.post(f"/api/v1/namespaces/{namespace}/pods", {
        "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}))
    answer = apiserver.get(f"/api/v1/namespaces/{namespace}/pods",
                           params={"includeObject": "Object"}, headers={"Accept": TABLE_ACCEPT})
    assert apiserver.ok(answer)["rows"][0]["object"] == created


def test_an_empty_include_object_policy_is_metadata():
    row = to_table(FIBERJOBS, [fiberjob("a")], include_object="", list_metadata={},
                   now=NOW)["rows"][0]
    assert row["object"]["kind"] == "PartialObjectMetadata"


def test_a_crd_without_printer_columns_gets_name_and_created_at():
    crd = yaml.safe_load(CRD_FILE.read_text())
    del crd["spec"]["versions"][0]["additionalPrinterColumns"]
    info = ResourceInfo("fibermpi.io", "v1alpha1", "fiberjobs", "fiberjob", "FiberJob",
                        "FiberJobList", True, crd=crd)
    table = to_table(info, [fiberjob("a")], include_object="None", list_metadata={}, now=NOW)
    assert names(table) == ["Name", "Created At"]
    assert table["columnDefinitions"][1]["type"] == "date"
    assert cells(table) == [["a", CREATED]]


def pod(name: str, containers: list[dict[str, Any]], **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "creationTimestamp": CREATED},
            "spec": {"containers": [{"name": f"c{i}"} for i in range(len(containers))],
                     "nodeName": "node-1"},
            "status": {"podIP": "10.1.0.5", "containerStatuses": containers, **status}}


def running(ready: bool = True, restarts: int = 0, **extra: Any) -> dict[str, Any]:
    return {"ready": ready, "restartCount": restarts, "state": {"running": {}}, **extra}


PODS = core("pods", "Pod")


def pod_cells(obj: dict[str, Any]) -> list[Any]:
    return to_table(PODS, [obj], include_object="None", list_metadata={}, now=NOW)["rows"][0][
        "cells"]


def test_pod_columns_and_wide_columns():
    table = to_table(PODS, [], include_object="None", list_metadata={}, now=NOW)
    assert names(table) == ["Name", "Ready", "Status", "Restarts", "Age", "IP", "Node",
                            "Nominated Node", "Readiness Gates"]
    assert [c["priority"] for c in table["columnDefinitions"]] == [0, 0, 0, 0, 0, 1, 1, 1, 1]


def test_running_pod_row():
    assert pod_cells(pod("p", [running(), running(ready=False)], phase="Running")) == [
        "p", "1/2", "Running", "0", "5m", "10.1.0.5", "node-1", "<none>", "<none>"]


def test_waiting_container_reason_and_restarts_with_the_last_one():
    crashing = {"ready": False, "restartCount": 3,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"exitCode": 1,
                                             "finishedAt": "2026-01-01T11:58:00Z"}}}
    row = pod_cells(pod("p", [crashing], phase="Running"))
    assert row[1:4] == ["0/1", "CrashLoopBackOff", "3 (2m ago)"]


def test_terminated_container_without_reason_shows_its_exit_code():
    ended = {"ready": False, "restartCount": 0, "state": {"terminated": {"exitCode": 3}}}
    assert pod_cells(pod("p", [ended], phase="Failed"))[2] == "ExitCode:3"
    completed = {"ready": False, "restartCount": 0,
                 "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
    assert pod_cells(pod("p", [completed], phase="Succeeded"))[2] == "Completed"


def test_pod_being_deleted_is_terminating_and_pending_pod_shows_its_phase():
    deleting = pod("p", [running()], phase="Running")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T11:59:00Z"
    assert pod_cells(deleting)[2] == "Terminating"
    pending = pod("p", [], phase="Pending")
    pending["status"].pop("podIP")
    pending["spec"]["containers"] = [{"name": "c"}]
    assert pod_cells(pending)[1:3] == ["0/1", "Pending"]
    assert pod_cells(pending)[5] == "<none>"


def test_init_containers_show_progress():
    obj = pod("p", [], phase="Pending")
    obj["spec"]["initContainers"] = [{"name": "i0"}, {"name": "i1"}]
    obj["status"]["initContainerStatuses"] = [
        {"state": {"terminated": {"exitCode": 0}}},
        {"state": {"running": {}}}]
    assert pod_cells(obj)[2] == "Init:1/2"


def test_events_table():
    event = {"metadata": {"name": "job.1", "creationTimestamp": CREATED},
             "involvedObject": {"kind": "FiberJob", "name": "job"}, "type": "Warning",
             "reason": "WorkerLost", "message": "worker 1 lost", "count": 3,
             "firstTimestamp": "2026-01-01T11:50:00Z", "lastTimestamp": "2026-01-01T11:59:30Z",
             "source": {"component": "fiber-controller"}}
    table = to_table(core("events", "Event"), [event], include_object="None", list_metadata={},
                     now=NOW)
    assert [c["name"] for c in table["columnDefinitions"] if c["priority"] == 0] == [
        "Last Seen", "Type", "Reason", "Object", "Message"]
    assert cells(table) == [["30s", "Warning", "WorkerLost", "fiberjob/job", "",
                             "fiber-controller", "worker 1 lost", "10m", 3, "job.1"]]


EVENTS = core("events", "Event")


def event_cells(event: dict[str, Any], info: ResourceInfo = EVENTS) -> list[Any]:
    return cells(to_table(info, [event], include_object="None", list_metadata={}, now=NOW))[0]


def test_event_times_fall_back_as_the_server_prints_them():
    only_first = {"metadata": {"name": "e"}, "firstTimestamp": "2026-01-01T11:50:00Z"}
    assert event_cells(only_first)[0] == "10m" and event_cells(only_first)[7] == "10m"
    micro = {"metadata": {"name": "e"}, "eventTime": "2026-01-01T11:59:00.000000Z",
             "series": {"count": 4, "lastObservedTime": "2026-01-01T11:59:50.000000Z"}}
    assert [event_cells(micro)[i] for i in (0, 7, 8)] == ["10s", "60s", 4]
    assert [event_cells({"metadata": {"name": "e"}})[i] for i in (0, 7, 8)] == [
        "<unknown>", "<unknown>", 1]


def test_event_object_source_and_message_cells():
    event = {"metadata": {"name": "e"}, "involvedObject": {"kind": "Node"},
             "reportingController": "kubelet", "reportingInstance": "node-1",
             "message": "  rebooted\n", "lastTimestamp": "2026-01-01T11:59:00Z"}
    row = event_cells(event)
    assert row[3:7] == ["node", "", "kubelet, node-1", "rebooted"]
    event["source"] = {"component": "fiber-controller"}
    assert event_cells(event)[5] == "fiber-controller, node-1"


def test_node_columns():
    node = {"metadata": {"name": "n1", "creationTimestamp": CREATED,
                         "labels": {"node-role.kubernetes.io/worker": ""}},
            "spec": {"unschedulable": True},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                       "nodeInfo": {"kubeletVersion": "v1.30.0"},
                       "addresses": [{"type": "InternalIP", "address": "10.0.0.2"}]}}
    table = to_table(core("nodes", "Node", False), [node], include_object="None",
                     list_metadata={}, now=NOW)
    assert cells(table)[0][:6] == ["n1", "Ready,SchedulingDisabled", "worker", "5m", "v1.30.0",
                                   "10.0.0.2"]


@pytest.mark.parametrize("plural,kind,namespaced,group", [
    ("customresourcedefinitions", "CustomResourceDefinition", False, "apiextensions.k8s.io"),
    ("services", "Service", True, ""), ("secrets", "Secret", True, ""),
    ("clusterrolebindings", "ClusterRoleBinding", False, "rbac.authorization.k8s.io")])
def test_other_kinds_get_name_and_created_at(plural: str, kind: str, namespaced: bool, group: str):
    # Only the kinds the project's commands print have their own columns (pods, nodes, events,
    # quota); the rest get the server's default table.
    obj = {"metadata": {"name": "fiberjobs.fibermpi.io", "creationTimestamp": CREATED}}
    table = to_table(core(plural, kind, namespaced, group), [obj], include_object="None",
                     list_metadata={}, now=NOW)
    assert names(table) == ["Name", "Created At"]
    assert cells(table) == [["fiberjobs.fibermpi.io", CREATED]]


@pytest.mark.parametrize("seconds,text", [(-5, "<invalid>"), (0, "0s"), (119, "119s"),
                                          (200, "3m20s"), (600, "10m"), (3 * 3600 + 600, "3h10m"),
                                          (10 * 3600, "10h"), (3 * 86400 + 3600, "3d1h"),
                                          (400 * 86400, "400d"), (800 * 86400, "2y70d"),
                                          (9 * 365 * 86400, "9y")])
def test_ages_read_as_the_server_writes_them(seconds: int, text: str):
    assert human_duration(seconds) == text


@pytest.mark.parametrize("kind,value,cell", [
    ("string", ["a", "b"], "[a b]"), ("string", {"k": 1}, "map[k:1]"), ("string", 3, "3"),
    ("integer", 2.7, 2), ("integer", "5", None), ("number", 2, 2.0), ("boolean", "true", None),
    ("date", 5, None), ("date", "soon", "<invalid>")])
def test_printer_column_values_are_converted_as_the_server_does(kind: str, value: Any, cell: Any):
    crd = yaml.safe_load(CRD_FILE.read_text())
    crd["spec"]["versions"][0]["additionalPrinterColumns"] = [
        {"name": "X", "type": kind, "jsonPath": ".spec.x"}]
    info = ResourceInfo("fibermpi.io", "v1alpha1", "fiberjobs", "fiberjob", "FiberJob",
                        "FiberJobList", True, crd=crd)
    job = fiberjob("a")
    job["spec"]["x"] = value
    assert cells(to_table(info, [job], include_object="None", list_metadata={}, now=NOW)) == [
        ["a", cell]]
