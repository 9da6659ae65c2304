"""``Value``, ``Array``, ``RawValue`` and ``RawArray``: :mod:`multiprocessing`'s shared ctypes
objects, kept by the master instead of in shared memory, so that they work across hosts too.

The object is a ctypes value (``Value('i', 0)``: a C int, with C's overflow) or array in the
master; ``.value``, indexing and slicing read and write it there, one request each. ``Value``
and ``Array`` come with a lock (a new :class:`fibermpi.RLock`, or the ``lock`` given): as with
multiprocessing, ``v.value += 1`` is two requests, and is atomic only under ``with
v.get_lock():``. ``get_obj()`` is not offered: there is no local ctypes object to hand out.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

from fibermpi import _runtime, managers, synchronize

__all__ = ["Value", "Array", "RawValue", "RawArray"]

# multiprocessing's typecodes, as ctypes types.
_TYPECODES: dict[str, Any] = {
    "c": ctypes.c_char, "u": ctypes.c_wchar,
    "b": ctypes.c_byte, "B": ctypes.c_ubyte,
    "h": ctypes.c_short, "H": ctypes.c_ushort,
    "i": ctypes.c_int, "I": ctypes.c_uint,
    "l": ctypes.c_long, "L": ctypes.c_ulong,
    "q": ctypes.c_longlong, "Q": ctypes.c_ulonglong,
    "f": ctypes.c_float, "d": ctypes.c_double,
}


def _ctype(typecode_or_type: Any) -> Any:
    if isinstance(typecode_or_type, str):
        try:
            return _TYPECODES[typecode_or_type]
        except KeyError:
            raise TypeError(f"unknown typecode {typecode_or_type!r} (one of "
                            f"{''.join(_TYPECODES)}, or a ctypes type)") from None
    if isinstance(typecode_or_type, type) and issubclass(typecode_or_type, ctypes._SimpleCData):
        return typecode_or_type
    if isinstance(typecode_or_type, type) and issubclass(typecode_or_type, (ctypes.Structure,
                                                                            ctypes.Union)):
        raise TypeError(f"fibermpi keeps Values and Arrays of simple ctypes types only (a "
                        f"typecode, or c_int and the like), not the structure "
                        f"{typecode_or_type.__name__}: keep it in a Manager's Namespace or dict")
    raise TypeError(f"a typecode or a simple ctypes type, not {typecode_or_type!r}")


class _CValue:
    """In the master: one ctypes value."""

    def __init__(self, ctype: Any, args: tuple) -> None:
        self._object = ctype(*args)

    def get(self) -> Any:
        return self._object.value

    def set(self, value: Any) -> None:
        self._object.value = value


class _CArray:
    """In the master: a ctypes array."""

    def __init__(self, ctype: Any, size_or_initializer: Any) -> None:
        if isinstance(size_or_initializer, int):
            self._object = (ctype * size_or_initializer)()
        else:
            items = list(size_or_initializer)
            self._object = (ctype * len(items))(*items)

    def __len__(self) -> int:
        return len(self._object)

    def __getitem__(self, index: Any) -> Any:
        return self._object[index]

    def __setitem__(self, index: Any, value: Any) -> None:
        self._object[index] = value

    def get_value(self) -> Any:
        return self._object.value

    def set_value(self, value: Any) -> None:
        self._object.value = value

    def get_raw(self) -> Any:
        return self._object.raw

    def set_raw(self, value: Any) -> None:
        self._object.raw = value


class _Values(managers.BaseManager):
    """The store of this process's Values and Arrays."""


_CValueProxy = managers.MakeProxyType("_CValueProxy", ("get", "set"))
_CArrayProxy = managers.MakeProxyType(
    "_CArrayProxy", ("__len__", "__getitem__", "__setitem__", "get_value", "set_value", "get_raw",
                     "set_raw"))
_Values.register("CValue", _CValue, _CValueProxy)
_Values.register("CArray", _CArray, _CArrayProxy)

_values: _Values | None = None
_values_guard = threading.Lock()


def _store() -> _Values:
    global _values
    with _values_guard:
        if _values is None:
            _runtime.ensure_started(starts_processes=False)
            values = _Values()
            values.start()
            _values = values
        return _values


def _forwarded(getter: str, setter: str, doc: str) -> property:
    """A property read and written by two methods of the object's proxy."""
    return property(lambda self: getattr(self._proxy, getter)(),
                    lambda self, new: getattr(self._proxy, setter)(new), doc=doc)


class _Raw:
    """A shared ctypes value without a lock."""

    def __init__(self, proxy: Any, typename: str) -> None:
        self._proxy = proxy
        self._typename = typename

    value = _forwarded("get", "set", "The value, read or set in the master.")

    def __repr__(self) -> str:
        return f"<{self._typename} {self.value!r} kept by the master>"


class _RawArray:
    """A shared ctypes array without a lock."""

    def __init__(self, proxy: Any, typename: str) -> None:
        self._proxy = proxy
        self._typename = typename

    def __len__(self) -> int:
        return self._proxy.__len__()

    def __getitem__(self, index: Any) -> Any:
        return self._proxy.__getitem__(index)

    def __setitem__(self, index: Any, value: Any) -> None:
        self._proxy.__setitem__(index, value)

    def __iter__(self) -> Any:
        return iter(self._proxy.__getitem__(slice(None)))

    value = _forwarded("get_value", "set_value", "A char array's value, up to its first NUL.")
    raw = _forwarded("get_raw", "set_raw", "A char array's bytes, all of them.")

    def __repr__(self) -> str:
        return f"<{self._typename} array of {len(self)} kept by the master>"


class _WithLock(synchronize.LockHolder):
    def __init__(self, lock: Any) -> None:
        self._lock = lock

    def get_lock(self) -> Any:
        """The lock that makes a read and a write of the object one step."""
        return self._lock


class Synchronized(_WithLock, _Raw):
    """A shared value with its lock (``Value``)."""

    def __init__(self, proxy: Any, typename: str, lock: Any) -> None:
        _Raw.__init__(self, proxy, typename)
        _WithLock.__init__(self, lock)


class SynchronizedArray(_WithLock, _RawArray):
    """A shared array with its lock (``Array``)."""

    def __init__(self, proxy: Any, typename: str, lock: Any) -> None:
        _RawArray.__init__(self, proxy, typename)
        _WithLock.__init__(self, lock)


def _lock_of(lock: Any) -> Any:
    if lock is True:
        return synchronize.RLock()
    if not hasattr(lock, "acquire"):
        raise AttributeError(f"{lock!r} has no method 'acquire'")
    return lock


def RawValue(typecode_or_type: Any, *args: Any) -> _Raw:  # noqa: N802
    """A ctypes value kept by the master, without a lock."""
    ctype = _ctype(typecode_or_type)
    return _Raw(_store().CValue(ctype, args), ctype.__name__)


def RawArray(typecode_or_type: Any, size_or_initializer: Any) -> _RawArray:  # noqa: N802
    """A ctypes array kept by the master, without a lock: of ``size_or_initializer`` zeros, or
    of the given items."""
    ctype = _ctype(typecode_or_type)
    return _RawArray(_store().CArray(ctype, size_or_initializer), ctype.__name__)


def Value(typecode_or_type: Any, *args: Any, lock: Any = True) -> Any:  # noqa: N802
    """A ctypes value kept by the master; with a lock (``get_lock()``) unless ``lock`` is
    False."""
    raw = RawValue(typecode_or_type, *args)
    if lock is False or lock is None:
        return raw
    return Synchronized(raw._proxy, raw._typename, _lock_of(lock))


def Array(typecode_or_type: Any, size_or_initializer: Any, *, lock: Any = True) -> Any:  # noqa: N802
    """A ctypes array kept by the master; with a lock (``get_lock()``) unless ``lock`` is
    False."""
    raw = RawArray(typecode_or_type, size_or_initializer)
    if lock is False or lock is None:
        return raw
    return SynchronizedArray(raw._proxy, raw._typename, _lock_of(lock))
