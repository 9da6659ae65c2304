"""``fibermpi.Process``: :class:`multiprocessing.Process`'s API over fibermpi's processes.

A Process runs in a worker process: an idle rank of the launcher's world, a process of the warm
reserve that has run nothing else, a spawned one (``sys.executable -m fibermpi._worker``), or a
worker pod. Its target, arguments (or, for a subclass overriding :meth:`Process.run`, the object
itself) are pickled when it starts.
"""

from __future__ import annotations

import itertools
import os
import signal
import sys
import threading
import traceback
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from fibermpi import _core, _runtime, _task
from fibermpi._meta import requirements_of

__all__ = ["Process", "current_process", "active_children", "parent_process"]

_counter = itertools.count(1)
_children: "weakref.WeakSet[Process]" = weakref.WeakSet()


class Process:
    """A call of ``target(*args, **kwargs)`` (or of :meth:`run`) in a process of its own, as
    :class:`multiprocessing.Process`: :meth:`start`, :meth:`join`, :meth:`is_alive`,
    :meth:`terminate`, :meth:`kill`, :meth:`close`, :attr:`exitcode`, :attr:`pid`, :attr:`name`,
    :attr:`daemon`, :attr:`authkey`, :attr:`sentinel`.

    Where a worker process is reused (a rank of the launcher's world, a worker pod), a Process
    gets an interpreter that has run no other Process but has imported fibermpi and the
    program's main module: module-level state is as after that import.
    """

    def __init__(self, group: None = None, target: Callable | None = None, name: str | None = None,
                 args: Iterable = (), kwargs: Mapping | None = None, *, daemon: bool | None = None):
        if group is not None:
            raise ValueError("group argument must be None for now")
        self._target = target
        self._args = tuple(args)
        self._kwargs = dict(kwargs or {})
        number = next(_counter)
        self._name = name if name is not None else f"{type(self).__name__}-{number}"
        if not isinstance(self._name, str):
            raise TypeError("name must be a string")
        parent = current_process()
        self._daemon = bool(daemon) if daemon is not None else parent.daemon
        self._authkey = parent.authkey
        self._parent_pid = os.getpid()
        self._parent_name = parent.name
        self._handle: Any = None
        self._closed = False
        self._sentinel: tuple[int, int] | None = None
        self._sentinel_lock = threading.Lock()
        self._pid_here: int | None = None  # set in the process running it

    # ------------------------------------------------------------ what runs

    def run(self) -> None:
        """What the process runs: ``target(*args, **kwargs)``. Subclasses override it."""
        if self._target is not None:
            self._target(*self._args, **self._kwargs)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        for local in ("_handle", "_sentinel", "_sentinel_lock"):
            state.pop(local, None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._handle = None
        self._sentinel = None
        self._sentinel_lock = threading.Lock()

    # ------------------------------------------------------------ control

    def _check_closed(self) -> None:
        if self._closed:
            raise ValueError("process object is closed")

    def start(self) -> None:
        """Starts it; returns at once (placement happens in the background)."""
        self._check_closed()
        if self._handle is not None:
            raise AssertionError("cannot start a process twice")
        if self._parent_pid != os.getpid():
            raise AssertionError("can only start a process object created by current process")
        _runtime.ensure_started()
        payload, produces = _task.payload_and_producers((_task.PROCESS, self),
                                                         f"the process {self._name!r}")
        handle = _core.Process(payload, produces)
        handle.set_name(self._name)
        handle.set_daemon(self._daemon)
        needs = self._requirements()
        if needs:
            handle.set_resources(needs.get("cpu", 0), needs.get("memory", 0) * 2**20,
                                 needs.get("gpu", 0))
        handle.start()
        self._handle = handle
        _children.add(self)

    def _requirements(self) -> dict[str, int]:
        """What :func:`fibermpi.meta` says the target (or an overriding ``run``) needs."""
        if self._target is not None:
            return requirements_of(self._target)
        return requirements_of(type(self).run)

    def join(self, timeout: float | None = None) -> None:
        """Waits until it ends, or ``timeout`` seconds."""
        self._check_closed()
        if self._handle is None:
            raise AssertionError("can only join a started process")
        if self._handle.join(timeout):
            _children.discard(self)

    def is_alive(self) -> bool:
        self._check_closed()
        if self._handle is None:
            return False
        alive = self._handle.is_alive()
        if not alive:
            _children.discard(self)
        return alive

    def terminate(self) -> None:
        """Ends it with SIGTERM (exitcode ``-15``)."""
        self._check_closed()
        if self._handle is not None:
            self._handle.terminate()

    def kill(self) -> None:
        """Ends it with SIGKILL, which it cannot catch (exitcode ``-9``), wherever it runs."""
        self._check_closed()
        if self._handle is not None:
            self._handle.kill()

    def close(self) -> None:
        """Releases what the object holds; ``ValueError`` while it still runs."""
        if self._handle is not None and self._handle.exitcode() is None:
            raise ValueError("Cannot close a process while it is still running. "
                             "You should first call join() or terminate().")
        if self._sentinel is not None:
            for fd in self._sentinel:
                try:
                    os.close(fd)
                except OSError:
                    pass
            self._sentinel = None
        self._handle = None
        self._closed = True
        _children.discard(self)

    # ------------------------------------------------------------ attributes

    @property
    def exitcode(self) -> int | None:
        """None while it runs; 0, the ``sys.exit`` code, 1 after an uncaught exception, or
        ``-N`` when signal N ended it."""
        self._check_closed()
        return None if self._handle is None else self._handle.exitcode()

    @property
    def pid(self) -> int | None:
        """The OS pid of the process running it (on the host it runs on); None before start."""
        if self._pid_here is not None:
            return self._pid_here
        self._check_closed()
        return None if self._handle is None else self._handle.pid()

    ident = pid

    @property
    def name(self) -> str:
        return self._name

    @name.setter
    def name(self, name: str) -> None:
        if not isinstance(name, str):
            raise TypeError("name must be a string")
        self._name = name
        if self._handle is not None:
            self._handle.set_name(name)

    @property
    def daemon(self) -> bool:
        """A daemonic process is terminated when the program ends instead of waited for."""
        return self._daemon

    @daemon.setter
    def daemon(self, daemonic: bool) -> None:
        if self._handle is not None:
            raise AssertionError("process has already started")
        self._daemon = bool(daemonic)

    @property
    def authkey(self) -> bytes:
        return self._authkey

    @authkey.setter
    def authkey(self, key: bytes) -> None:
        self._authkey = bytes(key)

    @property
    def sentinel(self) -> int:
        """A file descriptor that becomes readable when the process has ended (for
        :func:`select.select` and :func:`multiprocessing.connection.wait`)."""
        self._check_closed()
        if self._handle is None:
            raise ValueError("process not started")
        with self._sentinel_lock:
            if self._sentinel is None:
                readable, writable = os.pipe()
                self._sentinel = (readable, writable)
                handle = self._handle

                def watch() -> None:
                    handle.join(None)
                    try:
                        os.close(writable)  # end of file: readable for select
                    except OSError:
                        pass
                threading.Thread(target=watch, name=f"fibermpi sentinel of {self._name}",
                                 daemon=True).start()
            return self._sentinel[0]

    def __repr__(self) -> str:
        if self._closed:
            status = "closed"
        elif self._handle is None:
            status = "initial"
        else:
            code = self._handle.exitcode()
            status = "started" if code is None else (
                f"stopped[{signal.Signals(-code).name}]" if code < 0 and -code in signal.valid_signals()
                else f"stopped exitcode={code}")
        daemon = " daemon" if self._daemon else ""
        return f"<{type(self).__name__} name={self._name!r} {status}{daemon}>"


class _CurrentProcess:
    """The process this code runs in, where it is not a :class:`Process` of this program: the
    master (``MainProcess``) or a pool's worker."""

    def __init__(self, name: str):
        self.name = name
        self.daemon = False
        self.authkey = os.urandom(32)
        self._parent_pid: int | None = None

    @property
    def pid(self) -> int:
        return os.getpid()

    ident = pid

    def __repr__(self) -> str:
        return f"<_CurrentProcess name={self.name!r} pid={self.pid}>"


_current: Any = None


def current_process() -> Any:
    """The :class:`Process` this code runs in: ``MainProcess`` in the master, the Process
    object in a Process's worker, the worker itself in a pool's worker."""
    global _current
    if _current is None:
        if _runtime.role() == "worker":
            name, _ = _core.current_process()
            _current = _CurrentProcess(name)
        else:
            _current = _CurrentProcess("MainProcess")
    return _current


def parent_process() -> Any:
    """None in the master; in a Process, a stand-in naming the process that started it."""
    process = current_process()
    if isinstance(process, Process):
        parent = _CurrentProcess(process._parent_name)
        parent._parent_pid = process._parent_pid
        return parent
    return None


class _Listed:
    """What :func:`active_children` lists for a worker of a live pool or a member of a running
    group: its ``name``, ``pid`` (on the host it runs on), ``daemon`` (True) and ``is_alive()``;
    it cannot be started, joined or terminated alone (terminate its pool or group)."""

    daemon = True
    exitcode = None

    def __init__(self, owner: Any, pid: int, name: str) -> None:
        # Weakly: listing a pool's workers must not keep a pool the program dropped alive.
        self._owner, self.pid, self.ident, self.name = weakref.ref(owner), pid, pid, name

    def is_alive(self) -> bool:
        owner = self._owner()
        return owner is not None and self.pid in _running_pids(owner)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r} pid={self.pid} daemon>"


class _PoolWorker(_Listed):
    pass


class _GroupMember(_Listed):
    pass


def _running_pids(owner: Any) -> list[int]:
    """The pids of a pool's workers, or of a group's running members; none once it ended."""
    from fibermpi.group import Group
    try:
        if isinstance(owner, Group):
            return owner._handle.member_pids() if owner._handle is not None else []
        if getattr(owner, "_state", None) in ("running", "closed"):
            return owner._pool.worker_pids()
    except Exception:  # ended meanwhile
        pass
    return []


# Pool workers and group members already listed, by (owner, pid): the same object each time, as
# multiprocessing's.
_listed: dict[tuple[int, int], _Listed] = {}
_listed_guard = threading.Lock()
_pool_worker_count = itertools.count(1)
_group_member_count = itertools.count(1)


def active_children() -> list[Any]:
    """The Processes this program started that are still running, the workers of its live pools
    and the members of its running groups (never the runtime's idle reserve)."""
    from fibermpi import group
    children: list[Any] = [child for child in list(_children) if child.is_alive()]
    owners = [(pool, _PoolWorker, _pool_worker_count) for pool in _runtime.live_pools()]
    owners += [(started, _GroupMember, _group_member_count) for started in list(group._started)]
    live: set[tuple[int, int]] = set()
    with _listed_guard:
        for owner, kind, count in owners:
            for pid in dict.fromkeys(_running_pids(owner)):  # other hosts' may share a pid
                key = (id(owner), pid)
                listed = _listed.get(key)
                if listed is None or listed._owner() is not owner:
                    listed = _listed[key] = kind(owner, pid, f"{kind.__name__[1:]}-{next(count)}")
                live.add(key)
                children.append(listed)
        for key in set(_listed) - live:
            del _listed[key]
    return children


def _run_here(process: Process) -> int:
    """Runs ``process`` in this worker; its exit code (multiprocessing's rules)."""
    global _current
    previous = _current
    _current = process
    process._pid_here = os.getpid()
    try:
        return exit_code_of(process.run, f"Process {process.name}")
    finally:
        _current = previous


def exit_code_of(run: Callable[[], Any], label: str) -> int:
    """Calls ``run()``; the exit code of a process that ran it alone, by multiprocessing's rules:
    0, the ``sys.exit`` code (a message given instead goes to stderr: 1), 1 after an uncaught
    exception, whose traceback goes to stderr under ``label``."""
    try:
        run()
        return 0
    except SystemExit as exit_request:
        code = exit_request.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        sys.stderr.write(str(code) + "\n")
        return 1
    except BaseException:
        sys.stderr.write(f"{label}:\n")
        traceback.print_exc()
        return 1
