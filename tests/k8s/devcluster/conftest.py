"""Fixtures of the development cluster's tests: an API server stand-in started in a temporary state
folder, and a small HTTP client for it."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import requests

REPO_ROOT = Path(__file__).resolve().parents[3]
START_TIMEOUT_S = 20.0


class ApiServerProcess:
    """A running stand-in: its URL, state folder and a requests session."""

    def __init__(self, process: subprocess.Popen[str], url: str, state_dir: Path):
        self.process = process
        self.url = url
        self.state_dir = state_dir
        self.session = requests.Session()

    def request(self, method: str, path: str, body: Any = None, *, content_type: str = "application/json",
                headers: dict[str, str] | None = None, **kwargs: Any) -> requests.Response:
        sent = dict(headers or {})
        data = None
        if body is not None:
            data = body if isinstance(body, (bytes, str)) else json.dumps(body)
            sent["Content-Type"] = content_type
        kwargs.setdefault("timeout", 10)
        return self.session.request(method, self.url + path, data=data, headers=sent, **kwargs)

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, body: Any, **kwargs: Any) -> requests.Response:
        return self.request("POST", path, body, **kwargs)

    def put(self, path: str, body: Any, **kwargs: Any) -> requests.Response:
        return self.request("PUT", path, body, **kwargs)

    def patch(self, path: str, body: Any, content_type: str = "application/merge-patch+json",
              **kwargs: Any) -> requests.Response:
        return self.request("PATCH", path, body, content_type=content_type, **kwargs)

    def delete(self, path: str, body: Any = None, **kwargs: Any) -> requests.Response:
        return self.request("DELETE", path, body, **kwargs)

    def ok(self, response: requests.Response, *codes: int) -> dict[str, Any]:
        """The JSON body of a response that must have one of `codes` (200/201 by default)."""
        expected = codes or (200, 201)
        assert response.status_code in expected, f"{response.status_code}: {response.text}"
        return response.json()

    def namespace(self, name: str) -> str:
        self.ok(self.post("/api/v1/namespaces", {"metadata": {"name": name}}))
        return name

    def watch(self, path: str, **params: Any) -> Iterator[dict[str, Any]]:
        """The events of a watch, read as they arrive (the caller stops when it has seen enough)."""
        params = {"watch": "true", **params}
        response = self.session.get(self.url + path, params=params, stream=True, timeout=(5, 30))
        assert response.status_code == 200, response.text
        return self._events(response)

    @staticmethod
    def _events(response: requests.Response) -> Iterator[dict[str, Any]]:
        try:
            for line in response.iter_lines():
                if line:
                    yield json.loads(line)
        finally:
            response.close()

    def wait_gone(self, path: str, timeout_s: float = 10.0) -> None:
        """Wait, through a watch on the object's name, until it no longer exists."""
        collection, _, name = path.rpartition("/")
        if self.get(path).status_code == 404:
            return
        listed = self.ok(self.get(collection, params={"fieldSelector": f"metadata.name={name}"}))
        if not listed["items"]:
            return
        for event in self.watch(collection, fieldSelector=f"metadata.name={name}",
                                resourceVersion=listed["metadata"]["resourceVersion"],
                                timeoutSeconds=int(timeout_s)):
            if event["type"] == "DELETED":
                return
        raise AssertionError(f"{path} still exists after {timeout_s} s")

    def stop(self) -> None:
        self.session.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_apiserver(state_dir: Path, *extra: str) -> ApiServerProcess:
    """Start the stand-in (plain HTTP unless `extra` says otherwise) and wait for its listening line."""
    state_dir.mkdir(parents=True, exist_ok=True)
    args = [sys.executable, "-m", "k8s.devcluster.apiserver", "--state-dir", str(state_dir), "--port", "0",
            "--port-file", str(state_dir / "port"), *extra]
    if "--tls-cert" not in extra:
        args.append("--insecure")
    process = subprocess.Popen(args, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=None, text=True,
                               env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert process.stdout is not None
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([process.stdout], [], [], max(left, 0))
        if not ready:
            process.kill()
            raise AssertionError("the API server did not print its listening line in time")
        line = process.stdout.readline()
        if not line:
            raise AssertionError(f"the API server exited with {process.wait()}")
        if line.startswith("listening on "):
            return ApiServerProcess(process, line.split()[-1], state_dir)


@pytest.fixture(scope="module")
def apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServerProcess]:
    server = start_apiserver(tmp_path_factory.mktemp("apiserver"))
    yield server
    server.stop()


@pytest.fixture
def apiserver_with(tmp_path: Path) -> Iterator[Callable[..., ApiServerProcess]]:
    """Start a stand-in with extra command-line options, stopped after the test."""
    started: list[ApiServerProcess] = []

    def start(*extra: str) -> ApiServerProcess:
        server = start_apiserver(tmp_path / f"server{len(started)}", *extra)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.fibermpi.io"},
    "spec": {
        "group": "example.fibermpi.io",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                     "statusReplicasPath": ".status.replicas",
                                                     "labelSelectorPath": ".status.selector"}},
            "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "spec": {"type": "object", "properties": {
                        "replicas": {"type": "integer", "minimum": 0},
                        "size": {"type": "string"}}},
                    "status": {"type": "object", "properties": {
                        "replicas": {"type": "integer"}, "selector": {"type": "string"},
                        "phase": {"type": "string"}}},
                }}},
        }],
    },
}
WIDGETS = "/apis/example.fibermpi.io/v1/namespaces/{ns}/widgets"


def install_widget_crd(server: ApiServerProcess) -> None:
    """Install the Widget CRD once per server."""
    response = server.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", WIDGET_CRD)
    assert response.status_code in (201, 409), response.text
