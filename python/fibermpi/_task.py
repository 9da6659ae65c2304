"""What a task is on the wire, and how a worker runs it.

A payload is the caller's context (``sys.path``, working directory, ``__main__``'s file or module,
``sys.argv``: a worker resolves names as the caller would when the task is sent) followed by the
pickled body. The context is pickled once per change and a worker applies it only when it
differs from the last one it saw, so a map pays for it once.

An outcome is pickled ``(status, value)``: the task's value, the exception it raised (with its
traceback as text), or why its value could not be pickled. The C++ engine sees bytes only: a
task that raises is a result, and only a lost worker or a terminated pool fail it there.
"""

from __future__ import annotations

import os
import pickle
import runpy
import struct
import sys
import threading
import traceback
import types
from typing import Any

from fibermpi import _reduction

# Bodies.
APPLY, MAP, INITIALIZER, PROCESS, GROUP = range(5)
# Outcome statuses.
OK, RAISED, UNPICKLABLE_RESULT, UNPICKLABLE_ERROR = range(4)

_HEADER = struct.Struct("<I")

# ---------------------------------------------------------------- the caller's side


class _Context:
    """The caller's context as pickled bytes, rebuilt when it changes."""

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._bytes = b""
        self._lock = threading.Lock()

    def current(self) -> bytes:
        main = sys.modules.get("__main__")
        spec = getattr(main, "__spec__", None)
        main_module = spec.name if spec is not None and spec.name != "__main__" else None
        main_path = getattr(main, "__file__", None) if _reduction.main_is_importable() else None
        key = (tuple(sys.path), os.getcwd(), main_module, main_path, tuple(sys.argv))
        with self._lock:
            if key != self._key:
                context = {"sys_path": list(key[0]), "cwd": key[1], "main_module": main_module,
                           "main_path": os.path.abspath(main_path) if main_path else None,
                           "argv": list(key[4])}
                pickled = pickle.dumps(context, _reduction.PROTOCOL)
                self._bytes = _HEADER.pack(len(pickled)) + pickled
                self._key = key
            return self._bytes


_context = _Context()


def payload(body: Any, what: str) -> bytes:
    """The bytes a worker runs: the caller's context, then ``body`` pickled (``what`` names it
    in a pickling error)."""
    return _context.current() + _reduction.dumps(body, what)


_collecting = threading.local()


def note_producer(queue_id: int) -> None:
    """A queue (or a pipe's sending channel) pickled into the payload being made: the process
    that will run it can put into that queue."""
    ids = getattr(_collecting, "ids", None)
    if ids is not None:
        ids.append(queue_id)


def payload_and_producers(body: Any, what: str) -> tuple[bytes, list[int]]:
    """:func:`payload`, and the queues the process running it can put into."""
    _collecting.ids = []
    try:
        data = payload(body, what)
        return data, _collecting.ids
    finally:
        _collecting.ids = None


def payloads(bodies: list[Any], what: str) -> list[bytes]:
    context = _context.current()
    importable = _reduction.main_is_importable()
    return [context + _reduction.dumps(body, what, importable) for body in bodies]


def decode_outcome(outcome: bytes) -> Any:
    """The task's value, or raises what it raised (its own type, the worker's traceback as
    ``__cause__``), ``fibermpi.RemoteError`` when that cannot be rebuilt here, or
    ``multiprocessing.pool.MaybeEncodingError`` for a value that could not be pickled."""
    try:
        status, value = pickle.loads(outcome)
    except Exception as error:
        from fibermpi.errors import RemoteError
        raise RemoteError(f"the task's outcome cannot be unpickled here: {error!r}") from None
    if status == OK:
        return value
    raise _rebuild_error(status, value)


def _rebuild_error(status: int, value: Any) -> BaseException:
    import multiprocessing.pool

    from fibermpi.errors import RemoteError
    if status == UNPICKLABLE_RESULT:
        error_text, value_text = value
        error = multiprocessing.pool.MaybeEncodingError(error_text, value_text)
        error.exc, error.value = error_text, value_text
        return error
    pickled_error, type_name, message, trace = value
    error: BaseException | None = None
    if pickled_error is not None:
        try:
            error = pickle.loads(pickled_error)
        except Exception:
            error = None
    if error is None:
        error = RemoteError(f"{type_name}: {message}\n\nthe worker's traceback:\n{trace}")
    else:
        error.__cause__ = multiprocessing.pool.RemoteTraceback(trace)
    return error


# ---------------------------------------------------------------- the worker's side

_applied_context = b""
# Set while the caller's __main__ is imported again in this worker: a Pool or Process made then
# is a script without the __main__ guard.
loading_main = False


def _apply_context(context_bytes: bytes) -> None:
    global _applied_context, loading_main
    if context_bytes == _applied_context:
        return
    context = pickle.loads(context_bytes)
    sys.path[:] = context["sys_path"]
    try:
        os.chdir(context["cwd"])
    except OSError:
        pass  # another host's folder: names resolve by sys.path
    main_module, main_path = context["main_module"], context["main_path"]
    loaded = sys.modules.get("__mp_main__")
    wanted = main_module or main_path
    if wanted and getattr(loaded, "__fibermpi_main__", None) != wanted:
        sys.argv[:] = context["argv"]
        loading_main = True
        try:
            if main_module:
                namespace = runpy.run_module(main_module, run_name="__mp_main__", alter_sys=True)
            else:
                namespace = runpy.run_path(main_path, run_name="__mp_main__")
        finally:
            loading_main = False
        module = types.ModuleType("__mp_main__")
        module.__dict__.update(namespace)
        module.__fibermpi_main__ = wanted
        # Functions pickled as __main__.name resolve to the script's, as multiprocessing's spawn
        # makes them.
        sys.modules["__mp_main__"] = sys.modules["__main__"] = module
    _applied_context = context_bytes


_purged = False


def _forget_partial_imports() -> None:
    """Under a launcher a worker starts serving inside ``import fibermpi``, which may itself run
    inside the import of a module whose functions are tasks (a test module, a package's
    ``__init__``): such modules are half-defined. They are dropped from ``sys.modules`` so that
    a task's function imports them afresh, whole."""
    global _purged
    _purged = True
    for name, module in list(sys.modules.items()):
        spec = getattr(module, "__spec__", None)
        if getattr(spec, "_initializing", False) and not name.startswith("fibermpi"):
            del sys.modules[name]


def _split(payload_bytes: bytes) -> Any:
    if not _purged:
        _forget_partial_imports()
    (length,) = _HEADER.unpack_from(payload_bytes)
    start = _HEADER.size
    _apply_context(payload_bytes[start:start + length])
    return pickle.loads(memoryview(payload_bytes)[start + length:])


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass


def _raised(error: BaseException) -> bytes:
    trace = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    try:
        pickled_error = pickle.dumps(error, _reduction.PROTOCOL)
        pickle.loads(pickled_error)  # one that pickles but cannot be rebuilt goes as text
    except Exception:
        pickled_error = None
    value = (pickled_error, type(error).__qualname__, str(error), trace)
    return pickle.dumps((RAISED, value), _reduction.PROTOCOL)


def _returned(value: Any) -> bytes:
    try:
        return pickle.dumps((OK, value), _reduction.PROTOCOL)
    except Exception:
        try:
            return _reduction.dumps((OK, value), "a task's result")
        except Exception as error:
            return pickle.dumps((UNPICKLABLE_RESULT, (repr(error), repr(value)[:1000])),
                                _reduction.PROTOCOL)


_functions: dict[bytes, Any] = {}


def _function(pickled: bytes) -> Any:
    """A task's function, unpickled once per worker (a map sends it with every chunk)."""
    function = _functions.get(pickled)
    if function is None:
        function = pickle.loads(pickled)
        if len(_functions) >= 64:
            _functions.clear()
        _functions[pickled] = function
    return function


def run_task(payload_bytes: bytes) -> bytes:
    """Runs one pool task (an apply, or a chunk of a map); its pickled outcome."""
    try:
        try:
            body = _split(payload_bytes)
            kind, function = body[0], _function(body[1])
            if kind == APPLY:
                _, _, args, kwargs = body
                value = function(*args, **kwargs)
            else:
                _, _, items, star = body
                value = [function(*item) for item in items] if star else [function(item) for item in items]
        except BaseException as error:  # SystemExit and KeyboardInterrupt too: multiprocessing's pool reports them
            return _raised(error)
        return _returned(value)
    finally:
        _flush()


def run_initializer(payload_bytes: bytes) -> None:
    """Runs a pool's initializer; what it raises fails the worker's start."""
    try:
        _, function, args = _split(payload_bytes)
        if function is not None:
            function(*args)
    finally:
        _flush()


def run_process(payload_bytes: bytes) -> int:
    """Runs a Process (its run()); the exit code: 0, the ``sys.exit`` code, 1 after an uncaught
    exception (whose traceback goes to stderr, as multiprocessing prints it)."""
    from fibermpi import process as process_module
    return _run_to_exit_code(payload_bytes, "the process", process_module._run_here)


def run_group_member(payload_bytes: bytes) -> int:
    """Runs a group member's target; its exit code, by :func:`run_process`'s rules."""
    from fibermpi import group as group_module
    return _run_to_exit_code(payload_bytes, "the group's target", group_module._run_member)


def _run_to_exit_code(payload_bytes: bytes, what: str, run: Any) -> int:
    """``run(body)`` for the payload's body, whose exit code it returns; 1 when the body cannot be
    unpickled here (the reason on stderr)."""
    try:
        try:
            _, body = _split(payload_bytes)
        except BaseException:
            sys.stderr.write(f"fibermpi: {what} could not be unpickled in its worker:\n")
            traceback.print_exc()
            return 1
        return run(body)
    finally:
        _flush()
