"""``fibermpi.Pool``: :class:`multiprocessing.pool.Pool`'s API over fibermpi's pool.

The engine schedules the tasks (several in flight per worker), runs a task again elsewhere when
its worker dies (at most ``max_task_retries`` times, then :class:`fibermpi.WorkerLost`), replaces
lost workers, and grows or shrinks the pool (:meth:`Pool.resize`, ``autoscale``). Under a
launcher (``mpirun``, ``srun``, ``fibermpi run``) the idle ranks are the first workers; the rest
are spawned (``sys.executable -m fibermpi._worker``), or are worker pods in a FiberJob.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from fibermpi import _core, _reduction, _runtime, _task
from fibermpi.errors import TimeoutError

__all__ = ["Pool", "AsyncResult", "MapResult", "IMapIterator", "Autoscale"]


class Autoscale(NamedTuple):
    """A pool that sizes itself: it starts more workers while tasks wait for one, up to ``max``,
    and retires workers idle for ``idle_timeout`` seconds, down to ``min``."""

    min: int = 1
    max: int = 0
    idle_timeout: float = 10.0


def _check_count(name: str, value: Any, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}")
    if value < least:
        raise ValueError(f"{name} must be at least {least}, got {value}")
    return value


def _function_bytes(func: Callable, what: str) -> bytes:
    if not callable(func):
        raise TypeError(f"{what} must be callable, not {type(func).__name__}")
    return _reduction.dumps(func, f"the function {getattr(func, '__qualname__', func)!r}")


# Set on the thread running a result's callback while it runs: a get() there of a result whose
# callback waits behind this one on the same thread must not wait for it.
_in_callback = threading.local()


class AsyncResult:
    """The result of :meth:`Pool.apply_async`: :meth:`get`, :meth:`wait`, :meth:`ready`,
    :meth:`successful`, as multiprocessing's. A result with a ``callback`` or an
    ``error_callback`` becomes ready once that callback has returned, as in multiprocessing."""

    def __init__(self, result: Any, callback: Callable | None, error_callback: Callable | None):
        self._result = result
        self._decoded: tuple[bool, Any] | None = None
        self._lock = threading.Lock()
        self._called_back: threading.Event | None = None
        if callback is not None or error_callback is not None:
            called_back = self._called_back = threading.Event()

            def done(arrived: bool, value: Any) -> None:
                _in_callback.active = True
                try:
                    if arrived:
                        ok, value = self._decode(value)
                    else:
                        ok = False
                    if ok and callback is not None:
                        callback(value)
                    elif not ok and error_callback is not None:
                        error_callback(value)
                finally:
                    _in_callback.active = False
                    called_back.set()
            result.when_done(done)

    def _outcome(self, outcome: Any) -> Any:
        return _task.decode_outcome(outcome)

    def _decode(self, outcome: Any) -> tuple[bool, Any]:
        with self._lock:
            if self._decoded is None:
                try:
                    self._decoded = (True, self._outcome(outcome))
                except BaseException as error:
                    self._decoded = (False, error)
            return self._decoded

    def _callback_returned(self, deadline: float | None) -> bool:
        called_back = self._called_back
        if called_back is None or called_back.is_set() or getattr(_in_callback, "active", False):
            return True
        if deadline is None:
            return called_back.wait()
        return called_back.wait(max(0.0, deadline - time.monotonic()))

    def get(self, timeout: float | None = None) -> Any:
        """The value; raises what the task raised, :class:`fibermpi.TimeoutError` when it is
        not ready within ``timeout`` seconds, :class:`fibermpi.WorkerLost`,
        :class:`fibermpi.TerminatedError`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if self._decoded is None:
            ok, value = self._decode(self._result.get(timeout))
        else:
            ok, value = self._decoded
        if not self._callback_returned(deadline):
            raise TimeoutError(f"the result's callback did not return within {timeout} s")
        if ok:
            return value
        raise value

    def wait(self, timeout: float | None = None) -> None:
        """Waits until the result is ready, or ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if self._result.wait(timeout):
            self._callback_returned(deadline)

    def ready(self) -> bool:
        """Whether the call has completed (and its callback, if any, has returned)."""
        return self._result.ready() and (self._called_back is None or self._called_back.is_set())

    def successful(self) -> bool:
        """Whether the call completed without raising; ``ValueError`` when not ready yet."""
        if not self.ready():
            raise ValueError(f"{self!r} not ready")
        try:
            self.get(0)
        except BaseException:
            return False
        return True


ApplyResult = AsyncResult


class MapResult(AsyncResult):
    """The result of :meth:`Pool.map_async` and :meth:`Pool.starmap_async`: the list of values."""

    def _outcome(self, outcomes: Any) -> Any:
        values: list[Any] = []
        for outcome in outcomes:
            values.extend(_task.decode_outcome(outcome))
        return values


class IMapIterator(Iterator):
    """Results of :meth:`Pool.imap` (in order) or :meth:`Pool.imap_unordered` (as they finish);
    ``next(timeout)`` raises :class:`fibermpi.TimeoutError` when none arrives in time."""

    def __init__(self, stream: Any):
        self._stream = stream
        self._ready: list[Any] = []
        self._lock = threading.Lock()

    def __iter__(self) -> IMapIterator:
        return self

    def next(self, timeout: float | None = None) -> Any:
        with self._lock:
            while not self._ready:
                outcome = self._stream.next(timeout)
                if outcome is None:
                    raise StopIteration
                self._ready = list(_task.decode_outcome(outcome))
                self._ready.reverse()
            return self._ready.pop()

    __next__ = next


class Pool:
    """A pool of worker processes, as :class:`multiprocessing.pool.Pool`.

    ``processes``: the number of workers (default: the usable physical cores; under a launcher,
    the world's ranks less the master's). ``initializer(*initargs)`` runs in every worker before
    its first task. ``maxtasksperchild``: a worker is replaced by a fresh process after this many
    tasks (chunks); such a pool's workers run only in spawned processes that ran nothing before
    (never in a rank of the launcher's world, which runs one worker after another), so that no
    state carries over.

    fibermpi's own keywords: ``max_task_retries`` (a task whose worker died is run again at most
    this many times, then fails with :class:`fibermpi.WorkerLost`), ``autoscale`` (an
    :class:`Autoscale`, or a ``(min, max, idle_timeout)`` tuple), and what each worker needs
    (``cpus_per_worker``, ``gpus_per_worker``, ``memory_per_worker`` in bytes), as Fiber's
    ``@meta``: a request that cannot fit raises :class:`fibermpi.UsageError` before any worker
    starts.

    The context manager's exit calls :meth:`terminate`, as multiprocessing's does.
    """

    def __init__(self, processes: int | None = None, initializer: Callable | None = None,
                 initargs: Iterable = (), maxtasksperchild: int | None = None, *,
                 max_task_retries: int = 3, autoscale: Autoscale | tuple | None = None,
                 cpus_per_worker: int | None = None, gpus_per_worker: int | None = None,
                 memory_per_worker: int | None = None):
        self._state = "starting"
        if processes is not None:
            _check_count("processes", processes, 1)
        if initializer is not None and not callable(initializer):
            raise TypeError("initializer must be a callable")
        if maxtasksperchild is not None:
            _check_count("maxtasksperchild", maxtasksperchild, 1)
        _check_count("max_task_retries", max_task_retries, 0)
        scale = None
        if autoscale is not None:
            scale = Autoscale(*autoscale)
            _check_count("autoscale.min", scale.min, 0)
            _check_count("autoscale.max", scale.max, max(1, scale.min))
            if not scale.idle_timeout >= 0:
                raise ValueError(f"autoscale.idle_timeout must be at least 0 s, got {scale.idle_timeout}")
        for name, value in (("cpus_per_worker", cpus_per_worker), ("gpus_per_worker", gpus_per_worker),
                            ("memory_per_worker", memory_per_worker)):
            if value is not None:
                _check_count(name, value, 0)
        _runtime.ensure_started()
        init_payload = None
        if initializer is not None:
            init_payload = _task.payload(
                (_task.INITIALIZER, initializer, tuple(initargs)), "the pool's initializer")
        self._pool = _core.Pool(processes or 0, init_payload, maxtasksperchild or 0, max_task_retries,
                                tuple(scale) if scale else None, cpus_per_worker or 0,
                                memory_per_worker or 0, gpus_per_worker or 0)
        self._state = "running"
        _runtime.track_pool(self)

    # ------------------------------------------------------------ state

    def _check_running(self) -> None:
        if self._state != "running":
            raise ValueError("Pool not running")

    def __repr__(self) -> str:
        size = self._pool.size() if self._state == "running" else 0
        return f"<{type(self).__module__}.{type(self).__qualname__} state={self._state} pool_size={size}>"

    def __enter__(self) -> Pool:
        self._check_running()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.terminate()

    def __reduce__(self) -> Any:
        raise NotImplementedError("pool objects cannot be passed between processes or pickled")

    @property
    def _processes(self) -> int:
        return self._pool.size()

    # ------------------------------------------------------------ submitting

    def apply(self, func: Callable, args: Iterable = (), kwds: dict | None = None) -> Any:
        """``func(*args, **kwds)`` in a worker; waits for the value."""
        return self.apply_async(func, args, kwds).get()

    def apply_async(self, func: Callable, args: Iterable = (), kwds: dict | None = None,
                    callback: Callable | None = None,
                    error_callback: Callable | None = None) -> AsyncResult:
        """``func(*args, **kwds)`` in a worker; returns an :class:`AsyncResult` at once.
        ``callback(value)`` or ``error_callback(exception)`` runs on fibermpi's callback thread
        when it is done: keep it short."""
        self._check_running()
        function = _function_bytes(func, "func")
        body = (_task.APPLY, function, tuple(args), dict(kwds or {}))
        payload = _task.payload(body, "the task's arguments")
        return AsyncResult(self._pool.apply_async(payload), callback, error_callback)

    def _chunks(self, func: Callable, iterable: Iterable, chunksize: int | None,
                star: bool) -> list[bytes]:
        self._check_running()
        function = _function_bytes(func, "func")
        items = iterable if isinstance(iterable, list) else list(iterable)
        if chunksize is None:
            chunksize, extra = divmod(len(items), self._pool.size() * 4)
            if extra:
                chunksize += 1
        else:
            _check_count("chunksize", chunksize, 1)
        chunksize = max(chunksize, 1)
        bodies = [(_task.MAP, function, items[i:i + chunksize], star)
                  for i in range(0, len(items), chunksize)]
        return _task.payloads(bodies, "the map's inputs")

    def map(self, func: Callable, iterable: Iterable, chunksize: int | None = None) -> list:
        """``[func(x) for x in iterable]`` in the workers, in order."""
        return self.map_async(func, iterable, chunksize).get()

    def map_async(self, func: Callable, iterable: Iterable, chunksize: int | None = None,
                  callback: Callable | None = None,
                  error_callback: Callable | None = None) -> MapResult:
        """Like :meth:`map`, returning a :class:`MapResult` at once."""
        payloads = self._chunks(func, iterable, chunksize, False)
        return MapResult(self._pool.map_async(payloads), callback, error_callback)

    def starmap(self, func: Callable, iterable: Iterable[Iterable], chunksize: int | None = None) -> list:
        """``[func(*args) for args in iterable]`` in the workers, in order."""
        return self.starmap_async(func, iterable, chunksize).get()

    def starmap_async(self, func: Callable, iterable: Iterable[Iterable], chunksize: int | None = None,
                      callback: Callable | None = None,
                      error_callback: Callable | None = None) -> MapResult:
        """Like :meth:`starmap`, returning a :class:`MapResult` at once."""
        items = [tuple(args) for args in iterable]
        payloads = self._chunks(func, items, chunksize, True)
        return MapResult(self._pool.map_async(payloads), callback, error_callback)

    def imap(self, func: Callable, iterable: Iterable, chunksize: int = 1) -> IMapIterator:
        """``func(x)`` for each x, the values in order as they become available."""
        return IMapIterator(self._pool.imap(self._chunks(func, iterable, chunksize, False), True))

    def imap_unordered(self, func: Callable, iterable: Iterable, chunksize: int = 1) -> IMapIterator:
        """Like :meth:`imap`, the values in the order they finish."""
        return IMapIterator(self._pool.imap(self._chunks(func, iterable, chunksize, False), False))

    # ------------------------------------------------------------ size

    def resize(self, processes: int) -> None:
        """Grows or shrinks the running pool to ``processes`` workers; no task is lost (a retired
        worker finishes what it holds first)."""
        self._check_running()
        self._pool.resize(_check_count("processes", processes, 1))

    def start_workers(self) -> None:
        """Fiber's: the workers start with the pool; this only checks that it runs."""
        self._check_running()

    def wait_until_workers_up(self) -> None:
        """Fiber's: waits until every worker has started and run its initializer."""
        self._check_running()
        self._pool.wait_ready()

    # ------------------------------------------------------------ ending

    def close(self) -> None:
        """No more tasks; the workers leave once the submitted ones are done."""
        if self._state == "running":
            self._pool.close()
            self._state = "closed"

    def terminate(self) -> None:
        """Stops now: outstanding results fail with :class:`fibermpi.TerminatedError`, workers
        running a task are killed."""
        if self._state in ("running", "closed"):
            self._pool.terminate()
            self._state = "terminated"
            self._pool.release()

    def join(self) -> None:
        """Waits for the workers to leave; :meth:`close` or :meth:`terminate` first."""
        if self._state == "running":
            raise ValueError("Pool is still running")
        if self._state == "closed":
            self._pool.join()
            self._pool.release()
            self._state = "joined"

    def _end_at_exit(self) -> None:
        if self._state in ("running", "closed"):
            self.terminate()

    def __del__(self) -> None:
        if getattr(self, "_state", None) in ("running", "closed"):
            try:
                self.terminate()
            except Exception:
                pass
