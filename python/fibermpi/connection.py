"""``Pipe``: a pair of connected :class:`Connection` ends, as :func:`multiprocessing.Pipe`, over
two channels of the master's queue hub (one for a one-way pipe). An end passed to a Process is
that process's end; ``recv`` raises :class:`EOFError` once nothing is left and no live process
holding the other end can send."""

from __future__ import annotations

import pickle
from typing import Any

from fibermpi import _core, _reduction, _runtime, _task

__all__ = ["Pipe", "Connection"]


def _rebuild(recv_id: int, send_id: int) -> Connection:
    return Connection(recv_id, send_id)


class Connection:
    """One end of a :func:`Pipe`: ``send``/``recv`` of picklable objects, ``send_bytes``/
    ``recv_bytes``/``recv_bytes_into`` of raw bytes, ``poll``, ``close``."""

    def __init__(self, recv_id: int, send_id: int) -> None:
        self._recv = _core.QueueRef(recv_id) if recv_id else None
        self._send = _core.QueueRef(send_id) if send_id else None
        self._closed = False

    def __reduce__(self) -> Any:
        self._check_closed()
        if self._send is not None:
            _task.note_producer(self._send.id)
        return _rebuild, (self._recv.id if self._recv else 0, self._send.id if self._send else 0)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def readable(self) -> bool:
        return self._recv is not None

    @property
    def writable(self) -> bool:
        return self._send is not None

    def _check_closed(self) -> None:
        if self._closed:
            raise OSError("handle is closed")

    def _check_readable(self) -> None:
        self._check_closed()
        if self._recv is None:
            raise OSError("connection is write-only")

    def _check_writable(self) -> None:
        self._check_closed()
        if self._send is None:
            raise OSError("connection is read-only")

    def send(self, obj: Any) -> None:
        """Sends a picklable object to the other end."""
        self._check_writable()
        self._send.put(_reduction.dumps(obj, "an object sent on a pipe"))

    def send_bytes(self, buf: Any, offset: int = 0, size: int | None = None) -> None:
        """Sends ``buf[offset:offset + size]`` (a bytes-like object) as one message."""
        self._check_writable()
        view = memoryview(buf).cast("B")
        if offset < 0:
            raise ValueError("offset is negative")
        if len(view) < offset:
            raise ValueError("buffer length < offset")
        if size is None:
            size = len(view) - offset
        elif size < 0:
            raise ValueError("size is negative")
        elif offset + size > len(view):
            raise ValueError("buffer length < offset + size")
        self._send.put(bytes(view[offset:offset + size]))

    def recv(self) -> Any:
        """The next object, waiting as long as needed (EOFError when none can come)."""
        self._check_readable()
        return pickle.loads(self._recv.get(None, "Connection.recv"))

    def recv_bytes(self, maxlength: int | None = None) -> bytes:
        """The next message as bytes; OSError (and the end closed) when it is longer than
        ``maxlength``."""
        self._check_readable()
        if maxlength is not None and maxlength < 0:
            raise ValueError("negative maxlength")
        data = self._recv.get(None, "Connection.recv_bytes")
        if maxlength is not None and len(data) > maxlength:
            self.close()
            raise OSError("bad message length")
        return data

    def recv_bytes_into(self, buf: Any, offset: int = 0) -> int:
        """Reads the next message into ``buf`` at ``offset``; its length.
        :class:`multiprocessing.BufferTooShort` (holding the message) when it does not fit."""
        import multiprocessing
        self._check_readable()
        view = memoryview(buf).cast("B")
        if not 0 <= offset <= len(view):
            raise ValueError("offset out of bounds")
        data = self._recv.get(None, "Connection.recv_bytes_into")
        if len(data) > len(view) - offset:
            raise multiprocessing.BufferTooShort(data)
        view[offset:offset + len(data)] = data
        return len(data)

    def poll(self, timeout: float | None = 0.0) -> bool:
        """Whether a message (or the end of the pipe) is ready, waiting up to ``timeout`` s (None:
        as long as needed)."""
        self._check_readable()
        return self._recv.poll(timeout)

    def close(self) -> None:
        """Ends this process's use of the end; the other end sees EOF once no live process that
        can send holds it."""
        if not self._closed:
            self._closed = True
            if self._send is not None:
                self._send.close_producer()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("duplex" if self.readable and self.writable
                                               else "read-only" if self.readable else "write-only")
        return f"<fibermpi.Connection {state}>"


def Pipe(duplex: bool = True) -> tuple[Connection, Connection]:  # noqa: N802 - multiprocessing's name
    """A connected pair ``(a, b)``. With ``duplex=False``, ``a`` only receives and ``b`` only
    sends, as in multiprocessing."""
    _runtime.ensure_started(starts_processes=False)
    forward = _core.QueueRef.create(True, False, 0)  # b -> a
    if not duplex:
        return Connection(forward.id, 0), Connection(0, forward.id)
    backward = _core.QueueRef.create(True, False, 0)  # a -> b
    return Connection(forward.id, backward.id), Connection(backward.id, forward.id)
