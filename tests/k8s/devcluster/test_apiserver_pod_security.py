"""PodSecurity admission in the API server stand-in: a namespace's pod-security.kubernetes.io labels
enforce (403), warn (a Warning header) and are validated (422), with kube-apiserver's wording, check
order and details. Each check's text on the evaluation function, the codes and headers through a
running stand-in."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
import requests

from conftest import ApiServerProcess
from k8s.devcluster.apiserver.pod_security import forbidden_detail, namespace_policy, violations

PREFIX = "pod-security.kubernetes.io/"
RESTRICTED_SPEC: dict[str, Any] = {
    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    "containers": [{"name": "c", "image": "busybox", "securityContext": {
        "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}],
}


def restricted_detail(container: str) -> str:
    """What restricted finds wrong with a pod of one container that sets no securityContext."""
    return (f'allowPrivilegeEscalation != false (container "{container}" must set '
            'securityContext.allowPrivilegeEscalation=false), '
            f'unrestricted capabilities (container "{container}" must set securityContext.capabilities.drop=["ALL"]), '
            f'runAsNonRoot != true (pod or container "{container}" must set securityContext.runAsNonRoot=true), '
            f'seccompProfile (pod or container "{container}" must set securityContext.seccompProfile.type to '
            '"RuntimeDefault" or "Localhost")')


DEFAULT_POD_RESTRICTED = restricted_detail("c")


def namespace(apiserver: ApiServerProcess, name: str, **levels: str) -> str:
    """A namespace labelled enforce=..., warn=..., warn_version=... (underscores for dashes)."""
    labels = {PREFIX + mode.replace("_", "-"): value for mode, value in levels.items()}
    apiserver.ok(apiserver.post("/api/v1/namespaces", {"metadata": {"name": name, "labels": labels}}), 201)
    return name


def default_spec(*names: str) -> dict[str, Any]:
    return {"containers": [{"name": n, "image": "busybox"} for n in names or ("c",)]}


def create_pod(apiserver: ApiServerProcess, ns: str, name: str, spec: dict[str, Any],
               **params: str) -> requests.Response:
    return apiserver.post(f"/api/v1/namespaces/{ns}/pods", {"metadata": {"name": name}, "spec": spec},
                          params=params)


def warnings(response: requests.Response) -> list[str]:
    """The texts of the response's Warning headers (299 - "text", quotes escaped)."""
    found = []
    for header in response.raw.headers.getlist("Warning"):
        match = re.fullmatch(r'299 - "((?:[^"\\]|\\.)*)"', header)
        assert match, header
        found.append(re.sub(r"\\(.)", r"\1", match.group(1)))
    return found


def refused(response: requests.Response, message: str, name: str) -> None:
    assert response.status_code == 403, response.text
    assert response.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                               "message": message, "reason": "Forbidden",
                               "details": {"name": name, "kind": "pods"}, "code": 403}
    assert warnings(response) == []


# ---- the checks, one by one -----------------------------------------------------------------------

def with_context(**context: Any) -> dict[str, Any]:
    return {"containers": [{"name": "c", "image": "busybox", "securityContext": context}]}


BASELINE_CASES = [
    ("host namespaces", {"hostIPC": True, "hostNetwork": True, **default_spec()},
     "host namespaces (hostNetwork=true, hostIPC=true)"),
    ("privileged init container", {"initContainers": [{"name": "init", "image": "b", "securityContext": {
        "privileged": True}}], **with_context(privileged=True)},
     'privileged (containers "init", "c" must not set securityContext.privileged=true)'),
    ("capabilities", with_context(capabilities={"add": ["SYS_TIME", "NET_RAW", "CHOWN", "NET_RAW"]}),
     'non-default capabilities (container "c" must not include "NET_RAW", "SYS_TIME" in '
     "securityContext.capabilities.add)"),
    ("hostPath volumes", {"volumes": [{"name": "a", "hostPath": {"path": "/"}}, {"name": "b", "emptyDir": {}},
                                      {"name": "d", "hostPath": {"path": "/d"}}], **default_spec()},
     'hostPath volumes (volumes "a", "d")'),
    ("host ports sort as text", {"containers": [{"name": "c", "image": "b", "ports": [
        {"containerPort": 1, "hostPort": 8080}, {"containerPort": 2, "hostPort": 10000}, {"containerPort": 3}]}]},
     'hostPort (container "c" uses hostPorts 10000, 8080)'),
    ("procMount", with_context(procMount="Unmasked"),
     'procMount (container "c" must not set securityContext.procMount to "Unmasked")'),
    ("SELinux", {"securityContext": {"seLinuxOptions": {"user": "u", "role": "r"}},
                 **with_context(seLinuxOptions={"type": "spc_t"})},
     'seLinuxOptions (pod and container "c" set forbidden securityContext.seLinuxOptions: type "spc_t"; '
     "user may not be set; role may not be set)"),
    ("seccomp", {"securityContext": {"seccompProfile": {"type": "Unconfined"}}, **with_context(
        seccompProfile={"type": "Unconfined"})},
     'seccompProfile (pod and container "c" must not set securityContext.seccompProfile.type to "Unconfined")'),
    ("sysctls", {"securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"},
                                                 {"name": "net.ipv4.tcp_keepalive_time", "value": "60"},
                                                 {"name": "net.core.somaxconn", "value": "1"}]}, **default_spec()},
     "forbidden sysctls (kernel.msgmax, net.core.somaxconn)"),
    ("hostProcess", {"securityContext": {"windowsOptions": {"hostProcess": True}},
                     **with_context(windowsOptions={"hostProcess": True})},
     'hostProcess (pod and container "c" must not set securityContext.windowsOptions.hostProcess=true)'),
    ("AppArmor field", {"securityContext": {"appArmorProfile": {"type": "Unconfined"}},
                        **with_context(appArmorProfile={"type": "Localhost", "localhostProfile": "p"})},
     'forbidden AppArmor profile (pod must not set AppArmor profile type to "Unconfined")'),
]


@pytest.mark.parametrize("spec,expected", [(c[1], c[2]) for c in BASELINE_CASES], ids=[c[0] for c in BASELINE_CASES])
def test_each_baseline_check_names_what_it_refuses(spec: dict[str, Any], expected: str) -> None:
    assert forbidden_detail(violations("baseline", {}, spec)) == expected
    assert violations("privileged", {}, spec) == []


def test_app_armor_annotations_are_checked_with_the_fields() -> None:
    annotations = {"container.apparmor.security.beta.kubernetes.io/a": "unconfined",
                   "container.apparmor.security.beta.kubernetes.io/b": "localhost/mine",
                   "container.apparmor.security.beta.kubernetes.io/c": "runtime/default"}
    spec = {"containers": [{"name": "a", "image": "b"}, {"name": "b", "image": "b"},
                           {"name": "d", "image": "b", "securityContext": {"appArmorProfile": {"type": "Unconfined"}}}]}
    assert violations("baseline", {"annotations": annotations}, spec) == [(
        "forbidden AppArmor profiles",
        'container "d" and annotation must not set AppArmor profile type to "Unconfined", '
        '"container.apparmor.security.beta.kubernetes.io/a="unconfined""')]


def test_defaults_and_allowed_values_pass_baseline() -> None:
    spec = {"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}, "sysctls": [
                {"name": "net.ipv4.ip_local_port_range", "value": "1024 65000"}],
                "seLinuxOptions": {"type": "container_t"}, "appArmorProfile": {"type": "RuntimeDefault"}},
            "volumes": [{"name": "v", "emptyDir": {}}],
            "containers": [{"name": "c", "image": "b", "ports": [{"containerPort": 80, "hostPort": 0}],
                            "securityContext": {"capabilities": {"add": ["NET_BIND_SERVICE", "CHOWN"]},
                                                "procMount": "Default", "privileged": False}}]}
    assert violations("baseline", {}, spec) == []


RESTRICTED_CASES = [
    ("the default pod, two containers", default_spec("a", "b"),
     'allowPrivilegeEscalation != false (containers "a", "b" must set securityContext.allowPrivilegeEscalation='
     'false), unrestricted capabilities (containers "a", "b" must set securityContext.capabilities.drop=["ALL"]), '
     'runAsNonRoot != true (pod or containers "a", "b" must set securityContext.runAsNonRoot=true), seccompProfile '
     '(pod or containers "a", "b" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'),
    ("capabilities added", {**RESTRICTED_SPEC, "containers": [{"name": "c", "image": "b", "securityContext": {
        "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE",
                                                                                     "SYS_ADMIN", "CHOWN"]}}}]},
     'unrestricted capabilities (container "c" must not include "CHOWN", "SYS_ADMIN" in '
     "securityContext.capabilities.add)"),
    ("volume types", {**RESTRICTED_SPEC, "volumes": [
        {"name": "h", "hostPath": {"path": "/"}}, {"name": "ok", "projected": {"sources": []}},
        {"name": "n", "nfs": {"server": "s", "path": "/"}}, {"name": "i", "image": {"reference": "r"}}]},
     'restricted volume types (volumes "h", "n", "i" use restricted volume types "hostPath", "nfs", "unknown")'),
    ("runAsNonRoot false and runAsUser 0", {
        "securityContext": {"runAsNonRoot": False, "runAsUser": 0, "seccompProfile": {"type": "Localhost",
                                                                                       "localhostProfile": "p"}},
        "containers": [{"name": "c", "image": "b", "securityContext": {
            "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": False,
            "runAsUser": 0}}]},
     'runAsNonRoot != true (pod and container "c" must not set securityContext.runAsNonRoot=false), '
     'runAsUser=0 (pod and container "c" must not set runAsUser=0)'),
    ("container seccomp", {**RESTRICTED_SPEC, "securityContext": {"runAsNonRoot": True}},
     'seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
     '"Localhost")'),
]


@pytest.mark.parametrize("spec,expected", [(c[1], c[2]) for c in RESTRICTED_CASES],
                         ids=[c[0] for c in RESTRICTED_CASES])
def test_each_restricted_check_names_what_it_refuses(spec: dict[str, Any], expected: str) -> None:
    assert forbidden_detail(violations("restricted", {}, spec)) == expected


def test_restricted_accepts_its_own_pod_and_exempts_windows_from_linux_only_checks() -> None:
    assert violations("restricted", {}, RESTRICTED_SPEC) == []
    container_level = {"containers": [{"name": "c", "image": "b", "securityContext": {
        "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]},
        "runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}}}]}
    assert violations("restricted", {}, container_level) == []
    windows = {"os": {"name": "windows"}, "securityContext": {"runAsNonRoot": True}, **default_spec()}
    assert violations("restricted", {}, windows) == []


def test_labels_choose_the_policy_and_bad_ones_fail_closed_for_enforce_only() -> None:
    policy, errors = namespace_policy({PREFIX + "enforce": "baseline", PREFIX + "warn": "restricted",
                                       PREFIX + "warn-version": "v1.29"})
    assert (str(policy.enforce), str(policy.audit), str(policy.warn)) == \
        ("baseline:latest", "privileged:latest", "restricted:v1.29") and errors == []
    policy, errors = namespace_policy({PREFIX + "enforce": "strict", PREFIX + "warn": "loud",
                                       PREFIX + "audit-version": "1.30"})
    assert (policy.enforce.level, policy.warn.level) == ("restricted", "privileged")
    assert [e["message"] for e in errors] == [
        'Invalid value: "strict": must be one of privileged, baseline, restricted',
        'Invalid value: "1.30": must be "latest" or "v1.x"',
        'Invalid value: "loud": must be one of privileged, baseline, restricted']


# ---- through the API server ------------------------------------------------------------------------

def test_privileged_and_unlabelled_namespaces_admit_anything(apiserver: ApiServerProcess) -> None:
    host = {"hostNetwork": True, **with_context(privileged=True)}
    for ns in (apiserver.namespace("psa-open"), namespace(apiserver, "psa-privileged", enforce="privileged")):
        response = create_pod(apiserver, ns, "host", host)
        assert response.status_code == 201, response.text
        assert warnings(response) == []


def test_baseline_admits_the_default_pod_and_names_every_broken_check(apiserver: ApiServerProcess) -> None:
    ns = namespace(apiserver, "psa-baseline", enforce="baseline")
    assert create_pod(apiserver, ns, "plain", default_spec()).status_code == 201
    spec = {"hostNetwork": True, "hostPID": True,
            "securityContext": {"appArmorProfile": {"type": "Unconfined"}, "seccompProfile": {"type": "Unconfined"},
                                "sysctls": [{"name": "kernel.msgmax", "value": "65536"}]},
            "volumes": [{"name": "host", "hostPath": {"path": "/"}}],
            "containers": [{"name": "c", "image": "busybox", "ports": [{"containerPort": 8080, "hostPort": 8080}],
                            "volumeMounts": [{"name": "host", "mountPath": "/host"}],
                            "securityContext": {"privileged": True, "seLinuxOptions": {"type": "spc_t"},
                                                "capabilities": {"add": ["NET_ADMIN", "CHOWN"]}}}]}
    refused(create_pod(apiserver, ns, "everything", spec),
            'pods "everything" is forbidden: violates PodSecurity "baseline:latest": forbidden AppArmor profiles '
            '(pod and annotation must not set AppArmor profile type to "Unconfined", '
            '"container.apparmor.security.beta.kubernetes.io/c="unconfined""), non-default capabilities '
            '(container "c" must not include "NET_ADMIN" in securityContext.capabilities.add), host namespaces '
            '(hostNetwork=true, hostPID=true), hostPath volumes (volume "host"), hostPort (container "c" uses '
            'hostPort 8080), privileged (container "c" must not set securityContext.privileged=true), '
            'seLinuxOptions (container "c" set forbidden securityContext.seLinuxOptions: type "spc_t"), '
            'seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined"), forbidden '
            "sysctls (kernel.msgmax)", "everything")
    assert apiserver.get(f"/api/v1/namespaces/{ns}/pods/everything").status_code == 404


def test_restricted_admits_a_hardened_pod_and_refuses_the_default_one(apiserver: ApiServerProcess) -> None:
    ns = namespace(apiserver, "psa-restricted", enforce="restricted")
    response = create_pod(apiserver, ns, "hardened", RESTRICTED_SPEC)
    assert response.status_code == 201, response.text
    assert warnings(response) == []
    refused(create_pod(apiserver, ns, "x", default_spec()),
            f'pods "x" is forbidden: violates PodSecurity "restricted:latest": {DEFAULT_POD_RESTRICTED}', "x")
    refused(create_pod(apiserver, ns, "dry", default_spec(), dryRun="All"),
            f'pods "dry" is forbidden: violates PodSecurity "restricted:latest": {DEFAULT_POD_RESTRICTED}', "dry")


def test_restricted_replaces_the_baseline_checks_it_tightens(apiserver: ApiServerProcess) -> None:
    ns = namespace(apiserver, "psa-restricted-own", enforce="restricted")
    spec = {"securityContext": {"seccompProfile": {"type": "Unconfined"}},
            "volumes": [{"name": "host", "hostPath": {"path": "/tmp"}}, {"name": "data", "nfs": {
                "server": "nfs", "path": "/"}}, {"name": "cfg", "configMap": {"name": "x"}}],
            "initContainers": [{"name": "setup", "image": "busybox"}],
            "containers": [{"name": "main", "image": "busybox", "securityContext": {
                "allowPrivilegeEscalation": True, "runAsNonRoot": False, "runAsUser": 0,
                "capabilities": {"add": ["SYS_ADMIN"]}}}]}
    refused(create_pod(apiserver, ns, "loose", spec),
            'pods "loose" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false '
            '(containers "setup", "main" must set securityContext.allowPrivilegeEscalation=false), unrestricted '
            'capabilities (containers "setup", "main" must set securityContext.capabilities.drop=["ALL"]; container '
            '"main" must not include "SYS_ADMIN" in securityContext.capabilities.add), restricted volume types '
            '(volumes "host", "data" use restricted volume types "hostPath", "nfs"), runAsNonRoot != true '
            '(container "main" must not set securityContext.runAsNonRoot=false), runAsUser=0 (container "main" must '
            'not set runAsUser=0), seccompProfile (pod must not set securityContext.seccompProfile.type to '
            '"Unconfined")', "loose")


def test_generated_names_are_the_ones_refused(apiserver: ApiServerProcess) -> None:
    ns = namespace(apiserver, "psa-generated", enforce="restricted")
    response = apiserver.post(f"/api/v1/namespaces/{ns}/pods", {"metadata": {"generateName": "worker-"},
                                                                 "spec": default_spec()})
    assert response.status_code == 403
    name = response.json()["details"]["name"]
    assert re.fullmatch(r"worker-[a-z0-9]{5}", name)
    assert response.json()["message"] == \
        f'pods "{name}" is forbidden: violates PodSecurity "restricted:latest": {DEFAULT_POD_RESTRICTED}'


def test_warn_only_namespaces_admit_with_the_warning_header(apiserver: ApiServerProcess) -> None:
    ns = namespace(apiserver, "psa-warn", warn="restricted", audit="baseline")
    response = create_pod(apiserver, ns, "x", default_spec())
    assert response.status_code == 201, response.text
    assert warnings(response) == [f'would violate PodSecurity "restricted:latest": {DEFAULT_POD_RESTRICTED}']
    assert warnings(create_pod(apiserver, ns, "hardened", RESTRICTED_SPEC)) == []


def test_enforce_and_warn_levels_apart_and_their_versions(apiserver: ApiServerProcess) -> None:
    ns = namespace(apiserver, "psa-mixed", enforce="baseline", enforce_version="v1.22", warn="restricted",
                   warn_version="v1.29")
    response = create_pod(apiserver, ns, "x", default_spec())
    assert response.status_code == 201
    assert warnings(response) == [f'would violate PodSecurity "restricted:v1.29": {DEFAULT_POD_RESTRICTED}']
    refused(create_pod(apiserver, ns, "host", {"hostPID": True, **default_spec()}),
            'pods "host" is forbidden: violates PodSecurity "baseline:v1.22": host namespaces (hostPID=true)', "host")


def test_namespace_labels_must_name_a_level_and_a_version(apiserver: ApiServerProcess) -> None:
    response = apiserver.post("/api/v1/namespaces", {"metadata": {"name": "psa-typo", "labels": {
        PREFIX + "enforce": "strict"}}})
    assert response.status_code == 422
    body = response.json()
    assert body["message"] == ('Namespace "psa-typo" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: '
                               'Invalid value: "strict": must be one of privileged, baseline, restricted')
    assert body["reason"] == "Invalid" and body["details"]["kind"] == "Namespace"
    assert body["details"]["causes"] == [{"reason": "FieldValueInvalid", "field":
                                          "metadata.labels[pod-security.kubernetes.io/enforce]", "message":
                                          'Invalid value: "strict": must be one of privileged, baseline, restricted'}]
    ns = apiserver.namespace("psa-relabel")
    response = apiserver.patch(f"/api/v1/namespaces/{ns}", {"metadata": {"labels": {
        PREFIX + "warn": "baseline", PREFIX + "warn-version": "1.30", PREFIX + "audit": "Restricted"}}})
    assert response.status_code == 422
    assert response.json()["message"] == (
        'Namespace "psa-relabel" is invalid: [metadata.labels[pod-security.kubernetes.io/audit]: Invalid value: '
        '"Restricted": must be one of privileged, baseline, restricted, metadata.labels['
        'pod-security.kubernetes.io/warn-version]: Invalid value: "1.30": must be "latest" or "v1.x"]')
    labelled = apiserver.ok(apiserver.patch(f"/api/v1/namespaces/{ns}", {"metadata": {"labels": {
        PREFIX + "warn": "baseline", PREFIX + "warn-version": "v1.30"}}}))
    assert labelled["metadata"]["labels"][PREFIX + "warn-version"] == "v1.30"


def test_tightening_warns_about_existing_pods_and_their_updates_are_checked(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("psa-tighten")
    for name in ("b", "a"):
        assert create_pod(apiserver, ns, name, default_spec()).status_code == 201
    assert create_pod(apiserver, ns, "host", {"hostNetwork": True, **with_context(privileged=True)}).status_code == 201
    response = apiserver.patch(f"/api/v1/namespaces/{ns}", {"metadata": {"labels": {PREFIX + "enforce": "baseline"}}})
    assert response.status_code == 200
    assert warnings(response) == [
        'existing pods in namespace "psa-tighten" violate the new PodSecurity enforce level "baseline:latest"',
        "host: host namespaces, privileged"]
    response = apiserver.patch(f"/api/v1/namespaces/{ns}", {"metadata": {"labels": {PREFIX + "enforce": "restricted"}}})
    assert warnings(response) == [
        'existing pods in namespace "psa-tighten" violate the new PodSecurity enforce level "restricted:latest"',
        "a (and 1 other pod): allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, "
        "seccompProfile",
        "host: host namespaces, privileged, allowPrivilegeEscalation != false, unrestricted capabilities, "
        "runAsNonRoot != true, seccompProfile"]
    relaxed = apiserver.patch(f"/api/v1/namespaces/{ns}", {"metadata": {"labels": {PREFIX + "enforce": "baseline"}}})
    assert relaxed.status_code == 200 and warnings(relaxed) == []
    apiserver.ok(apiserver.patch(f"/api/v1/namespaces/{ns}", {"metadata": {"labels": {PREFIX + "enforce": "restricted"}}}))
    # the pods stay; an update that changes an image is checked, one that changes labels is not
    assert apiserver.ok(apiserver.patch(f"/api/v1/namespaces/{ns}/pods/a", {"metadata": {"labels": {"x": "y"}}}))
    pod = apiserver.ok(apiserver.get(f"/api/v1/namespaces/{ns}/pods/a"))
    changed = copy.deepcopy(pod)
    changed["spec"]["containers"][0]["image"] = "busybox:1.36"
    refused(apiserver.put(f"/api/v1/namespaces/{ns}/pods/a", changed),
            f'pods "a" is forbidden: violates PodSecurity "restricted:latest": {DEFAULT_POD_RESTRICTED}', "a")
    status = dict(pod, status={"phase": "Running"})
    assert apiserver.put(f"/api/v1/namespaces/{ns}/pods/a/status", status).status_code == 200
