"""When the engine starts in a Python process, and how it ends.

- A worker (a process fibermpi spawned, a rank of a launcher's world, a job joining a master,
  a pod of a FiberJob) starts the engine when it imports fibermpi; a worker never comes back
  from that: it serves tasks until the master lets it go, then exits.
- A program started on its own (``python prog.py``) starts it at its first use of a Pool,
  Process or the like, or at ``fibermpi.init()``.
- The master ends it from :mod:`atexit`, before the interpreter finalizes: live pools are
  terminated, running children joined (daemonic ones terminated). MPI is finalized by the C exit
  handlers after that, where the exit status is known (a finalize that hangs after a process of
  the run was killed then ends the process with that status).
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import weakref
from typing import Any

from fibermpi import _core
from fibermpi.errors import UsageError

_lock = threading.RLock()
_role: str | None = None  # None before the start, then "master" or "worker"
_pools: "weakref.WeakSet[Any]" = weakref.WeakSet()

# The variables by which a process knows it was started by a launcher (Open MPI, PMIx, MPICH and
# Slurm's PMI), joins a master, or runs in a FiberJob's pod.
_LAUNCHED = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK")


def _worker_module_args() -> list[str]:
    return ["-m", "fibermpi._worker"]


def started_by_launcher() -> bool:
    return any(os.environ.get(name) for name in _LAUNCHED)


def _starts_at_import() -> bool:
    # Under a launcher every rank starts at once: MPI_Init is collective over the world, so the
    # ranks that become workers would otherwise wait for rank 0's first use of fibermpi.
    return bool(os.environ.get("FIBER_WORKER") or os.environ.get("FIBER_CONNECT")
                or os.environ.get("FIBER_K8S_ROLE") or started_by_launcher())


def _start(settings: dict[str, Any] | None) -> None:
    global _role
    text = json.dumps(settings) if settings else ""
    argv = list(getattr(sys, "orig_argv", sys.argv))[1:]
    # In a worker, _core.start never returns: mark the role first.
    _role = "worker"
    try:
        _core.start(sys.executable, argv, _worker_module_args(), text)
    except BaseException:
        _role = None
        raise
    _role = "master"
    # Under mpirun the master's __main__ is imported again in the workers as __mp_main__;
    # results of its classes come back under that name.
    sys.modules.setdefault("__mp_main__", sys.modules["__main__"])
    atexit.register(_at_exit)


def start_if_worker() -> None:
    """At import: a worker starts serving here, a master under a launcher starts the engine."""
    with _lock:
        if _role is None and _starts_at_import():
            _start(None)
        elif _role is None:
            # The master starts later; mpi4py, imported meanwhile, may start MPI first.
            _core.prepare_environment()


def ensure_started(starts_processes: bool = True) -> None:
    """The engine runs in this process (the master starts it at its first use). A Pool or
    Process (``starts_processes``) made while a worker imports the program's main module again
    is a script without the ``__main__`` guard: RuntimeError instead of recursing."""
    from fibermpi import _task
    if starts_processes and _task.loading_main:
        raise RuntimeError(
            "a Pool, Process or other fibermpi object was made while a worker was importing the "
            "program's main module: the program makes it at module level, so every worker would "
            "make one too. Put that code under\n\n    if __name__ == '__main__':\n        ...\n")
    if _role is not None:
        return
    with _lock:
        if _role is None:
            _start(None)


def init(**settings: Any) -> None:
    """Starts the engine with ``settings`` (fiber.yaml's keys; ``spawn`` a dict). Optional: the
    engine otherwise starts at the first use. A second call, or a call after the first use,
    raises :class:`fibermpi.UsageError`."""
    with _lock:
        if _role is not None:
            raise UsageError("fibermpi.init(): the runtime has already started in this process "
                             "(call init() before the first Pool, Process, Queue or Manager)")
        _start(settings)


def role() -> str | None:
    return _role


def track_pool(pool: Any) -> None:
    _pools.add(pool)


def live_pools() -> list[Any]:
    """The pools of this process that are running or closed (not yet terminated or joined)."""
    return [pool for pool in list(_pools) if getattr(pool, "_state", None) in ("running", "closed")]


def _at_exit() -> None:
    from fibermpi import group
    try:
        try:
            group.join_at_exit()
        except BaseException:  # a second Ctrl-C: the runtime's shutdown below still runs
            pass
        for pool in list(_pools):
            try:
                pool._end_at_exit()
            except BaseException:
                pass
    finally:
        # MPI_Finalize waits for the C exit handlers, which know the exit status: a finalize
        # that hangs (after a process of the run was killed) then ends the process with it.
        _core.shutdown_before_exit()
