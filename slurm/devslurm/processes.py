"""The processes of one development Slurm, found through /proc.

A daemon is known by its pid and its start time (what the record keeps), so a pid reused after a
crash is never taken for it. Every daemon is started with DEVSLURM_DIR=DIR in its environment, and
slurmd hands its environment to each slurmstepd it starts: the steps of a Slurm whose slurmd is
gone are found by that mark. A job's processes are the steps' descendants, or (when they left their
step's tree) processes whose environment names this Slurm's slurm.conf and a job id."""

from __future__ import annotations

import dataclasses
import os
import signal
import time
from typing import Callable

MARK = "DEVSLURM_DIR"


@dataclasses.dataclass(frozen=True)
class ProcessId:
    """A process as it was started: a pid alone may name another process later."""

    pid: int
    start_ticks: int

    @staticmethod
    def of(pid: int) -> ProcessId | None:
        stat = read_stat(pid)
        return ProcessId(pid, int(stat[19])) if stat else None

    def alive(self) -> bool:
        stat = read_stat(self.pid)
        return bool(stat) and stat[0] != "Z" and int(stat[19]) == self.start_ticks

    def exists(self) -> bool:
        """Alive, or ended and not reaped yet (a zombie)."""
        stat = read_stat(self.pid)
        return bool(stat) and int(stat[19]) == self.start_ticks


def read_stat(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command name (state first), or [] when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def read_environment(pid: int) -> dict[str, str]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            entries = handle.read().split(b"\0")
    except OSError:
        return {}
    environment = {}
    for entry in entries:
        name, sep, value = entry.decode(errors="replace").partition("=")
        if sep:
            environment[name] = value
    return environment


def command_name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def all_pids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def own_lineage() -> set[int]:
    """This process and its ancestors: `down` run from inside a job must not end itself."""
    lineage: set[int] = set()
    pid = os.getpid()
    while pid > 1 and pid not in lineage:
        lineage.add(pid)
        stat = read_stat(pid)
        pid = int(stat[1]) if stat else 0
    return lineage


def live(pid: int) -> bool:
    stat = read_stat(pid)
    return bool(stat) and stat[0] != "Z"


def marked(root: str) -> list[int]:
    """Live processes carrying DEVSLURM_DIR=root: the daemons and the slurmstepds they started."""
    return [pid for pid in all_pids() if read_environment(pid).get(MARK) == root and live(pid)]


def descendants(roots: list[int]) -> list[int]:
    """The live descendants of `roots` (not the roots themselves)."""
    children: dict[int, list[int]] = {}
    for pid in all_pids():
        stat = read_stat(pid)
        if stat and stat[0] != "Z":
            children.setdefault(int(stat[1]), []).append(pid)
    found: list[int] = []
    pending = list(roots)
    while pending:
        for child in children.get(pending.pop(), []):
            if child not in found:
                found.append(child)
                pending.append(child)
    return found


def job_processes(slurm_conf: str) -> list[int]:
    """Processes of a job of the Slurm whose configuration is slurm_conf, by their environment."""
    found = []
    for pid in all_pids():
        environment = read_environment(pid)
        if environment.get("SLURM_CONF") == slurm_conf and "SLURM_JOB_ID" in environment and live(pid):
            found.append(pid)
    return found


def wait_while(processes: list[ProcessId], holds: Callable[[ProcessId], bool], timeout_s: float) -> list[ProcessId]:
    """Polls until `holds` is false for every process (they are not this process's children: no
    wait() applies), or timeout_s passed; returns those it still holds for."""
    deadline = time.monotonic() + timeout_s
    left = [process for process in processes if holds(process)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [process for process in left if holds(process)]
    return left


def terminate(processes: list[ProcessId], grace_s: float, kill_wait_s: float = 2.0) -> list[ProcessId]:
    """SIGTERM, then SIGKILL to those alive after grace_s; returns any that outlived the SIGKILL."""
    for signal_number, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, kill_wait_s)):
        processes = [process for process in processes if process.alive()]
        for process in processes:
            try:
                os.kill(process.pid, signal_number)
            except ProcessLookupError:
                pass
        processes = wait_while(processes, ProcessId.alive, wait_s)
    return processes
