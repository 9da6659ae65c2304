"""``SimpleQueue``, ``Queue`` and ``JoinableQueue``: :mod:`multiprocessing`'s queues over the
master's queue hub (the queues of fibermpi's C++ ``SimpleQueue``/``Queue``).

Items are pickled by the putting process and live in the master until taken; each is taken
exactly once, in FIFO order per producer. A queue passed to a Process, a pool task or put on
another queue refers to the same queue. There is no feeder thread: ``put`` hands the item to the
hub before it returns, so ``join_thread`` and ``cancel_join_thread`` have nothing to wait for.

Nothing waits forever on a dead peer: a ``get`` that no live process can serve (the queue is
empty and every process that could put into it has ended or closed it) raises :class:`EOFError`.
"""

from __future__ import annotations

import pickle
import queue
from typing import Any

from fibermpi import _core, _reduction, _runtime, _task

__all__ = ["SimpleQueue", "Queue", "JoinableQueue"]


def _rebuild(cls: type, queue_id: int, maxsize: int) -> Any:
    instance = cls.__new__(cls)
    instance._adopt(_core.QueueRef(queue_id), maxsize)
    return instance


class _HubQueue:
    _joinable = False

    def __init__(self, maxsize: int = 0) -> None:
        if isinstance(maxsize, bool) or not isinstance(maxsize, int):
            raise TypeError(f"maxsize must be an integer, not {type(maxsize).__name__}")
        _runtime.ensure_started(starts_processes=False)
        maxsize = max(maxsize, 0)
        self._adopt(_core.QueueRef.create(False, self._joinable, maxsize), maxsize)

    def _adopt(self, ref: Any, maxsize: int) -> None:
        self._ref = ref
        self._maxsize = maxsize
        self._closed = False

    def __reduce__(self) -> Any:
        _task.note_producer(self._ref.id)
        return _rebuild, (type(self), self._ref.id, self._maxsize)

    def __repr__(self) -> str:
        return f"<{type(self).__module__}.{type(self).__qualname__} id={self._ref.id}>"

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"Queue {self!r} is closed")

    def _take(self, timeout: float | None, what: str) -> Any:
        return pickle.loads(self._ref.get(timeout, what))


class SimpleQueue(_HubQueue):
    """An unbounded queue: ``put``, ``get``, ``empty``, ``close``."""

    def __init__(self) -> None:
        super().__init__(0)

    def put(self, obj: Any) -> None:
        self._check_open()
        self._ref.put(_reduction.dumps(obj, "an item put on a queue"))

    def get(self) -> Any:
        """The oldest item, waiting as long as needed (EOFError when none can come)."""
        self._check_open()
        return self._take(None, "SimpleQueue.get")

    def empty(self) -> bool:
        return self._ref.size() == 0

    def close(self) -> None:
        """This process puts no more and uses the queue no more."""
        if not self._closed:
            self._ref.close_producer()
            self._closed = True


class Queue(_HubQueue):
    """A queue of at most ``maxsize`` items (0 or less: no limit), as
    :class:`multiprocessing.Queue`: ``put``/``get`` with ``block`` and ``timeout`` raising
    :class:`queue.Full`/:class:`queue.Empty`, ``put_nowait``, ``get_nowait``, ``qsize``,
    ``empty``, ``full``, ``close``, ``join_thread``, ``cancel_join_thread``."""

    def put(self, obj: Any, block: bool = True, timeout: float | None = None) -> None:
        self._check_open()
        item = _reduction.dumps(obj, "an item put on a queue")
        if self._maxsize == 0:
            self._ref.put(item)
        else:
            self._ref.put_waiting(item, timeout if block else 0.0, f"{type(self).__name__}.put")

    def put_nowait(self, obj: Any) -> None:
        self.put(obj, False)

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        self._check_open()
        return self._take(timeout if block else 0.0, f"{type(self).__name__}.get")

    def get_nowait(self) -> Any:
        return self.get(False)

    def qsize(self) -> int:
        """Items waiting now (a snapshot: other processes put and get at any time)."""
        return self._ref.size()

    def empty(self) -> bool:
        return self.qsize() == 0

    def full(self) -> bool:
        return self._maxsize > 0 and self.qsize() >= self._maxsize

    def close(self) -> None:
        """This process puts no more into the queue (a getter elsewhere sees EOF once no live
        process can put)."""
        if not self._closed:
            self._ref.close_producer()
            self._closed = True

    def join_thread(self) -> None:
        """After :meth:`close`: items are with the hub as soon as ``put`` returns."""
        if not self._closed:
            raise AssertionError(f"Queue {self!r} not closed")

    def cancel_join_thread(self) -> None:
        """Nothing to cancel: ``put`` has no background thread."""


class JoinableQueue(Queue):
    """A :class:`Queue` whose items count as unfinished until ``task_done`` is called for each;
    ``join`` waits until none is (EOFError when the unfinished items were taken by processes
    that ended without ``task_done``)."""

    _joinable = True

    def task_done(self) -> None:
        self._check_open()
        self._ref.task_done()

    def join(self) -> None:
        self._ref.join(None)
