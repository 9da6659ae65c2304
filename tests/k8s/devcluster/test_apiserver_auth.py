"""Authentication over TLS: static tokens, client certificates from the client CA, TokenRequest
tokens of service accounts; 401 without or with bad credentials, 403 in the real server's words."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Iterator

import pytest
import requests

from conftest import ApiServerProcess, start_apiserver

ADMIN_TOKEN = "admin-token-for-tests"


def openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=30)


def make_pki(folder: Path) -> None:
    """A CA, a server certificate for 127.0.0.1 and two client certificates, made by openssl."""
    folder.mkdir(parents=True, exist_ok=True)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=test-ca",
            "-keyout", str(folder / "ca.key"), "-out", str(folder / "ca.crt"))
    (folder / "server.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name, subject, extension in (("server", "/CN=apiserver", "server.ext"),
                                     ("admin", "/O=system:masters/CN=alice", None),
                                     ("bob", "/O=developers/CN=bob", None)):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout", str(folder / f"{name}.key"),
                "-out", str(folder / f"{name}.csr"))
        signing = ["x509", "-req", "-in", str(folder / f"{name}.csr"), "-CA", str(folder / "ca.crt"),
                   "-CAkey", str(folder / "ca.key"), "-CAcreateserial", "-days", "2",
                   "-out", str(folder / f"{name}.crt")]
        if extension:
            signing += ["-extfile", str(folder / extension)]
        openssl(*signing)


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ApiServerProcess, Path]]:
    pki = tmp_path_factory.mktemp("pki")
    make_pki(pki)
    tokens = pki / "tokens.csv"
    tokens.write_text(f'{ADMIN_TOKEN},admin,admin-uid,"system:masters"\nviewer-token,viewer,viewer-uid\n')
    server = start_apiserver(tmp_path_factory.mktemp("apiserver-tls"), "--tls-cert", str(pki / "server.crt"),
                             "--tls-key", str(pki / "server.key"), "--client-ca", str(pki / "ca.crt"),
                             "--token-file", str(tokens))
    server.session.verify = str(pki / "ca.crt")
    yield server, pki
    server.stop()


def call(server: ApiServerProcess, pki: Path, method: str, path: str, *, token: str | None = None,
         cert: str | None = None, json_body: dict | None = None) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    cert_pair = (str(pki / f"{cert}.crt"), str(pki / f"{cert}.key")) if cert else None
    return requests.request(method, server.url + path, headers=headers, cert=cert_pair, json=json_body,
                            verify=str(pki / "ca.crt"), timeout=10)


def test_listens_on_https(tls_server: tuple[ApiServerProcess, Path]) -> None:
    server, _ = tls_server
    assert server.url.startswith("https://127.0.0.1:")


def test_no_or_bad_credentials_get_401(tls_server: tuple[ApiServerProcess, Path]) -> None:
    server, pki = tls_server
    for token in (None, "wrong"):
        response = call(server, pki, "GET", "/api/v1/namespaces/default/pods", token=token)
        assert response.status_code == 401
        assert response.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                   "message": "Unauthorized", "reason": "Unauthorized", "code": 401}
    assert call(server, pki, "GET", "/healthz").status_code == 200


def test_static_token_and_client_certificate_authenticate(tls_server: tuple[ApiServerProcess, Path]) -> None:
    server, pki = tls_server
    assert call(server, pki, "GET", "/api/v1/namespaces/default/pods", token=ADMIN_TOKEN).status_code == 200
    assert call(server, pki, "GET", "/api/v1/namespaces/default/pods", cert="admin").status_code == 200
    denied = call(server, pki, "GET", "/api/v1/namespaces/default/pods", cert="bob")
    assert denied.status_code == 403 and denied.json()["reason"] == "Forbidden"
    assert denied.json()["message"].startswith('pods is forbidden: User "bob" cannot list resource "pods" in API '
                                               'group "" in the namespace "default"')
    viewer = call(server, pki, "GET", "/api/v1/namespaces/default/configmaps/x", token="viewer-token")
    assert viewer.status_code == 403
    assert viewer.json()["message"].startswith('configmaps "x" is forbidden: User "viewer" cannot get resource '
                                               '"configmaps" in API group "" in the namespace "default"')
    assert call(server, pki, "GET", "/version", cert="bob").status_code == 200


def test_token_request_authenticates_as_the_service_account(tls_server: tuple[ApiServerProcess, Path]) -> None:
    server, pki = tls_server
    admin = {"token": ADMIN_TOKEN}
    assert call(server, pki, "POST", "/api/v1/namespaces/default/serviceaccounts",
                json_body={"metadata": {"name": "robot"}}, **admin).status_code == 201
    short = call(server, pki, "POST", "/api/v1/namespaces/default/serviceaccounts/robot/token",
                 json_body={"spec": {"expirationSeconds": 60}}, **admin)
    assert short.status_code == 422
    issued = call(server, pki, "POST", "/api/v1/namespaces/default/serviceaccounts/robot/token",
                  json_body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                             "spec": {"expirationSeconds": 3600}}, **admin)
    assert issued.status_code == 201 and issued.json()["kind"] == "TokenRequest"
    token = issued.json()["status"]["token"]
    assert issued.json()["status"]["expirationTimestamp"].endswith("Z")
    denied = call(server, pki, "GET", "/api/v1/namespaces/default/pods", token=token)
    assert denied.status_code == 403
    assert 'User "system:serviceaccount:default:robot" cannot list resource "pods"' in denied.json()["message"]
    role = {"metadata": {"name": "pod-reader"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]}
    binding = {"metadata": {"name": "robot-reads-pods"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
               "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}]}
    rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"
    assert call(server, pki, "POST", f"{rbac}/roles", json_body=role, **admin).status_code == 201
    assert call(server, pki, "POST", f"{rbac}/rolebindings", json_body=binding, **admin).status_code == 201
    assert call(server, pki, "GET", "/api/v1/namespaces/default/pods", token=token).status_code == 200
    assert call(server, pki, "DELETE", "/api/v1/namespaces/default/serviceaccounts/robot", **admin).status_code == 200
    assert call(server, pki, "GET", "/api/v1/namespaces/default/pods", token=token).status_code == 401
