"""``fibermpi.Group``: processes that run one function together over a real MPI communicator.

The port path for mpi4py programs written for ``mpirun -n N``: their body runs in each member
with ``fibermpi.group_comm()`` where it used ``MPI.COMM_WORLD``::

    import fibermpi

    def train(steps):
        comm = fibermpi.group_comm()        # was: from mpi4py import MPI; comm = MPI.COMM_WORLD
        ...                                 # comm.Allreduce, comm.bcast, comm.send: unchanged

    if __name__ == "__main__":
        with fibermpi.Group(4, train, args=(1000,), max_restarts=2) as group:
            pass
        print(group.exitcodes)              # [0, 0, 0, 0]

A member that dies, exits non-zero or raises ends its group's attempt: the others are stopped
wherever they are (in a collective with the dead member too), and while ``max_restarts`` remain
the whole group runs again in fresh processes with the same arguments.
"""

from __future__ import annotations

import itertools
import signal
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from fibermpi import _core, _runtime, _task
from fibermpi.errors import UsageError
from fibermpi.process import exit_code_of

__all__ = ["Group", "group_comm", "group_rank", "group_size", "group_restarts"]

_counter = itertools.count(1)
_started: "weakref.WeakSet[Group]" = weakref.WeakSet()


class Group:
    """``size`` member processes running ``target(*args, **kwargs)`` together; inside each,
    :func:`group_comm` is an :class:`mpi4py.MPI.Intracomm` over all of them and
    :func:`group_rank`, :func:`group_size`, :func:`group_restarts` say who it is.

    Members are placed as :class:`fibermpi.Process` es are: idle ranks of the launcher's world
    first (``fibermpi run``, ``mpirun``, Slurm), then spawned processes, or worker pods in a
    FiberJob; members in different MPI worlds are joined into one communicator. A member runs
    nothing else while its group lives. A Group may be made in the master or in any worker (a
    population member training with its own group).

    A member that is killed, exits non-zero or raises ends the attempt: the others are stopped
    (exit code ``-15``) and :meth:`join` returns; with ``max_restarts`` the whole group starts
    again (a program resumes from its own checkpoint; :func:`group_restarts` tells the attempt).

    ``with Group(...) as group:`` starts it, and at the block's end waits for it (terminates it
    first when the block raised). A program waits at its end for the groups still running, as
    for its non-daemonic Processes (Ctrl-C there terminates them); dropping the last reference
    to a started group waits for its end too.
    """

    def __init__(self, size: int, target: Callable, args: Iterable = (),
                 kwargs: Mapping | None = None, *, max_restarts: int = 0):
        if isinstance(size, bool) or not isinstance(size, int):
            raise TypeError(f"Group: size must be an int, got {type(size).__name__}")
        if size < 1:
            raise UsageError(f"Group: size must be at least 1, got {size}")
        if isinstance(max_restarts, bool) or not isinstance(max_restarts, int):
            raise TypeError(f"Group: max_restarts must be an int, got {type(max_restarts).__name__}")
        if max_restarts < 0:
            raise UsageError(f"Group: max_restarts cannot be negative, got {max_restarts}")
        if not callable(target):
            raise TypeError(f"Group: target must be callable, got {type(target).__name__}")
        self._size = size
        self._max_restarts = max_restarts
        self._target = target
        self._args = tuple(args)
        self._kwargs = dict(kwargs or {})
        self._name = f"Group-{next(_counter)}"
        self._handle: Any = None

    def start(self) -> None:
        """Starts the members; returns at once (placement happens in the background).
        :class:`fibermpi.UsageError` when called twice."""
        if self._handle is not None:
            raise UsageError(f"{self._name} was started before")
        _runtime.ensure_started()
        member = (self._target, self._args, self._kwargs, self._name)
        payload, produces = _task.payload_and_producers((_task.GROUP, member),
                                                         f"the target of {self._name}")
        handle = _core.Group(self._size, self._max_restarts, payload, produces)
        handle.start()
        self._handle = handle
        _started.add(self)

    def _started(self, what: str) -> Any:
        if self._handle is None:
            raise UsageError(f"can only {what} a started group ({self._name})")
        return self._handle

    def join(self, timeout: float | None = None) -> None:
        """Waits until an attempt ends with every member exiting 0, or a failed attempt has no
        restart left, or the group was terminated; at most ``timeout`` seconds. Raises
        :class:`fibermpi.SpawnError` when the last attempt's members could not be started."""
        self._started("join").join(timeout)

    def is_alive(self) -> bool:
        """True from :meth:`start` until :meth:`join` would return at once."""
        if self._handle is None:
            return False
        try:
            return not self._handle.join(0.0)
        except Exception:  # it ended without starting: join() raises why
            return False

    def terminate(self) -> None:
        """Stops every member now (exit code ``-15``); no restart follows. Nothing happens
        before start or after the end."""
        if self._handle is not None:
            self._handle.terminate()

    @property
    def size(self) -> int:
        """Members per attempt."""
        return self._size

    @property
    def name(self) -> str:
        return self._name

    @property
    def restarts(self) -> int:
        """How many times the group was started again after a failed attempt."""
        return 0 if self._handle is None else self._handle.restarts()

    @property
    def exitcodes(self) -> list[int | None]:
        """One per member of the last attempt, by group rank, as :attr:`Process.exitcode`:
        None while it runs (or before start, or for a member that never started), 0 after a
        normal return, 1 after an uncaught exception, ``n`` after ``sys.exit(n)``, ``-N`` when
        signal N ended it (``-9`` for a SIGKILL); ``-15`` for a member stopped because another
        failed or by :meth:`terminate` (or 1, where Open MPI's fault tolerance reported the
        dead member to a collective first)."""
        codes = [] if self._handle is None else self._handle.exitcodes()
        return list(codes) if codes else [None] * self._size

    def __enter__(self) -> Group:
        if self._handle is None:
            self.start()
        return self

    def __exit__(self, kind: Any, value: Any, trace: Any) -> None:
        if kind is not None:
            self.terminate()
        try:
            self.join()
        except BaseException:
            self.terminate()  # Ctrl-C in the wait: the group ends with the block
            if kind is None:
                raise
            # Otherwise the block's own exception goes on.

    def __reduce__(self) -> Any:
        raise TypeError(f"{self._name}: a Group cannot be pickled; pass what its members need "
                        "(queues, a Manager's proxies) instead")

    def __repr__(self) -> str:
        try:
            alive = self.is_alive()
        except Exception:  # it could not start: join raises why
            alive = False
        if self._handle is None:
            status = "initial"
        elif alive:
            status = "started"
        else:
            status = "stopped exitcodes=[" + ", ".join(_code_name(c) for c in self.exitcodes) + "]"
        return f"<Group name={self._name!r} size={self._size} {status}>"


def _code_name(code: int | None) -> str:
    if code is not None and code < 0 and -code in signal.valid_signals():
        return signal.Signals(-code).name
    return str(code)


def join_at_exit() -> None:
    """The master's end: waits for the groups still running; Ctrl-C terminates them."""
    running = [group for group in list(_started) if group.is_alive()]
    try:
        for group in running:
            try:
                group.join()
            except Exception:  # it could not start: nothing to wait for
                pass
    except KeyboardInterrupt:
        for group in running:
            group.terminate()
        for group in running:
            try:
                group.join(10)
            except Exception:
                pass


# ---------------------------------------------------------------- inside a member

class _Membership:
    def __init__(self, name: str) -> None:
        self.rank, self.size, self.restarts, self.handle = _core.group_membership()
        self.name = name
        self.comm: Any = None


_membership: _Membership | None = None


def _member(what: str) -> _Membership:
    if _membership is None:
        raise UsageError(f"fibermpi.{what}() can only be called inside a member of a "
                         "fibermpi.Group")
    return _membership


def group_comm() -> Any:
    """The :class:`mpi4py.MPI.Intracomm` of all members of this member's group, ranked as
    :func:`group_rank` says: what the program used ``MPI.COMM_WORLD`` for. A real MPI
    communicator (collectives, point-to-point, ``Split``...), the same object on each
    call. fibermpi owns it: never ``Free`` it, and never use it after the target returned (the
    communicator ends then). A
    failed MPI call on it ends the member with exit code 1 (and its group stops the others)
    unless the program sets its own error handler (``comm.Set_errhandler(MPI.ERRORS_RETURN)``).
    :class:`fibermpi.UsageError` outside a member."""
    member = _member("group_comm")
    if member.comm is None:
        from mpi4py import MPI
        member.comm = MPI.Intracomm.f2py(member.handle)
    return member.comm


def group_rank() -> int:
    """This member's rank in :func:`group_comm` (0 to :func:`group_size` - 1)."""
    return _member("group_rank").rank


def group_size() -> int:
    """Members of this member's group."""
    return _member("group_size").size


def group_restarts() -> int:
    """How many times this member's group was started again before this attempt (0 on the
    first)."""
    return _member("group_restarts").restarts


def _run_member(member: tuple) -> int:
    """Runs a member's target in this worker; its exit code (multiprocessing's rules)."""
    global _membership
    target, args, kwargs, name = member
    _membership = membership = _Membership(name)
    try:
        return exit_code_of(lambda: target(*args, **kwargs),
                            f"{name} member {membership.rank} of {membership.size}")
    finally:
        _membership = None
        membership.comm = None
