"""Requests as users type them with the real kubectl (oldest and newest here), which the stand-in must
accept as a real API server does: `kubectl create --raw PATH -f FILE` sends its body in chunks (no
Content-Length), and `kubectl create token NAME` without `--duration` sends a null expirationSeconds,
which the real server defaults to an hour. A malformed or oversized chunked body is refused with
the connection closed, nothing stored."""

from __future__ import annotations

import datetime
import json
import socket
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest
from test_apiserver_schema_kubectl import VERSIONS, Kubectl, kubectl_path

if TYPE_CHECKING:
    from conftest import ApiServerProcess


@pytest.fixture(params=VERSIONS)
def kubectl(request: pytest.FixtureRequest, apiserver: ApiServerProcess, tmp_path: Path) -> Kubectl:
    return Kubectl(kubectl_path(request.param), tmp_path / "home", apiserver)


def suffix(kubectl: Kubectl) -> str:
    return kubectl.binary.name.split(".", 1)[1].replace(".", "-")


def test_create_raw_from_a_file_sends_chunks_and_creates_the_object(kubectl: Kubectl, tmp_path: Path) -> None:
    name = "raw-" + suffix(kubectl)
    manifest = tmp_path / "cm.json"
    manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                                    "data": {"key": "x" * 100_000}}))
    created = json.loads(kubectl.ok("create", "--raw", "/api/v1/namespaces/default/configmaps",
                                    "-f", str(manifest)))
    assert created["metadata"]["name"] == name and created["metadata"]["uid"]
    stored = json.loads(kubectl.ok("get", "configmap", name, "-o", "json"))
    assert stored["data"]["key"] == "x" * 100_000


# kubectl 1.32 and later send the typed `create` commands' bodies as protobuf, which the stand-in
# does not decode yet: those versions are left out here.
@pytest.mark.parametrize("version", ["1.27", "1.31"])
def test_create_token_without_a_duration_gets_an_hour(version: str, apiserver: ApiServerProcess,
                                                      tmp_path: Path) -> None:
    kubectl = Kubectl(kubectl_path(version), tmp_path / "home", apiserver)
    account = "robot-" + suffix(kubectl)
    kubectl.ok("create", "serviceaccount", account)
    token = kubectl.ok("create", "token", account).strip()
    assert token and "\n" not in token
    issued = json.loads(kubectl.ok("create", "token", account, "-o", "json"))
    assert issued["kind"] == "TokenRequest" and issued["spec"]["expirationSeconds"] == 3600
    expires = datetime.datetime.fromisoformat(issued["status"]["expirationTimestamp"].replace("Z", "+00:00"))
    left = (expires - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
    assert 3500 < left <= 3600
    # The duration a user asks for is kept, and one under ten minutes still refused.
    asked = json.loads(kubectl.ok("create", "token", account, "--duration", "2h", "-o", "json"))
    assert asked["spec"]["expirationSeconds"] == 7200
    short = kubectl.run("create", "token", account, "--duration", "5m")
    assert short.returncode == 1 and "may not specify a duration less than 10 minutes" in short.stderr


def raw_request(server: ApiServerProcess, request: bytes) -> tuple[str, bytes]:
    """Sends bytes as they are, then nothing more, and reads the answer until the server closes the
    connection."""
    address = urlsplit(server.url)
    with socket.create_connection((address.hostname, address.port), timeout=30) as connection:
        connection.sendall(request)
        connection.shutdown(socket.SHUT_WR)  # a body cut short ends here
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return head.decode().split("\r\n", 1)[0], body


def chunked_post(path: str, chunks: list[bytes], *, close: bool = True) -> bytes:
    head = (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n" + ("Connection: close\r\n" if close else "") + "\r\n").encode()
    return head + b"".join(chunks)


def test_a_chunked_body_with_extensions_and_trailers_is_read_whole(apiserver: ApiServerProcess) -> None:
    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "chunked"},
                       "data": {"a": "1"}}).encode()
    first, second = body[:10], body[10:]
    status, answer = raw_request(apiserver, chunked_post("/api/v1/namespaces/default/configmaps", [
        f"{len(first):x};ext=1\r\n".encode(), first, b"\r\n",
        f"{len(second):X}\r\n".encode(), second, b"\r\n",
        b"0\r\nX-Trailer: t\r\n\r\n"]))
    assert status == "HTTP/1.1 201 Created", answer
    assert apiserver.request("GET", "/api/v1/namespaces/default/configmaps/chunked").json()["data"] == {"a": "1"}


@pytest.mark.parametrize("chunks,code,message", [
    ([b"zz\r\n{}\r\n0\r\n\r\n"], 400, "malformed chunked encoding: chunk size"),
    ([b"-2\r\n{}\r\n0\r\n\r\n"], 400, "malformed chunked encoding: chunk size"),
    ([b"10\r\n{}\r\n"], 400, "malformed chunked encoding: a chunk ends early"),
    ([b"4000001\r\n"], 413, "Request entity too large: limit is 67108864"),
], ids=["not-hex", "negative", "short-chunk", "too-large"])
def test_a_bad_chunked_body_is_refused_and_nothing_is_stored(apiserver: ApiServerProcess, chunks: list[bytes],
                                                             code: int, message: str) -> None:
    before = apiserver.request("GET", "/api/v1/namespaces/default/configmaps").json()["items"]
    status, answer = raw_request(apiserver, chunked_post("/api/v1/namespaces/default/configmaps", chunks,
                                                         close=False))
    assert status.startswith(f"HTTP/1.1 {code} ")
    refusal = json.loads(answer)
    assert refusal["code"] == code and refusal["message"].startswith(message)
    after = apiserver.request("GET", "/api/v1/namespaces/default/configmaps").json()["items"]
    assert [c["metadata"]["name"] for c in after] == [c["metadata"]["name"] for c in before]


def test_a_misspelt_field_of_a_built_in_kind_is_refused_warned_of_or_dropped(kubectl: Kubectl) -> None:
    """kubectl validates on the server (fieldValidation=Strict by default): the server's decoding
    names the field a Pod does not have; --validate=warn creates the pod without it and warns,
    --validate=false drops it silently, as kube-apiserver does."""
    def pod(name: str) -> str:
        return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                           "spec": {"containers": [{"name": "c", "image": "busybox",
                                                    "imagePullPolicyy": "Always"}]}})
    name = "typo-" + suffix(kubectl)
    strict = kubectl.run("create", "-f", "-", stdin=pod(name))
    assert strict.returncode == 1
    assert ('Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field '
            '"spec.containers[0].imagePullPolicyy"') in strict.stderr
    assert kubectl.run("get", "pod", name).returncode == 1
    warned = kubectl.run("create", "--validate=warn", "-f", "-", stdin=pod(name))
    assert warned.returncode == 0, warned.stderr
    assert 'Warning: unknown field "spec.containers[0].imagePullPolicyy"' in warned.stderr
    stored = json.loads(kubectl.ok("get", "pod", name, "-o", "json"))
    assert "imagePullPolicyy" not in stored["spec"]["containers"][0]
    ignored = kubectl.run("create", "--validate=false", "-f", "-", stdin=pod(name + "-i"))
    assert ignored.returncode == 0 and "Warning" not in ignored.stderr, ignored.stderr
