"""Container probes (startup, liveness, readiness) as the kubelet runs them: exec inside the
container's namespaces, tcpSocket and httpGet against the pod's IP from the node; initial delay,
period, timeout and success/failure thresholds."""

from __future__ import annotations

import http.client
import socket
import ssl
import subprocess
import time
from dataclasses import dataclass
from typing import Any

from .kube import JSON

PROBE_KINDS = ("startupProbe", "livenessProbe", "readinessProbe")


@dataclass
class ProbeState:
    """One probe of one run of a container: when it runs next and its verdict so far."""

    kind: str                 # startupProbe, livenessProbe, readinessProbe
    spec: JSON
    next_at: float
    successes: int = 0
    failures: int = 0
    passed: bool = False      # the verdict after the thresholds
    last_message: str = ""

    @property
    def period_s(self) -> float:
        return float(self.spec.get("periodSeconds", 10))

    def record(self, ok: bool, message: str) -> bool:
        """Counts a result; True when the verdict changed."""
        self.next_at = time.monotonic() + self.period_s
        self.last_message = message
        before = self.passed
        if ok:
            self.successes, self.failures = self.successes + 1, 0
            if self.successes >= int(self.spec.get("successThreshold", 1)):
                self.passed = True
        else:
            self.failures, self.successes = self.failures + 1, 0
            if self.failures >= int(self.spec.get("failureThreshold", 3)):
                self.passed = False
        return before != self.passed

    @property
    def failed_out(self) -> bool:
        """Failed failureThreshold times in a row (liveness/startup: the container is killed)."""
        return self.failures >= int(self.spec.get("failureThreshold", 3))


def probes_of(container: JSON) -> dict[str, ProbeState]:
    """Fresh probe states for a new run of the container (liveness starts as passing)."""
    now = time.monotonic()
    states = {}
    for kind in PROBE_KINDS:
        spec = container.get(kind)
        if spec:
            states[kind] = ProbeState(kind, spec, now + float(spec.get("initialDelaySeconds", 0)),
                                      passed=kind == "livenessProbe")
    return states


def resolve_port(port: Any, container: JSON) -> int:
    """A probe's port: a number, or the name of one of the container's ports."""
    if isinstance(port, int) or (isinstance(port, str) and port.isdigit()):
        return int(port)
    for declared in container.get("ports") or []:
        if declared.get("name") == port:
            return int(declared["containerPort"])
    raise ValueError(f"port {port!r} is neither a number nor a named port of the container")


def run_probe(spec: JSON, container: JSON, pod_ip: str, pid: int, netns: str | None, private_mounts: bool,
              env: dict[str, str], exec_prefix: list[str] | None = None) -> tuple[bool, str]:
    """Runs one probe; (success, message). An exec probe of a real container runs through
    `exec_prefix` (podman exec NAME), with the container's own user and environment."""
    timeout_s = float(spec.get("timeoutSeconds", 1))
    try:
        if "exec" in spec and exec_prefix is not None:
            return _run_exec([*exec_prefix, *(spec["exec"].get("command") or [])], None, timeout_s) \
                if spec["exec"].get("command") else (False, "exec probe without a command")
        if "exec" in spec:
            return _exec_probe(spec["exec"].get("command") or [], pid, netns, private_mounts, env, timeout_s)
        if "tcpSocket" in spec:
            host = spec["tcpSocket"].get("host") or pod_ip
            port = resolve_port(spec["tcpSocket"].get("port"), container)
            with socket.create_connection((host, port), timeout=timeout_s):
                return True, ""
        if "httpGet" in spec:
            return _http_probe(spec["httpGet"], container, pod_ip, timeout_s)
    except (OSError, ValueError, http.client.HTTPException) as error:
        return False, str(error)
    return False, f"unsupported probe handler {sorted(set(spec) & {'grpc'}) or sorted(spec)}"


def _exec_probe(command: list[str], pid: int, netns: str | None, private_mounts: bool, env: dict[str, str],
                timeout_s: float) -> tuple[bool, str]:
    if not command:
        return False, "exec probe without a command"
    namespaces = ["--mount", "--uts"] if private_mounts else []
    if netns:
        namespaces.append("--net")
    argv = ["nsenter", "--target", str(pid), *namespaces, "--", *command] if namespaces else command
    return _run_exec(argv, env, timeout_s)


def _run_exec(argv: list[str], env: dict[str, str] | None, timeout_s: float) -> tuple[bool, str]:
    try:
        result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout_s,
                                stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return False, f"command timed out after {timeout_s:g}s"
    output = (result.stdout + result.stderr).strip()
    return result.returncode == 0, output[-300:]


def _http_probe(get: JSON, container: JSON, pod_ip: str, timeout_s: float) -> tuple[bool, str]:
    host = get.get("host") or pod_ip
    port = resolve_port(get.get("port"), container)
    if get.get("scheme", "HTTP").upper() == "HTTPS":
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE      # the kubelet does not verify probe certificates
        connection: http.client.HTTPConnection = http.client.HTTPSConnection(host, port, timeout=timeout_s,
                                                                              context=context)
    else:
        connection = http.client.HTTPConnection(host, port, timeout=timeout_s)
    headers = {"User-Agent": "kube-probe/1.33", "Accept": "*/*"}
    headers.update({h["name"]: h["value"] for h in get.get("httpHeaders") or []})
    try:
        connection.request("GET", get.get("path", "/"), headers=headers)
        status = connection.getresponse().status
    finally:
        connection.close()
    if 200 <= status < 400:
        return True, ""
    return False, f"HTTP probe failed with statuscode: {status}"
