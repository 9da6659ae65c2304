"""The real kubectl (oldest and newest here) against the API server stand-in: discovery, OpenAPI v3,
server-side field validation, the CRD's validation rule and printer columns, as a user sees them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml

if TYPE_CHECKING:
    from conftest import ApiServerProcess

REPO_ROOT = Path(__file__).resolve().parents[3]
CRD_FILE = REPO_ROOT / "k8s/config/crd/bases/fibermpi.io_fiberjobs.yaml"
KUBECTL_DIR = Path("/usr/lib/google-cloud-sdk/bin")
VERSIONS = ("1.27", "1.33")
KUBECTL_TIMEOUT_S = 60


def kubectl_path(version: str) -> Path:
    path = KUBECTL_DIR / f"kubectl.{version}"
    if not path.exists():
        pytest.skip(f"kubectl {version} is not installed at {path}")
    return path


class Kubectl:
    """One kubectl version with its own kubeconfig and discovery cache."""

    def __init__(self, binary: Path, home: Path, server: ApiServerProcess):
        self.binary = binary
        home.mkdir(parents=True, exist_ok=True)
        self.kubeconfig = home / "kubeconfig"
        self.kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "dev", "cluster": {"server": server.url}}],
            "users": [{"name": "admin", "user": {}}],
            "contexts": [{"name": "dev", "context": {"cluster": "dev", "user": "admin"}}],
            "current-context": "dev"}))
        self.env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home),
                    "KUBECONFIG": str(self.kubeconfig)}

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.binary), *args], input=stdin, capture_output=True,
                              text=True, env=self.env, timeout=KUBECTL_TIMEOUT_S, check=False)

    def ok(self, *args: str, stdin: str | None = None) -> str:
        result = self.run(*args, stdin=stdin)
        assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
        return result.stdout


def fiberjob(name: str, namespace: str, **workers: object) -> str:
    return yaml.safe_dump({
        "apiVersion": "fibermpi.io/v1alpha1", "kind": "FiberJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"launcher": {"template": {"spec": {"containers": [
                     {"name": "main", "image": "fibermpi/runtime", "command": ["true"]}]}}},
                 "workers": {"template": {}, **workers}}})


@pytest.fixture(scope="module")
def installed(apiserver: ApiServerProcess, tmp_path_factory: pytest.TempPathFactory
              ) -> ApiServerProcess:
    """The stand-in with the FiberJob CRD applied by the newest kubectl."""
    newest = Kubectl(kubectl_path(VERSIONS[-1]), tmp_path_factory.mktemp("install"), apiserver)
    output = newest.ok("apply", "-f", str(CRD_FILE))
    assert "customresourcedefinition.apiextensions.k8s.io/fiberjobs.fibermpi.io" in output
    return apiserver


@pytest.fixture(params=VERSIONS)
def kubectl(request: pytest.FixtureRequest, installed: ApiServerProcess,
            tmp_path: Path) -> Kubectl:
    return Kubectl(kubectl_path(request.param), tmp_path / "home", installed)


def namespace_for(kubectl: Kubectl, server: ApiServerProcess) -> str:
    name = "kubectl-" + kubectl.binary.name.split(".", 1)[1].replace(".", "-")
    if server.get(f"/api/v1/namespaces/{name}").status_code == 404:
        server.namespace(name)
    return name


def test_min_above_max_is_refused_naming_both_fields(kubectl: Kubectl, installed: ApiServerProcess):
    namespace = namespace_for(kubectl, installed)
    result = kubectl.run("apply", "-f", "-",
                         stdin=fiberjob("too-small", namespace, minReplicas=5, maxReplicas=4))
    assert result.returncode != 0
    assert ('The FiberJob "too-small" is invalid: spec.workers: Invalid value: "object": '
            "spec.workers.minReplicas must be less than or equal to spec.workers.maxReplicas"
            ) in result.stderr
    assert installed.get(f"/apis/fibermpi.io/v1alpha1/namespaces/{namespace}/fiberjobs/"
                         "too-small").status_code == 404


def test_unknown_fields_are_refused_by_server_side_strict_validation(
        kubectl: Kubectl, installed: ApiServerProcess):
    namespace = namespace_for(kubectl, installed)
    result = kubectl.run("apply", "-f", "-",
                         stdin=fiberjob("typo", namespace, maxReplicas=4, minReplica=1))
    assert result.returncode != 0
    assert ('FiberJob in version "v1alpha1" cannot be handled as a FiberJob: strict decoding '
            'error: unknown field "spec.workers.minReplica"') in result.stderr


def test_get_prints_the_printer_columns(kubectl: Kubectl, installed: ApiServerProcess):
    namespace = namespace_for(kubectl, installed)
    output = kubectl.ok("apply", "-f", "-",
                        stdin=fiberjob("shown", namespace, minReplicas=1, maxReplicas=3))
    assert "fiberjob.fibermpi.io/shown" in output
    lines = kubectl.ok("get", "fj", "-n", namespace).splitlines()
    assert lines[0].split() == ["NAME", "PHASE", "DESIRED", "READY", "MIN", "MAX", "AGE"]
    row = lines[1].split()
    assert row[0] == "shown" and row[1:3] == ["1", "3"]  # no status yet: empty cells
    assert row[3][-1] in "smhdy" and row[3][:-1].isdigit()
    path = f"/apis/fibermpi.io/v1alpha1/namespaces/{namespace}/fiberjobs/shown/status"
    installed.ok(installed.patch(path, {"status": {"phase": "Running",
                                                   "workers": {"desired": 2, "ready": 1}}}))
    row = kubectl.ok("get", "fj", "shown", "-n", namespace).splitlines()[1].split()
    assert row[:6] == ["shown", "Running", "2", "1", "1", "3"]


def test_explain_prints_the_workers_fields(kubectl: Kubectl, installed: ApiServerProcess):
    output = kubectl.ok("explain", "fiberjob.spec.workers")
    assert "KIND:       FiberJob" in output and "VERSION:    v1alpha1" in output
    assert "FIELD: workers <Object>" in output
    assert "maxReplicas\t<integer> -required-" in output
    assert "Fewest worker pods the controller keeps." in output
    assert "workersToDelete\t<[]string>" in output
