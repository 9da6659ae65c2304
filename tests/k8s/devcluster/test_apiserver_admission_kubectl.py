"""The real kubectl (oldest and newest here) against the stand-in's PodSecurity and ResourceQuota
admission: `kubectl apply -f` of a pod the namespace refuses prints the server's refusal, a warn-only
namespace's warning reaches the user, a bad pod-security label is refused, and `kubectl get quota`
prints the server's columns."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml
from test_apiserver_pod_security import restricted_detail
from test_apiserver_schema_kubectl import VERSIONS, Kubectl, kubectl_path

if TYPE_CHECKING:
    from conftest import ApiServerProcess

PREFIX = "pod-security.kubernetes.io/"
RESTRICTED_DETAIL = restricted_detail("c")


@pytest.fixture(params=VERSIONS)
def kubectl(request: pytest.FixtureRequest, apiserver: ApiServerProcess, tmp_path: Path) -> Kubectl:
    return Kubectl(kubectl_path(request.param), tmp_path / "home", apiserver)


def namespace_for(kubectl: Kubectl, what: str, **labels: str) -> str:
    """A namespace per kubectl version and test, created by that kubectl with pod-security labels."""
    name = f"admission-{what}-" + kubectl.binary.name.split(".", 1)[1].replace(".", "-")
    kubectl.ok("apply", "-f", "-", stdin=yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": name, "labels": {PREFIX + mode: level for mode, level in labels.items()}}}))
    return name


def pod(name: str, cpu: str = "") -> str:
    resources = {"limits": {"cpu": cpu}} if cpu else {}
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                           "spec": {"containers": [{"name": "c", "image": "busybox", "resources": resources}]}})


def test_apply_of_a_violating_pod_prints_the_servers_refusal(kubectl: Kubectl) -> None:
    ns = namespace_for(kubectl, "enforce", enforce="restricted")
    result = kubectl.run("apply", "-n", ns, "-f", "-", stdin=pod("web"))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == ('Error from server (Forbidden): error when creating "STDIN": pods "web" is forbidden: '
                             f'violates PodSecurity "restricted:latest": {RESTRICTED_DETAIL}\n')


def test_apply_in_a_warn_only_namespace_prints_the_warning(kubectl: Kubectl) -> None:
    ns = namespace_for(kubectl, "warn", warn="restricted")
    result = kubectl.run("apply", "-n", ns, "-f", "-", stdin=pod("web"))
    assert result.returncode == 0 and result.stdout == "pod/web created\n"
    assert result.stderr == f'Warning: would violate PodSecurity "restricted:latest": {RESTRICTED_DETAIL}\n'


def test_a_label_that_names_no_level_is_refused(kubectl: Kubectl) -> None:
    ns = namespace_for(kubectl, "label")
    result = kubectl.run("label", "ns", ns, PREFIX + "enforce=strict")
    assert result.returncode == 1
    assert result.stderr == (f'The Namespace "{ns}" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: '
                             'Invalid value: "strict": must be one of privileged, baseline, restricted\n')


def test_quota_refusals_and_get_quota(kubectl: Kubectl) -> None:
    ns = namespace_for(kubectl, "quota")
    kubectl.ok("apply", "-n", ns, "-f", "-", stdin=yaml.safe_dump({
        "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "compute"},
        "spec": {"hard": {"requests.cpu": "1", "limits.cpu": "2", "pods": "5"}}}))
    result = kubectl.run("apply", "-n", ns, "-f", "-", stdin=pod("bare"))
    assert result.stderr == ('Error from server (Forbidden): error when creating "STDIN": pods "bare" is forbidden: '
                             "failed quota: compute: must specify limits.cpu for: c; requests.cpu for: c\n")
    assert kubectl.ok("apply", "-n", ns, "-f", "-", stdin=pod("small", "500m")) == "pod/small created\n"
    result = kubectl.run("apply", "-n", ns, "-f", "-", stdin=pod("big", "900m"))
    assert result.stderr == ('Error from server (Forbidden): error when creating "STDIN": pods "big" is forbidden: '
                             "exceeded quota: compute, requested: requests.cpu=900m, used: requests.cpu=500m, "
                             "limited: requests.cpu=1\n")
    assert quota_table(kubectl, ns, "pods: 1/5, requests.cpu: 500m/1") == [
        ["NAME", "AGE", "REQUEST", "LIMIT"], ["compute", "AGE", "pods: 1/5, requests.cpu: 500m/1", "limits.cpu: 500m/2"]]


def quota_table(kubectl: Kubectl, ns: str, request: str) -> list[list[str]]:
    """`kubectl get quota` once the quota controller has counted the pod (its REQUEST cell reads
    `request`), split into cells, ages shown as AGE."""
    deadline = time.monotonic() + 10
    while True:
        rows = [re.split(r"\s{2,}", line.strip()) for line in kubectl.ok("get", "quota", "-n", ns).splitlines()]
        if len(rows) == 2 and rows[1][2:3] == [request] or time.monotonic() > deadline:
            return [rows[0]] + [[row[0], "AGE", *row[2:]] for row in rows[1:]]
        time.sleep(0.1)
