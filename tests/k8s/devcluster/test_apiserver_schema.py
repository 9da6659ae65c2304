"""Custom resource admission against the FiberJob CRD: defaulting, pruning, field validation modes
and the 422 causes, worded and placed as kube-apiserver answers them."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from k8s.devcluster.apiserver.errors import ApiError
from k8s.devcluster.apiserver.resource_info import ResourceInfo
from k8s.devcluster.apiserver.schema import admit_custom_resource, go_float, validate_crd

CRD_FILE = Path(__file__).resolve().parents[3] / "k8s/config/crd/bases/fibermpi.io_fiberjobs.yaml"
SKIPPED = ('Invalid value: "null": some validation rules were not checked because the object was '
           "invalid; correct the existing errors to complete validation")


def load_crd() -> dict[str, Any]:
    return yaml.safe_load(CRD_FILE.read_text())


def info_for(crd: dict[str, Any]) -> ResourceInfo:
    names = crd["spec"]["names"]
    return ResourceInfo(crd["spec"]["group"], crd["spec"]["versions"][0]["name"], names["plural"],
                        names["singular"], names["kind"], names["listKind"],
                        crd["spec"]["scope"] == "Namespaced", crd=crd)


FIBERJOBS = info_for(load_crd())


def fiberjob(**workers: Any) -> dict[str, Any]:
    return {
        "apiVersion": "fibermpi.io/v1alpha1", "kind": "FiberJob",
        "metadata": {"name": "demo", "namespace": "default", "labels": {"app": "demo"}},
        "spec": {"launcher": {"template": {"spec": {"containers": [{"name": "main"}]}}},
                 "workers": {"template": {}, "maxReplicas": 4, **workers}},
    }


def admit(obj: dict[str, Any], old: dict[str, Any] | None = None, mode: str = "Strict",
          subresource: str | None = None, info: ResourceInfo = FIBERJOBS):
    return admit_custom_resource(info, obj, old, field_validation=mode, subresource=subresource)


def refusal(obj: dict[str, Any], **kwargs: Any) -> ApiError:
    with pytest.raises(ApiError) as caught:
        admit(obj, **kwargs)
    return caught.value


def causes(error: ApiError) -> list[tuple[str, str, str]]:
    return [(c["reason"], c["field"], c["message"]) for c in error.details["causes"]]


# ---------------------------------------------------------------- defaulting and pruning

def test_defaults_fill_absent_fields_and_leave_absent_objects_absent():
    stored, warnings = admit(fiberjob())
    workers = stored["spec"]["workers"]
    assert workers["minReplicas"] == 0 and workers["slotsPerWorker"] == 1
    # The scale subresource reads it: without a value there, its GET is the real server's 500; and an
    # HPA leaves a scale of 0 alone, so the default is 1.
    assert workers["replicas"] == 1
    assert "runPolicy" not in stored["spec"]  # no default of its own: stays absent
    assert warnings == []


def test_defaults_apply_inside_a_present_object_without_overriding():
    obj = fiberjob(minReplicas=2)
    obj["spec"]["runPolicy"] = {"suspend": True}
    stored, _ = admit(obj)
    assert stored["spec"]["runPolicy"] == {"suspend": True, "cleanPodPolicy": "Running",
                                          "nodeLossTolerationSeconds": 30}
    assert stored["spec"]["workers"]["minReplicas"] == 2


def test_null_of_a_non_nullable_field_takes_its_default():
    stored, _ = admit(fiberjob(minReplicas=None))
    assert stored["spec"]["workers"]["minReplicas"] == 0


def test_admission_leaves_the_request_object_untouched():
    obj = fiberjob()
    before = copy.deepcopy(obj)
    admit(obj)
    assert obj == before


def nested_default_crd() -> dict[str, Any]:
    """A CRD whose defaulted object carries defaults of its own, and a CEL transition rule."""
    crd = load_crd()
    props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    props["properties"]["extra"] = {
        "type": "object", "default": {},
        "properties": {"retry": {"type": "object", "default": {"limit": 3},
                                 "properties": {"limit": {"type": "integer"},
                                                "backoff": {"type": "string",
                                                            "default": "exponential"}}},
                       "epoch": {"type": "integer",
                                 "x-kubernetes-validations": [
                                     {"rule": "self >= oldSelf",
                                      "message": "epoch may not go back"}]},
                       "probe": {"type": "object", "properties": {"port": {"type": "integer"}},
                                 "x-kubernetes-validations": [
                                     {"rule": "!has(self.port) || self.port > 1024"},
                                     {"rule": "self.missing > 0"}]}},
    }
    return crd


def test_defaults_go_on_inside_objects_that_exist_only_because_defaulted():
    info = info_for(nested_default_crd())
    stored, _ = admit(fiberjob(), info=info)
    assert stored["spec"]["extra"] == {"retry": {"limit": 3, "backoff": "exponential"}}


def test_pruning_keeps_preserved_subtrees_object_meta_and_drops_the_rest():
    obj = fiberjob(extraField=1)
    obj["spec"]["launcher"]["template"]["spec"]["anything"] = {"kept": True}
    obj["metadata"]["annotations"] = {"a": "b"}
    obj["metadata"]["bogus"] = "x"
    obj["status"] = {"phase": "Running", "unknown": 1}
    stored, warnings = admit(obj, mode="Ignore")
    assert "extraField" not in stored["spec"]["workers"]
    assert stored["spec"]["launcher"]["template"]["spec"]["anything"] == {"kept": True}
    assert stored["metadata"] == {"name": "demo", "namespace": "default",
                                  "labels": {"app": "demo"}, "annotations": {"a": "b"}}
    assert stored["status"] == {"phase": "Running"}
    assert stored["apiVersion"] == "fibermpi.io/v1alpha1" and stored["kind"] == "FiberJob"
    assert warnings == []


def test_unknown_fields_under_strict_are_a_bad_request_naming_each_field():
    obj = fiberjob(foo=1)
    obj["spec"]["bar"] = 2
    error = refusal(obj)
    assert error.code == 400 and error.reason == "BadRequest"
    assert error.message == (
        'FiberJob in version "v1alpha1" cannot be handled as a FiberJob: strict decoding error: '
        'unknown field "spec.bar", unknown field "spec.workers.foo"')


def test_unknown_fields_under_warn_are_warnings_and_pruned():
    obj = fiberjob(foo=1)
    obj["metadata"]["bogus"] = 1
    stored, warnings = admit(obj, mode="Warn")
    assert warnings == ['unknown field "metadata.bogus"', 'unknown field "spec.workers.foo"']
    assert "foo" not in stored["spec"]["workers"]


def test_an_unknown_field_validation_directive_is_refused():
    error = refusal(fiberjob(), mode="Loose")
    assert error.code == 400 and "Loose" in error.message


# ---------------------------------------------------------------- 422 Invalid

def test_min_above_max_is_refused_by_the_cel_rule_naming_both_fields():
    error = refusal(fiberjob(minReplicas=5, maxReplicas=4))
    assert error.code == 422 and error.reason == "Invalid"
    message = ('Invalid value: "object": spec.workers.minReplicas must be less than or equal to '
               "spec.workers.maxReplicas")
    assert causes(error) == [("FieldValueInvalid", "spec.workers", message)]
    assert error.message == f'FiberJob.fibermpi.io "demo" is invalid: spec.workers: {message}'
    assert error.details["kind"] == "FiberJob" and error.details["group"] == "fibermpi.io"


def test_bounds_are_checked_and_cel_still_runs_after_them():
    error = refusal(fiberjob(minReplicas=5, maxReplicas=200000))
    assert causes(error) == [
        ("FieldValueInvalid", "spec.workers.maxReplicas",
         "Invalid value: 200000: spec.workers.maxReplicas in body should be less than or equal "
         "to 100000")]
    error = refusal(fiberjob(slotsPerWorker=0))
    assert causes(error) == [
        ("FieldValueInvalid", "spec.workers.slotsPerWorker",
         "Invalid value: 0: spec.workers.slotsPerWorker in body should be greater than or equal "
         "to 1")]


def test_a_missing_required_field_blocks_the_cel_rules():
    obj = fiberjob()
    del obj["spec"]["workers"]["maxReplicas"]
    error = refusal(obj)
    assert causes(error) == [("FieldValueRequired", "spec.workers.maxReplicas", "Required value"),
                             ("FieldValueInvalid", "<nil>", SKIPPED)]
    assert error.message == ('FiberJob.fibermpi.io "demo" is invalid: [spec.workers.maxReplicas: '
                             f"Required value, <nil>: {SKIPPED}]")
    assert causes(refusal({"apiVersion": "fibermpi.io/v1alpha1", "kind": "FiberJob",
                           "metadata": {"name": "x"}}))[0] == (
        "FieldValueRequired", "spec", "Required value")


def test_enum_values_are_listed_as_the_server_lists_them():
    obj = fiberjob()
    obj["spec"]["runPolicy"] = {"cleanPodPolicy": "Some"}
    assert causes(refusal(obj))[0] == (
        "FieldValueNotSupported", "spec.runPolicy.cleanPodPolicy",
        'Unsupported value: "Some": supported values: "Running", "All", "None"')


def test_integer_fields_refuse_strings_and_fractions_but_take_integral_numbers():
    assert causes(refusal(fiberjob(replicas="3")))[0] == (
        "FieldValueTypeInvalid", "spec.workers.replicas",
        'Invalid value: "string": spec.workers.replicas in body must be of type integer: '
        '"string"')
    assert causes(refusal(fiberjob(replicas=1.5)))[0] == (
        "FieldValueTypeInvalid", "spec.workers.replicas",
        'Invalid value: "number": spec.workers.replicas in body must be of type integer: '
        '"number"')
    stored, _ = admit(fiberjob(minReplicas=2.0))
    assert stored["spec"]["workers"]["minReplicas"] == 2
    assert isinstance(stored["spec"]["workers"]["minReplicas"], int)


def test_scale_paths_hold_whole_non_negative_numbers():
    # The scale subresource reads replicas as an int64: 2.0 decodes as a float and is refused.
    assert causes(refusal(fiberjob(replicas=2.0))) == [(
        "FieldValueInvalid", ".spec.workers.replicas",
        "Invalid value: 0: .spec.workers.replicas accessor error: 2 is of the type float64, "
        "expected int64")]
    assert causes(refusal(fiberjob(replicas=-1))) == [
        ("FieldValueInvalid", "spec.workers.replicas",
         "Invalid value: -1: spec.workers.replicas in body should be greater than or equal to 0"),
        ("FieldValueInvalid", ".spec.workers.replicas",
         "Invalid value: -1: should be a non-negative integer")]
    obj = fiberjob()
    obj["status"] = {"workers": {"ready": -2, "selector": "fibermpi.io/job-name=demo"}}
    assert causes(refusal(obj, subresource="status")) == [
        ("FieldValueInvalid", ".status.workers.ready",
         "Invalid value: -2: should be a non-negative integer")]


def test_set_lists_refuse_duplicates_and_items_are_length_checked():
    error = refusal(fiberjob(workersToDelete=["w-1", "w-2", "w-1", "x" * 254]))
    assert causes(error) == [
        ("FieldValueTooLong", "spec.workers.workersToDelete[3]",
         "Too long: may not be longer than 253"),
        ("FieldValueDuplicate", "spec.workers.workersToDelete[2]", 'Duplicate value: "w-1"'),
        ("FieldValueInvalid", "<nil>", SKIPPED)]


def condition(kind: str, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "status": "True", "reason": "Seen", "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z", **extra}


def test_status_subresource_validates_status_only():
    obj = fiberjob(minReplicas=9)  # an invalid spec: not the status writer's business
    obj["status"] = {"conditions": [condition("Created"), condition("Created", status="Maybe")],
                     "startTime": "yesterday"}
    error = refusal(obj, subresource="status")
    assert causes(error) == [
        ("FieldValueNotSupported", "status.conditions[1].status",
         'Unsupported value: "Maybe": supported values: "True", "False", "Unknown"'),
        ("FieldValueTypeInvalid", "status.startTime",
         'Invalid value: "yesterday": status.startTime in body must be of type date-time: '
         '"yesterday"'),
        ("FieldValueDuplicate", "status.conditions[1]",
         'Duplicate value: map[string]interface {}{"type":"Created"}'),
        ("FieldValueInvalid", "<nil>", SKIPPED)]
    obj["status"] = {"conditions": [condition("Created")], "startTime": "2026-01-01T10:00:00Z"}
    stored, _ = admit(obj, subresource="status")
    assert stored["status"]["conditions"][0]["type"] == "Created"


def test_required_fields_of_list_items_are_named_by_index():
    obj = fiberjob()
    obj["status"] = {"conditions": [{"type": "Created", "status": "True"}]}
    found = causes(refusal(obj, subresource="status"))
    assert ("FieldValueRequired", "status.conditions[0].reason", "Required value") in found
    assert ("FieldValueRequired", "status.conditions[0].lastTransitionTime",
            "Required value") in found


# ---------------------------------------------------------------- CEL

def test_a_rule_that_cannot_be_evaluated_is_an_error():
    info = info_for(nested_default_crd())
    obj = fiberjob()
    obj["spec"]["extra"] = {"epoch": 5, "probe": {"missing": 1}}
    # "missing" is pruned: the rule naming it cannot be evaluated, which is an error
    error = refusal(obj, info=info, mode="Ignore")
    assert causes(error) == [(
        "FieldValueInvalid", "spec.extra.probe",
        'Invalid value: "object": no such key: missing evaluating rule: self.missing > 0')]


def without_missing_rule(crd: dict[str, Any]) -> dict[str, Any]:
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["extra"]["properties"]["probe"]["x-kubernetes-validations"].pop()
    return crd


def test_old_self_compares_with_the_stored_value():
    info = info_for(without_missing_rule(nested_default_crd()))
    old = fiberjob()
    old["spec"]["extra"] = {"epoch": 5}
    stored, _ = admit(old, info=info)  # create: the transition rule does not run
    newer = copy.deepcopy(stored)
    newer["spec"]["extra"]["epoch"] = 4
    assert causes(refusal(newer, old=stored, info=info)) == [
        ("FieldValueInvalid", "spec.extra.epoch", 'Invalid value: "integer": epoch may not go back')]
    newer["spec"]["extra"]["epoch"] = 6
    admit(newer, old=stored, info=info)


def test_has_guards_an_optional_field_and_the_default_message_names_the_rule():
    info = info_for(without_missing_rule(nested_default_crd()))
    obj = fiberjob()
    obj["spec"]["extra"] = {"probe": {}}
    admit(obj, info=info)
    obj["spec"]["extra"] = {"probe": {"port": 80}}
    assert causes(refusal(obj, info=info)) == [
        ("FieldValueInvalid", "spec.extra.probe",
         'Invalid value: "object": failed rule: !has(self.port) || self.port > 1024')]


# ---------------------------------------------------------------- CRD checks and formatting

def test_the_project_crd_is_structural():
    validate_crd(load_crd())


def test_a_crd_with_an_untyped_field_is_refused():
    crd = load_crd()
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    del schema["properties"]["spec"]["properties"]["workers"]["type"]
    with pytest.raises(ApiError) as caught:
        validate_crd(crd)
    assert caught.value.code == 422
    assert causes(caught.value) == [(
        "FieldValueRequired",
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[workers].type",
        "Required value: must not be empty for specified object fields")]


@pytest.mark.parametrize("number,text", [(0.0, "0"), (100000.0, "100000"), (0.5, "0.5"),
                                         (1e21, "1e+21"), (1.5e-7, "1.5e-07"), (-3.0, "-3")])
def test_bounds_print_as_go_prints_a_float64(number: float, text: str):
    assert go_float(number) == text


def test_unchanged_invalid_values_ratchet_on_update():
    # Stored before the CRD tightened: too many workers and min above max.
    stored = fiberjob(minReplicas=5, maxReplicas=200000)
    stored["spec"]["workers"].update(slotsPerWorker=1)
    relabelled = copy.deepcopy(stored)
    relabelled["metadata"]["labels"]["tier"] = "gold"
    relabelled["spec"]["runPolicy"] = {"suspend": True}
    admit(relabelled, old=stored)
    changed = copy.deepcopy(stored)
    changed["spec"]["workers"]["maxReplicas"] = 300000
    assert [c[1] for c in causes(refusal(changed, old=stored))] == ["spec.workers.maxReplicas"]


@pytest.mark.parametrize("text,valid", [
    ("2026-01-01T10:00:00Z", True), ("2026-01-01t10:00:00.123+02:00", True),
    ("2026-02-30T10:00:00Z", False), ("2026-01-01 10:00:00Z", False),
    ("2026-01-01T10:00Z", False), ("2026-01-01T24:00:00Z", False), ("2026-01-01T10:00:00", False)])
def test_date_time_format_as_the_server_checks_it(text: str, valid: bool):
    obj = fiberjob()
    obj["status"] = {"startTime": text}
    if valid:
        admit(obj, subresource="status")
    else:
        assert causes(refusal(obj, subresource="status"))[0][1] == "status.startTime"


def test_date_times_are_timestamps_in_cel_rules():
    crd = load_crd()
    status = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    status["x-kubernetes-validations"] = [
        {"rule": "!has(self.completionTime) || self.completionTime >= self.startTime",
         "message": "completionTime may not precede startTime"}]
    obj = fiberjob()
    obj["status"] = {"startTime": "2026-01-01T10:00:00Z", "completionTime": "2026-01-01T11:00:00Z"}
    admit(obj, subresource="status", info=info_for(crd))
    obj["status"]["completionTime"] = "2026-01-01T09:00:00+00:00"
    assert causes(refusal(obj, subresource="status", info=info_for(crd))) == [
        ("FieldValueInvalid", "status",
         'Invalid value: "object": completionTime may not precede startTime')]


@pytest.mark.parametrize("rule,passes", [
    ("self.workersToDelete.all(n, n.lowerAscii() == n)", False),
    ("self.workersToDelete.isSorted()", False),
    ("self.workersToDelete.join(',').indexOf('W-1') == 4", True),
    ("self.workersToDelete.exists(n, n.split('-')[1] == '2')", True),
    ("self.workersToDelete.map(n, int(n.substring(2))).sum() == 3", True),
    ("self.workersToDelete.map(n, int(n.substring(2))).max() > 2", False),
])
def test_kubernetes_cel_string_and_list_extensions(rule: str, passes: bool):
    crd = load_crd()
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["workers"]["x-kubernetes-validations"] = [{"rule": rule}]
    obj = fiberjob(workersToDelete=["W-2", "W-1"])
    if passes:
        admit(obj, info=info_for(crd))
    else:
        assert causes(refusal(obj, info=info_for(crd))) == [
            ("FieldValueInvalid", "spec.workers", f'Invalid value: "object": failed rule: {rule}')]


def test_a_crd_with_bad_names_group_and_versions_is_refused():
    crd = load_crd()
    crd["spec"]["group"] = "fibermpi"
    crd["spec"]["names"]["listKind"] = "FiberJob"
    crd["spec"]["names"]["shortNames"] = ["f_j"]
    crd["spec"]["versions"][0]["storage"] = False
    with pytest.raises(ApiError) as caught:
        validate_crd(crd)
    assert [c[1] for c in causes(caught.value)] == [
        "spec.group", "spec.names.listKind", "spec.names.shortNames[0]", "metadata.name",
        "spec.versions"]
    assert causes(caught.value)[0][2] == ('Invalid value: "fibermpi": should be a domain with at '
                                          "least one dot")
    assert causes(caught.value)[1][2] == ('Invalid value: "FiberJob": kind and listKind may not be '
                                          "the same")


def test_root_rules_see_kind_and_name_but_no_other_metadata():
    crd = load_crd()
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["x-kubernetes-validations"] = [
        {"rule": "self.kind == 'FiberJob' && self.metadata.name.startsWith('demo')",
         "message": "demo jobs only"},
        {"rule": "!has(self.metadata.labels)", "message": "labels are hidden from rules"}]
    admit(fiberjob(), info=info_for(crd))
    renamed = fiberjob()
    renamed["metadata"]["name"] = "other"
    assert causes(refusal(renamed, info=info_for(crd))) == [
        ("FieldValueInvalid", "<nil>", 'Invalid value: "object": demo jobs only')]


@pytest.mark.parametrize("name", ["train.v2", "1job", "Upper", "a" * 64, "ends-"])
def test_a_job_name_that_cannot_name_a_service_or_label_pods_is_refused(name: str):
    job = fiberjob()
    job["metadata"]["name"] = name
    error = refusal(job)
    assert error.code == 422
    assert "metadata.name must be a DNS-1035 label of at most 63 characters" in error.message


@pytest.mark.parametrize("name", ["sample", "a" * 63, "es-run-2"])
def test_a_job_name_that_is_a_dns_label_is_accepted(name: str):
    job = fiberjob()
    job["metadata"]["name"] = name
    admit(job)
