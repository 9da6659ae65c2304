"""One run of one container: a local process in its own process group (and, where the machine
allows, in the pod's network namespace and a private mount and UTS namespace), its output to the
container's log file, its end reported as a Kubernetes `terminated` state."""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable

from .node_termination import FILE_POLICY, termination_message

TERMINAL_DRAIN_S = 5.0
EXEC_SHIM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node_exec.py")


def now_rfc3339() -> str:
    """The time as Kubernetes writes it: second precision, UTC, `Z`."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _has_exited(pid: int) -> bool:
    """True when every thread of `pid` has exited (a zombie waiting to be reaped, or gone). A
    zombie whose other threads still run ("Zl") keeps its descriptors, sockets included."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True  # gone
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/stat", encoding="utf-8", errors="replace") as handle:
                stat = handle.read()
        except OSError:
            continue
        if stat[stat.rfind(")") + 2:][:1] not in ("Z", "X"):
            return False
    return True


def session_members(session: int) -> list[int]:
    """The processes of session `session` (from /proc: the session id is the 6th field of stat)."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as handle:
                stat = handle.read()
        except OSError:
            continue  # it ended meanwhile
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 3 and fields[3] == str(session):
            members.append(int(entry))
    return members


@dataclass
class LaunchSpec:
    """Everything needed to start a container's process."""

    command: list[str]
    env: dict[str, str]
    working_dir: str
    hostname: str
    mounts: list[dict[str, Any]]      # [{source, target, readOnly, optional}]
    scratch_dir: str                  # the run's private files (exec spec, overlay layers)
    log_path: str
    netns: str | None                 # None: the host's network
    private_mounts: bool              # False: no mount/UTS namespace (the machine refuses them)
    pid_file: str                     # holds the process group id while it runs (read by `down`)
    tty: bool = False                 # the container asks for a terminal (`tty: true`)
    termination_file: str = ""        # host side of the container's terminationMessagePath
    termination_policy: str = FILE_POLICY


@dataclass
class ContainerProcess:
    """A started container process; `on_exit` is called from a waiter thread when it ends."""

    spec: LaunchSpec
    on_exit: Callable[["ContainerProcess"], None]
    started_at: str = ""
    finished_at: str = ""
    returncode: int | None = None
    termination_message: str = ""     # read once the process has ended
    process: subprocess.Popen[bytes] | None = None
    terminal_copier: threading.Thread | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> None:
        """Starts the process (raises OSError when even the wrappers cannot be started)."""
        os.makedirs(self.spec.scratch_dir, exist_ok=True)
        os.makedirs(os.path.dirname(self.spec.log_path), exist_ok=True)
        start_error_file = os.path.join(self.spec.scratch_dir, "start-error")
        if os.path.exists(start_error_file):
            os.unlink(start_error_file)
        spec_file = os.path.join(self.spec.scratch_dir, "exec.json")
        with open(spec_file, "w", encoding="utf-8") as handle:
            json.dump({"command": self.spec.command, "env": self.spec.env,
                       "workingDir": self.spec.working_dir,
                       "hostname": self.spec.hostname if self.spec.private_mounts else "",
                       "mounts": self.spec.mounts if self.spec.private_mounts else [],
                       "scratch": self.spec.scratch_dir, "startErrorFile": start_error_file}, handle)
        argv = [sys.executable, "-I", EXEC_SHIM, spec_file]
        if self.spec.private_mounts:
            argv = ["unshare", "--mount", "--uts", "--propagation", "private", *argv]
        if self.spec.netns:
            argv = ["ip", "netns", "exec", self.spec.netns, *argv]
        if self.spec.tty:
            self._start_on_terminal(argv)
        else:
            with open(self.spec.log_path, "ab") as log:
                self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                                start_new_session=True, close_fds=True, cwd="/")
        self.started_at = now_rfc3339()
        with open(self.spec.pid_file, "w", encoding="utf-8") as handle:
            handle.write(str(self.process.pid))
        threading.Thread(target=self._wait, name=f"wait-{self.process.pid}", daemon=True).start()

    def _start_on_terminal(self, argv: list[str]) -> None:
        """A pseudo-terminal as stdin, stdout and stderr (so the program line-buffers its output, as
        under a runtime's `tty: true`); a thread copies what it writes to the log."""
        primary, secondary = pty.openpty()
        try:
            self.process = subprocess.Popen(argv, stdin=secondary, stdout=secondary, stderr=secondary,
                                            start_new_session=True, close_fds=True, cwd="/")
        except OSError:
            os.close(primary)
            raise
        finally:
            os.close(secondary)
        self.terminal_copier = threading.Thread(target=self._copy_terminal, args=(primary,), daemon=True)
        self.terminal_copier.start()

    def _copy_terminal(self, primary: int) -> None:
        with open(self.spec.log_path, "ab", buffering=0) as log:
            while True:
                try:
                    chunk = os.read(primary, 65536)
                except OSError:        # EIO: every holder of the terminal has closed it
                    break
                if not chunk:
                    break
                log.write(chunk)
        os.close(primary)

    def _wait(self) -> None:
        assert self.process is not None
        returncode = self.process.wait()
        # The container ends with its main process: whatever it left in its group goes too.
        self.signal_group(signal.SIGKILL)
        if self.terminal_copier is not None:
            self.terminal_copier.join(TERMINAL_DRAIN_S)   # all its output logged before its end is told
        try:
            os.unlink(self.spec.pid_file)
        except FileNotFoundError:
            pass
        exit_code = 128 - returncode if returncode < 0 else returncode
        message = termination_message(self.spec.termination_file, self.spec.termination_policy, exit_code,
                                      self.spec.log_path)
        with self.lock:
            self.returncode = returncode
            self.termination_message = message
            self.finished_at = now_rfc3339()
        self.on_exit(self)

    @property
    def running(self) -> bool:
        with self.lock:
            return self.process is not None and self.returncode is None

    def signal_group(self, signal_number: int) -> None:
        """Signals the container's process group. SIGKILL also reaches every other process of its
        session, as a kubelet's kill reaches every process of the container: Open MPI 4.1's mpirun
        puts its ranks in process groups of their own, which a group kill would leave running
        (holding their sockets) until they notice their daemon is gone."""
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal_number)
        except (ProcessLookupError, PermissionError):
            pass
        if signal_number == signal.SIGKILL:
            for pid in session_members(self.process.pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    def exec_prefix(self) -> list[str] | None:
        """How a probe or hook runs a command in a real container; None: a host process, entered
        with nsenter."""
        return None

    def wait_for_session(self, timeout_s: float) -> None:
        """Waits until no process of the container's session is left (a killed process takes a
        moment to die, and its sockets close only then: the sandbox and its network go after)."""
        if self.process is None:
            return
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            alive = [pid for pid in session_members(self.process.pid) if not _has_exited(pid)]
            if not alive:
                return
            time.sleep(0.01)

    def start_error(self) -> str:
        """The message of a command that could not be started, or empty."""
        if not self.spec.scratch_dir:
            return ""
        path = os.path.join(self.spec.scratch_dir, "start-error")
        try:
            with open(path, encoding="utf-8") as handle:
                return handle.read().strip()
        except FileNotFoundError:
            return ""

    def terminated_state(self) -> dict[str, Any]:
        """The Kubernetes `terminated` state of an ended run."""
        with self.lock:
            returncode = self.returncode if self.returncode is not None else -signal.SIGKILL
            message = self.termination_message
        state: dict[str, Any] = {"startedAt": self.started_at, "finishedAt": self.finished_at}
        if message:
            state["message"] = message
        if returncode < 0:
            state.update(exitCode=128 - returncode, signal=-returncode, reason="Error")
            return state
        start_error = self.start_error() if returncode == 128 else ""
        if start_error:
            state.update(exitCode=128, reason="StartError", message=start_error)
        else:
            state.update(exitCode=returncode, reason="Completed" if returncode == 0 else "Error")
        return state
