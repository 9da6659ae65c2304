"""Pods whose image is in podman's store run as real containers, as a kubelet runs them through
its container runtime: the image's entrypoint, cmd, user, working dir and environment applied the
kubelet's way (a pod's `command` replaces ENTRYPOINT and drops CMD, `args` replaces CMD, the
image's environment then the container's, `workingDir` over WORKDIR), PID 1 in a PID namespace of
its own, in the pod's network namespace, the pod's volumes bind-mounted, and the securityContext
(pod and container level, the container's winning) mapped to podman's flags: runAsUser and
runAsGroup, runAsNonRoot checked against the image's user with the kubelet's error text,
readOnlyRootFilesystem, allowPrivilegeEscalation, capabilities, privileged, seccompProfile.

podman runs with the flags scripts/podman-flags.sh holds (runc, cgroupfs, the sandbox's rlimits),
never pulls (`--pull never`), and passes the container's standard streams through to the
container's log file (`--log-driver passthrough`), so `kubectl logs` reads what it wrote. Every
container is named `fiber-<cluster id>-<pod uid>-<container>-<run>` and labelled with the cluster
id, so that `scripts/dev-cluster down` finds and removes all of them, after a crash too."""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .kube import JSON
from .node_process import ContainerProcess, now_rfc3339
from .node_termination import termination_message

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PODMAN_FLAGS_FILE = os.path.join(REPO_ROOT, "scripts", "podman-flags.sh")
CLUSTER_LABEL = "fibermpi.io/devcluster"
IMAGE_CACHE_S = 5.0
PODMAN_TIMEOUT_S = 60.0
START_TIMEOUT_S = 120.0
REMOVE_ATTEMPTS = 5
IMAGE_ID_SCHEME = "podman://"


def _shell_array(text: str, name: str) -> list[str]:
    match = re.search(rf"^{name}=\((.*?)\)", text, re.MULTILINE | re.DOTALL)
    if not match:
        raise RuntimeError(f"{PODMAN_FLAGS_FILE} defines no {name}=(...)")
    return shlex.split(match.group(1), comments=True)


def podman_flags() -> tuple[list[str], list[str]]:
    """(global flags, rlimit flags of `run`) from scripts/podman-flags.sh, the one place that
    says how podman runs on these machines."""
    with open(PODMAN_FLAGS_FILE, encoding="utf-8") as handle:
        text = handle.read()
    return _shell_array(text, "FIBER_PODMAN_GLOBAL"), _shell_array(text, "FIBER_PODMAN_LIMITS")


def podman_command(*args: str) -> list[str]:
    return ["podman", *podman_flags()[0], *args]


def run_podman(*args: str, timeout_s: float = PODMAN_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    return subprocess.run(podman_command(*args), capture_output=True, text=True, timeout=timeout_s,
                          stdin=subprocess.DEVNULL)


def podman_available() -> bool:
    try:
        return run_podman("version", "--format", "{{.Client.Version}}", timeout_s=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@dataclass(frozen=True)
class PodmanImage:
    """What a container takes from its image (podman image inspect)."""

    reference: str
    image_id: str
    entrypoint: list[str]
    cmd: list[str]
    user: str
    working_dir: str

    @property
    def status_id(self) -> str:
        """The imageID a container status reports."""
        return f"{IMAGE_ID_SCHEME}sha256:{self.image_id}"

    def numeric_user(self) -> tuple[int | None, str]:
        """(uid, username) as the kubelet reads an image's user: a number (or number:group) is a
        uid, a name is a username it cannot check, no user at all is root."""
        user = self.user.split(":", 1)[0]
        if not user:
            return 0, ""
        if user.isdigit():
            return int(user), ""
        return None, user


class PodmanImages:
    """Looks images up in podman's store (never pulling), cached for a few seconds so that many
    pods starting at once do not each ask podman."""

    def __init__(self) -> None:
        self.cache: dict[str, tuple[float, PodmanImage | None]] = {}
        self.lock = threading.Lock()
        self.available: bool | None = None

    def find(self, image: str) -> PodmanImage | None:
        if not image:
            return None
        now = time.monotonic()
        with self.lock:
            cached = self.cache.get(image)
            if cached and now - cached[0] < IMAGE_CACHE_S:
                return cached[1]
            if self.available is None:
                self.available = podman_available()
                if not self.available:
                    logging.getLogger("node").warning("podman does not answer: pods run as host processes")
            if not self.available:
                return None
        found = self._inspect(image)
        with self.lock:
            self.cache[image] = (time.monotonic(), found)
        return found

    @staticmethod
    def _inspect(image: str) -> PodmanImage | None:
        try:
            done = run_podman("image", "inspect", "--format", "json", image)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if done.returncode != 0:
            logging.getLogger("node").debug("image %s: not in podman's store (%s)", image, done.stderr.strip())
            return None
        try:
            record = json.loads(done.stdout)[0]
        except (ValueError, IndexError):
            return None
        config = record.get("Config") or {}
        return PodmanImage(reference=image, image_id=record.get("Id", ""),
                           entrypoint=list(config.get("Entrypoint") or []), cmd=list(config.get("Cmd") or []),
                           user=config.get("User") or "", working_dir=config.get("WorkingDir") or "")


class ContainerConfigError(Exception):
    """The container cannot be created as asked (the kubelet's CreateContainerConfigError)."""


def effective_security(pod: JSON, container: JSON) -> JSON:
    """The container's securityContext over the pod's, as the kubelet determines it."""
    pod_context = pod.get("spec", {}).get("securityContext") or {}
    own = container.get("securityContext") or {}
    merged: JSON = {key: pod_context[key] for key in ("runAsUser", "runAsGroup", "runAsNonRoot",
                                                      "seccompProfile") if key in pod_context}
    merged.update(own)
    return merged


def verify_run_as_non_root(pod: JSON, container: JSON, security: JSON, image: PodmanImage | None) -> None:
    """runAsNonRoot against the user the container would run as, worded as the kubelet words it.
    A host process (no image: `image` None) runs as the node's user, root, whatever runAsUser says."""
    if not security.get("runAsNonRoot"):
        return
    metadata = pod["metadata"]
    who = f'(pod: "{metadata["name"]}_{metadata.get("namespace", "default")}({metadata["uid"]})", ' \
          f'container: {container["name"]})'
    if "runAsUser" in security:
        if int(security["runAsUser"]) == 0:
            raise ContainerConfigError(f"container's runAsUser breaks non-root policy {who}")
        return
    uid, username = image.numeric_user() if image is not None else (os.geteuid(), "")
    if uid is None and username:
        raise ContainerConfigError(f"container has runAsNonRoot and image has non-numeric user ({username}), "
                                   f"cannot verify user is non-root {who}")
    if uid == 0:
        raise ContainerConfigError(f"container has runAsNonRoot and image will run as root {who}")


def container_argv(container: JSON, image: PodmanImage, expand: Any) -> list[str]:
    """What the container runs: `command` replaces the image's ENTRYPOINT and drops its CMD, `args`
    replaces CMD; `$(VAR)` references in both are expanded as the kubelet does."""
    command = [expand(str(part)) for part in container.get("command") or []]
    args = [expand(str(part)) for part in container.get("args") or []]
    if command:
        return command + args
    return image.entrypoint + (args if args else image.cmd)


def user_flag(security: JSON, image: PodmanImage) -> list[str]:
    user = security.get("runAsUser")
    group = security.get("runAsGroup")
    if user is None and group is None:
        return []
    if user is None:
        user = image.user.split(":", 1)[0] or "0"
    return ["--user", f"{user}:{group}" if group is not None else str(user)]


def security_flags(pod: JSON, security: JSON) -> list[str]:
    """podman's flags for a container's effective securityContext. A pod that names no seccomp
    profile is Unconfined, as under a kubelet without seccompDefault."""
    flags: list[str] = []
    if security.get("privileged"):
        flags.append("--privileged")
    if security.get("readOnlyRootFilesystem"):
        flags += ["--read-only", "--read-only-tmpfs=false"]
    if security.get("allowPrivilegeEscalation") is False:
        flags += ["--security-opt", "no-new-privileges"]
    capabilities = security.get("capabilities") or {}
    for name in capabilities.get("drop") or []:
        flags += ["--cap-drop", str(name)]
    for name in capabilities.get("add") or []:
        flags += ["--cap-add", str(name)]
    profile = (security.get("seccompProfile") or {}).get("type", "Unconfined")
    if profile == "Unconfined" and not security.get("privileged"):
        flags += ["--security-opt", "seccomp=unconfined"]
    elif profile == "Localhost":
        raise ContainerConfigError("seccompProfile Localhost is not supported by the development cluster's nodes")
    pod_context = pod.get("spec", {}).get("securityContext") or {}
    groups = [*(pod_context.get("supplementalGroups") or [])]
    if "fsGroup" in pod_context:
        groups.append(pod_context["fsGroup"])
    for group in groups:
        flags += ["--group-add", str(group)]
    for sysctl in pod_context.get("sysctls") or []:
        flags += ["--sysctl", f"{sysctl['name']}={sysctl['value']}"]
    return flags


def mount_flags(mounts: list[dict[str, Any]]) -> list[str]:
    flags = []
    for mount in mounts:
        option = f"type=bind,source={mount['source']},destination={os.path.normpath(mount['target'])}"
        if mount.get("readOnly"):
            option += ",ro=true"
        flags += ["--mount", option]
    return flags


def container_name(cid: str, pod_uid: str, container: str, run: int) -> str:
    return f"fiber-{cid}-{pod_uid.replace('-', '')[:12]}-{container}-{run}"


@dataclass
class ContainerOptions:
    """How one run of a container is created with podman (the rest is in its LaunchSpec)."""

    name: str
    image: PodmanImage
    argv: list[str]
    flags: list[str]                  # user, security, mounts, network, hostname
    cluster_id: str

    def run_argv(self, env: dict[str, str], working_dir: str, tty: bool, pid_file: str) -> list[str]:
        limits = podman_flags()[1]
        argv = podman_command("run", "--name", self.name, "--label", f"{CLUSTER_LABEL}={self.cluster_id}",
                              "--pull", "never", *limits, "--pidfile", pid_file,
                              "--entrypoint", json.dumps(self.argv))
        argv += ["-t", "--log-driver", "none"] if tty else ["--log-driver", "passthrough"]
        if working_dir:
            argv += ["--workdir", working_dir]
        for key, value in env.items():
            argv += ["--env", f"{key}={value}"]
        return argv + self.flags + [self.image.image_id]


@dataclass
class ContainerRun(ContainerProcess):
    """One run of a container under podman. `process` is the attached `podman run`; the
    container's exit code, times and start errors come from podman's record of it, which is
    removed once read."""

    options: ContainerOptions | None = None
    init_pid: int = 0                 # the container's PID 1 as the host sees it
    removed: threading.Event = field(default_factory=threading.Event)
    start_failure: str = ""
    exit_code: int | None = None
    oom_killed: bool = False

    def start(self) -> None:
        """Starts the container and returns once its process runs (as a runtime's StartContainer
        does), or once podman gave up."""
        assert self.options is not None
        os.makedirs(self.spec.scratch_dir, exist_ok=True)
        os.makedirs(os.path.dirname(self.spec.log_path), exist_ok=True)
        init_pid_file = os.path.join(self.spec.scratch_dir, "container.pid")
        if os.path.exists(init_pid_file):
            os.unlink(init_pid_file)
        argv = self.options.run_argv(self.spec.env, self.spec.working_dir, self.spec.tty, init_pid_file)
        with open(self.spec.log_path, "ab") as log:
            self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True, close_fds=True, cwd="/")
        with open(self.spec.pid_file, "w", encoding="utf-8") as handle:
            handle.write(str(self.process.pid))
        self.init_pid = self._wait_until_started(init_pid_file)
        self.started_at = now_rfc3339()
        threading.Thread(target=self._wait, name=f"wait-{self.options.name}", daemon=True).start()

    def _wait_until_started(self, init_pid_file: str) -> int:
        """The container's PID 1 on the host once it has left `runc init` for the container's
        program; 0 when podman ended first (the container could not start, or ended at once)."""
        assert self.process is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while self.process.poll() is None and time.monotonic() < deadline:
            try:
                with open(init_pid_file, encoding="utf-8") as handle:
                    pid = int(handle.read().strip() or 0)
                with open(f"/proc/{pid}/cmdline", "rb") as handle:
                    if pid and not handle.read().startswith(b"runc\0init") and \
                            not os.readlink(f"/proc/{pid}/exe").endswith("/runc"):
                        return pid
            except (OSError, ValueError):
                pass
            time.sleep(0.01)
        return 0

    def _wait(self) -> None:
        assert self.process is not None and self.options is not None
        returncode = self.process.wait()
        state = self._inspect_state()
        remove_containers([self.options.name])
        self.removed.set()
        try:
            os.unlink(self.spec.pid_file)
        except FileNotFoundError:
            pass
        started_at = str(state.get("StartedAt", ""))
        if state:
            started = bool(started_at) and not started_at.startswith("0001-")
        else:  # podman kept no record: its own exit codes 125-127 say it could not start the container
            started = returncode not in (125, 126, 127)
        exit_code = int(state.get("ExitCode", returncode)) if started else 128
        if not started:
            self.start_failure = self._podman_error() or f"podman run exited {returncode} before the container started"
        message = termination_message(self.spec.termination_file, self.spec.termination_policy, exit_code,
                                      self.spec.log_path)
        with self.lock:
            self.exit_code = exit_code
            self.oom_killed = bool(state.get("OOMKilled"))
            self.returncode = exit_code
            self.termination_message = message
            self.finished_at = now_rfc3339()
        self.on_exit(self)

    def _inspect_state(self) -> JSON:
        assert self.options is not None
        try:
            done = run_podman("inspect", "--format", "{{json .State}}", self.options.name)
            return json.loads(done.stdout) if done.returncode == 0 else {}
        except (OSError, subprocess.TimeoutExpired, ValueError):
            return {}

    def _podman_error(self) -> str:
        """podman's own last `Error: ...` line in the log (a container that could not start)."""
        try:
            with open(self.spec.log_path, "rb") as handle:
                handle.seek(max(0, handle.seek(0, os.SEEK_END) - 4096))
                lines = handle.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return ""
        errors = [line[len("Error: "):] for line in lines if line.startswith("Error: ")]
        return errors[-1] if errors else ""

    def signal_group(self, signal_number: int) -> None:
        """Signals the container's PID 1, as runc's kill does (SIGKILL of PID 1 ends every process
        of its PID namespace); podman kill when its PID is not known. A container podman could
        not signal is removed on SIGKILL."""
        if self.process is None or self.options is None or not self.running:
            return
        if self.init_pid:
            try:
                os.kill(self.init_pid, signal_number)
                return
            except ProcessLookupError:
                return
        name = signal.Signals(signal_number).name.removeprefix("SIG")
        try:
            done = run_podman("kill", "--signal", name, self.options.name)
        except (OSError, subprocess.TimeoutExpired):
            done = None
        if (done is None or done.returncode != 0) and signal_number == signal.SIGKILL:
            try:
                run_podman("rm", "-f", "-t", "0", self.options.name)
            except (OSError, subprocess.TimeoutExpired):
                pass

    def wait_for_session(self, timeout_s: float) -> None:
        """Waits until podman has removed the container (its processes are gone then)."""
        self.removed.wait(timeout_s)

    def exec_prefix(self) -> list[str] | None:
        assert self.options is not None
        return podman_command("exec", self.options.name)

    def start_error(self) -> str:
        return self.start_failure

    def terminated_state(self) -> dict[str, Any]:
        with self.lock:
            exit_code = self.exit_code if self.exit_code is not None else 137
            message = self.termination_message
            oom = self.oom_killed
        state: dict[str, Any] = {"startedAt": self.started_at, "finishedAt": self.finished_at}
        if message:
            state["message"] = message
        if self.start_failure:
            state.update(exitCode=128, reason="StartError", message=self.start_failure)
            return state
        reason = "OOMKilled" if oom else ("Completed" if exit_code == 0 else "Error")
        state.update(exitCode=exit_code, reason=reason)
        return state


def cluster_containers(cid: str) -> list[str]:
    """The names of every podman container of cluster `cid` (any state)."""
    try:
        done = run_podman("ps", "-a", "--filter", f"label={CLUSTER_LABEL}={cid}", "--format", "{{.Names}}")
    except (OSError, subprocess.TimeoutExpired):
        return []
    return done.stdout.split() if done.returncode == 0 else []


def remove_cluster_containers(cid: str) -> list[str]:
    """Removes (killing first) every podman container of cluster `cid`; returns their names."""
    names = cluster_containers(cid)
    remove_containers(names, lambda: cluster_containers(cid))
    return names


def remove_containers(names: list[str], remaining: Any = None) -> None:
    """podman rm -f of the named containers until none is left. A container whose processes were
    killed under it can be left "Stopping" by the first removal; the next one finishes it."""
    def left() -> list[str]:
        if remaining is not None:
            return remaining()
        return [name for name in names
                if run_podman("container", "exists", name).returncode == 0]
    for _ in range(REMOVE_ATTEMPTS):
        if not names:
            return
        try:
            run_podman("rm", "-f", "-t", "0", *names, timeout_s=120)
        except (OSError, subprocess.TimeoutExpired):
            pass
        names = left()
