"""``Lock``, ``RLock``, ``Semaphore``, ``BoundedSemaphore``, ``Condition``, ``Event`` and
``Barrier``: :mod:`multiprocessing`'s synchronization primitives, usable across every process of
the program.

Each one is an object of the master's manager (the one behind fibermpi's C++ ``Manager``): a call
is one request to the master, and a copy of the object in any process — passed to a Process, a
pool task or an initializer, put on a queue, kept in a managed dict — is the same object. Waits
release the GIL and end with ``KeyboardInterrupt`` on Ctrl-C.

What differs from :mod:`multiprocessing`:

- A lock whose holder ends (killed, or returning without ``release``) is released by the master,
  which logs whose it was; the next ``acquire`` succeeds. Semaphores are not given back this way:
  a semaphore is often released by another process than the one that took it.
- A party of a ``Barrier`` that ends while it waits breaks the barrier for the others
  (:class:`threading.BrokenBarrierError`), as a timeout does. The ``action`` runs in the last party
  to arrive, after the others have passed.
- These objects may be pickled anywhere, not only when a process starts.
"""

from __future__ import annotations

import struct
import threading
import time
from typing import Any, Callable

from fibermpi import _core, _runtime

__all__ = ["Lock", "RLock", "Semaphore", "BoundedSemaphore", "Condition", "Event", "Barrier"]

_TYPES = _core.OBJECT_TYPES
_OPS = _core.OBJECT_OPS
_SLICE = b"\x01"  # tells the master a wait goes on after this slice of it
_ALL = 2**63  # notify_all: every ticket
_UNBOUNDED = 2**64 - 1  # a semaphore's bound that is none


def _word(number: int) -> bytes:
    return struct.pack("<Q", number)


def _timeout_of(block: bool, timeout: float | None) -> float | None:
    if not block:
        return 0.0
    if timeout is None:
        return None
    return max(float(timeout), 0.0)


# What this process holds: lock id -> (thread ident, recursion level). The master knows which
# process holds a lock; the thread within it is known only here.
_held: dict[int, tuple[int, int]] = {}
_held_guard = threading.Lock()


def _rebuild(cls: type, object_id: int, state: Any) -> Any:
    instance = cls.__new__(cls)
    instance._ref = _core.ObjectRef(object_id)
    instance._restore(state)
    return instance


class _Shared:
    """An object of the master's manager, by id."""

    _kind = ""

    def _make(self, payload: bytes = b"") -> None:
        _runtime.ensure_started(starts_processes=False)
        self._ref = _core.ObjectRef.create(_TYPES[self._kind], payload)

    def _state(self) -> Any:
        return None

    def _restore(self, state: Any) -> None:
        pass

    def __reduce__(self) -> Any:
        return _rebuild, (type(self), self._ref.id, self._state())

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._ref.id == self._ref.id  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._ref.id))

    def __repr__(self) -> str:
        return f"<{type(self).__module__}.{type(self).__qualname__} id={self._ref.id}>"


class Lock(_Shared):
    """A non-recursive lock; any process may release it (as :class:`multiprocessing.Lock`)."""

    _kind = "lock"

    def __init__(self) -> None:
        self._make()

    def acquire(self, block: bool = True, timeout: float | None = None) -> bool:
        """Waits until the lock is this caller's (at most ``timeout`` seconds; not at all when
        ``block`` is false); False when it stayed held by another."""
        got = self._ref.wait(_OPS["lock_acquire"], b"", b"", "Lock.acquire",
                             _timeout_of(block, timeout)) is not None
        if got:
            with _held_guard:
                _held[self._ref.id] = (threading.get_ident(), 1)
        return got

    def release(self) -> None:
        """Releases the lock; ``ValueError`` (fibermpi.UsageError) when it is not held."""
        with _held_guard:
            _held.pop(self._ref.id, None)
        self._ref.call(_OPS["lock_release"], b"", "Lock.release")

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc_info: Any) -> None:
        self.release()

    def _is_owned(self) -> bool:
        with _held_guard:
            owner = _held.get(self._ref.id)
        return owner is not None and owner[0] == threading.get_ident()

    # What Condition.wait uses to let the lock go while it waits, and take it back.
    def _release_save(self) -> Any:
        self.release()
        return None

    def _acquire_restore(self, saved: Any) -> None:
        self.acquire()


class RLock(Lock):
    """A recursive lock: the thread holding it may acquire it again, and must release it as many
    times (as :class:`multiprocessing.RLock`)."""

    def acquire(self, block: bool = True, timeout: float | None = None) -> bool:
        me = threading.get_ident()
        with _held_guard:
            owner = _held.get(self._ref.id)
            if owner is not None and owner[0] == me:
                _held[self._ref.id] = (me, owner[1] + 1)
                return True
        return super().acquire(block, timeout)

    def release(self) -> None:
        """Releases one level; the lock is free once every acquire is matched.
        ``AssertionError`` when this thread does not hold it, as multiprocessing raises."""
        me = threading.get_ident()
        with _held_guard:
            owner = _held.get(self._ref.id)
            if owner is None or owner[0] != me:
                raise AssertionError("attempt to release recursive lock not owned by thread")
            if owner[1] > 1:
                _held[self._ref.id] = (me, owner[1] - 1)
                return
        super().release()

    def _release_save(self) -> Any:
        with _held_guard:
            owner = _held.get(self._ref.id)
        level = owner[1] if owner else 1
        with _held_guard:
            _held.pop(self._ref.id, None)
        self._ref.call(_OPS["lock_release"], b"", "RLock.release")
        return level

    def _acquire_restore(self, level: Any) -> None:
        Lock.acquire(self)
        with _held_guard:
            _held[self._ref.id] = (threading.get_ident(), level)


class Semaphore(_Shared):
    """A counter that ``acquire`` takes one from, waiting while it is 0, and ``release`` gives one
    back to (as :class:`multiprocessing.Semaphore`)."""

    _kind = "semaphore"
    _bounded = False

    def __init__(self, value: int = 1) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"a semaphore's value must be an integer, not {type(value).__name__}")
        if value < 0:
            raise ValueError("semaphore initial value must be >= 0")
        self._make(_word(value) + _word(value if self._bounded else _UNBOUNDED))

    def acquire(self, block: bool = True, timeout: float | None = None) -> bool:
        """Takes one (waiting at most ``timeout`` seconds); False when none came free."""
        return self._ref.wait(_OPS["semaphore_acquire"], b"", b"", "Semaphore.acquire",
                              _timeout_of(block, timeout)) is not None

    def release(self) -> None:
        """Gives one back, waking one waiter."""
        self._ref.call(_OPS["semaphore_release"], _word(1), "Semaphore.release")

    def get_value(self) -> int:
        return self._ref.call(_OPS["semaphore_value"], b"", "Semaphore.get_value")

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc_info: Any) -> None:
        self.release()


class BoundedSemaphore(Semaphore):
    """A semaphore whose ``release`` raises ``ValueError`` where it would go above the initial
    value."""

    _bounded = True


class Event(_Shared):
    """A flag processes wait for (as :class:`multiprocessing.Event`)."""

    _kind = "event"

    def __init__(self) -> None:
        self._make()

    def is_set(self) -> bool:
        return bool(self._ref.call(_OPS["event_is_set"], b"", "Event.is_set"))

    def set(self) -> None:
        """Sets the flag and wakes every waiter."""
        self._ref.call(_OPS["event_set"], b"", "Event.set")

    def clear(self) -> None:
        self._ref.call(_OPS["event_clear"], b"", "Event.clear")

    def wait(self, timeout: float | None = None) -> bool:
        """Waits until the flag is set (at most ``timeout`` seconds); True when it was, or was
        set while this waited (a ``set()`` then ``clear()`` wakes it too), False on timeout."""
        if timeout is not None:
            timeout = max(float(timeout), 0.0)
        state = self._ref.call(_OPS["event_state"], b"", "Event.wait")
        if state & 1:
            return True
        # Every slice of the wait asks about the generation it started from.
        since = _word(state >> 1)
        return self._ref.wait(_OPS["event_wait"], since, since, "Event.wait", timeout) is not None


class LockHolder:
    """What an object guarded by a lock of its own (``self._lock``) offers: ``acquire``,
    ``release`` and ``with``, passed on to that lock."""

    _lock: Lock

    def acquire(self, block: bool = True, timeout: float | None = None) -> bool:
        return self._lock.acquire(block, timeout)

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> bool:
        return self._lock.__enter__()

    def __exit__(self, *exc_info: Any) -> None:
        self._lock.__exit__(*exc_info)


class Condition(LockHolder, _Shared):
    """A condition variable over ``lock`` (a new :class:`RLock` when none is given), as
    :class:`multiprocessing.Condition`: ``wait`` releases the lock, waits for a ``notify`` and
    takes the lock back. Waiters are woken oldest first."""

    _kind = "condition"

    def __init__(self, lock: Lock | None = None) -> None:
        if lock is not None and not isinstance(lock, Lock):
            raise TypeError(f"a Condition's lock must be a fibermpi Lock or RLock, not "
                            f"{type(lock).__name__}")
        self._lock = lock if lock is not None else RLock()
        self._make()

    def _state(self) -> Any:
        return self._lock

    def _restore(self, state: Any) -> None:
        self._lock = state

    def wait(self, timeout: float | None = None) -> bool:
        """Releases the lock, waits until notified (at most ``timeout`` seconds), takes the lock
        back; False when the timeout passed. ``RuntimeError`` when the lock is not held."""
        if not self._lock._is_owned():
            raise RuntimeError("cannot wait on un-acquired lock")
        if timeout is not None:
            timeout = max(float(timeout), 0.0)
        # The ticket is taken before the lock is let go: a notify in between is not lost.
        ticket = self._ref.call(_OPS["condition_enqueue"], b"", "Condition.wait")
        try:
            saved = self._lock._release_save()
        except BaseException:
            self._give_up(ticket)
            raise
        try:
            return self._ref.wait(_OPS["condition_wait"], _word(ticket), _word(ticket) + _SLICE,
                                  "Condition.wait", timeout) is not None
        except BaseException:
            self._give_up(ticket)
            raise
        finally:
            self._lock._acquire_restore(saved)

    def _give_up(self, ticket: int) -> None:
        """Withdraws a ticket whose wait will not happen, so that a notify does not go to
        nobody."""
        try:
            self._ref.call(_OPS["condition_wait"], _word(ticket), "Condition.wait", 0.0)
        except Exception:
            pass

    def wait_for(self, predicate: Callable[[], Any], timeout: float | None = None) -> Any:
        """Waits until ``predicate()`` is true (at most ``timeout`` seconds); returns its last
        value."""
        deadline = None if timeout is None else time.monotonic() + timeout
        result = predicate()
        while not result:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.wait(left)
            else:
                self.wait()
            result = predicate()
        return result

    def notify(self, n: int = 1) -> None:
        """Wakes at most ``n`` waiters. ``RuntimeError`` when the lock is not held."""
        if not self._lock._is_owned():
            raise RuntimeError("cannot notify on un-acquired lock")
        if n > 0:
            self._ref.call(_OPS["condition_notify"], _word(min(n, _ALL)), "Condition.notify")

    def notify_all(self) -> None:
        """Wakes every waiter."""
        self.notify(_ALL)


class Barrier(_Shared):
    """A barrier for ``parties`` processes (as :class:`multiprocessing.Barrier`): ``wait``
    returns once that many wait, each with its own index from 0 to ``parties - 1``. A wait that
    times out, ``abort()``, and a party that ends while it waits break it: every wait then raises
    :class:`threading.BrokenBarrierError` until ``reset()``."""

    _kind = "barrier"

    def __init__(self, parties: int, action: Callable[[], Any] | None = None,
                 timeout: float | None = None) -> None:
        if isinstance(parties, bool) or not isinstance(parties, int):
            raise TypeError(f"parties must be an integer, not {type(parties).__name__}")
        if parties < 1:
            raise ValueError("parties must be > 0")
        self._parties, self._action, self._timeout = parties, action, timeout
        self._make(_word(parties))

    def _state(self) -> Any:
        return self._parties, self._action, self._timeout

    def _restore(self, state: Any) -> None:
        self._parties, self._action, self._timeout = state

    def wait(self, timeout: float | None = None) -> int:
        """Waits for the other parties (at most ``timeout`` seconds, else the barrier's own
        timeout); returns this party's index."""
        if timeout is None:
            timeout = self._timeout
        if timeout is not None:
            timeout = max(float(timeout), 0.0)
        index = self._ref.wait(_OPS["barrier_wait"], b"", _SLICE, "Barrier.wait", timeout)
        if index is None:  # the master breaks it on the last timeout; this is not reached
            raise threading.BrokenBarrierError
        if self._action is not None and index == self._parties - 1:
            try:
                self._action()
            except BaseException:
                self.abort()
                raise
        return index

    def reset(self) -> None:
        """Back to the empty, unbroken state; parties waiting now get BrokenBarrierError."""
        self._ref.call(_OPS["barrier_reset"], b"", "Barrier.reset")

    def abort(self) -> None:
        """Breaks the barrier."""
        self._ref.call(_OPS["barrier_abort"], b"", "Barrier.abort")

    @property
    def parties(self) -> int:
        return self._parties

    @property
    def n_waiting(self) -> int:
        return self._ref.call(_OPS["barrier_waiting"], b"", "Barrier.n_waiting")

    @property
    def broken(self) -> bool:
        return bool(self._ref.call(_OPS["barrier_broken"], b"", "Barrier.broken"))
