"""``Manager()`` and ``BaseManager``: :mod:`multiprocessing.managers` over fibermpi's master.

A manager's objects are Python objects kept in the master (in one store per manager), served on
a thread of the store's own, so the engine's progress never waits for the GIL. Every process that
holds a proxy — passed to a Process, a pool task or an initializer, put on a queue, kept in
another managed object — reaches the same object, in every launch mode; a manager may be made
in a worker too (its objects still live in the master). Each method call is one request to the
master, atomic there. What the objects hold is lost only if the master dies.

``Manager()`` gives a started :class:`SyncManager`: ``dict``, ``list``, ``Namespace``, ``Value``,
``Array`` are kept in the store (a managed dict's keys compare by Python equality); ``Queue``,
``JoinableQueue``, ``Lock``, ``RLock``, ``Semaphore``, ``BoundedSemaphore``, ``Condition``,
``Event`` and ``Barrier`` are fibermpi's own (:mod:`fibermpi.queues`, :mod:`fibermpi.synchronize`),
which the master serves too.

What differs from :mod:`multiprocessing`: there is no manager process and no address: a manager
cannot be reached from outside the program (``address``, ``connect``, ``get_server`` are refused
with :class:`fibermpi.UsageError`). Objects live until ``shutdown()`` (or the program's end), not
until their last proxy is collected, and a store and its thread until the program's end. A store
runs one method call at a time: a method that blocks (a registered ``queue.Queue``'s ``get``, a wait
on a ``threading.Event``) holds up every other call on that manager's objects until it returns, so
share queues and events through fibermpi's own ``Queue`` and ``Event`` (what ``Manager().Queue()``
and ``Manager().Event()`` give).
"""

from __future__ import annotations

import array
import pickle
import sys
import threading
from typing import Any, Callable

from fibermpi import _core, _reduction, _runtime, _task, queues, synchronize
from fibermpi.errors import UsageError

__all__ = ["BaseManager", "SyncManager", "BaseProxy", "Namespace", "Manager", "AutoProxy",
           "DictProxy", "ListProxy", "ValueProxy", "ArrayProxy", "NamespaceProxy"]


# ------------------------------------------------------------------ the master's side

class _Store:
    """The objects of one manager, by key; lives in the master. ``_serve`` answers one request:
    ``(operation, key, name, args, kwargs)``, pickled; the answer is pickled as a task's outcome
    (a value, or what the call raised, with its traceback)."""

    def __init__(self) -> None:
        self._objects: dict[int, Any] = {}
        self._next_key = 1
        self._shut_down = False

    def _serve(self, request: bytes) -> bytes:
        # While it serves, a call of its own objects' proxies (a dict updated from another
        # managed dict, a managed list compared with one) is served here, directly: through the
        # engine it would wait for this very call to end.
        outer = getattr(_serving, "store", None)
        _serving.store = self
        try:
            operation, key, name, args, kwargs = pickle.loads(request)
            if self._shut_down:
                raise UsageError("the manager was shut down: its objects are gone")
            value = getattr(self, "_op_" + operation)(key, name, args, kwargs)
        except BaseException as error:  # the caller gets it, with its own type
            return _task._raised(error)
        finally:
            _serving.store = outer
        return _task._returned(value)

    def _op_bind(self, key: int, store_id: int, args: tuple, kwargs: dict) -> Any:
        """Learns its own object id, by which proxies name it (once, when the manager starts)."""
        _local_stores[store_id] = self

    def _keep(self, obj: Any) -> tuple[int, list[str]]:
        key = self._next_key
        self._next_key += 1
        self._objects[key] = obj
        return key, _public_methods(obj)

    def _object(self, key: int) -> Any:
        try:
            return self._objects[key]
        except KeyError:
            raise UsageError(f"the manager holds no object {key}") from None

    def _op_create(self, key: int, factory: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        return self._keep(factory(*args, **kwargs))

    def _op_call(self, key: int, name: str, args: tuple, kwargs: dict) -> Any:
        value = getattr(self._object(key), name)(*args, **kwargs)
        # A dict's keys(), values() and items() are views of the object, which stays here.
        if isinstance(value, (type({}.keys()), type({}.values()), type({}.items()))):
            return list(value)
        return value

    def _op_call_kept(self, key: int, name: str, args: tuple, kwargs: dict) -> Any:
        """A call whose result stays here too (``method_to_typeid``): its key and methods."""
        return self._keep(getattr(self._object(key), name)(*args, **kwargs))

    def _op_value(self, key: int, name: str, args: tuple, kwargs: dict) -> Any:
        return self._object(key)

    def _op_getattr(self, key: int, name: str, args: tuple, kwargs: dict) -> Any:
        return getattr(self._object(key), name)

    def _op_setattr(self, key: int, name: str, args: tuple, kwargs: dict) -> Any:
        setattr(self._object(key), name, args[0])

    def _op_delattr(self, key: int, name: str, args: tuple, kwargs: dict) -> Any:
        delattr(self._object(key), name)

    def _op_run(self, key: int, function: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        return function(*args, **kwargs)

    def _op_shutdown(self, key: int, name: str, args: tuple, kwargs: dict) -> Any:
        self._objects.clear()
        self._shut_down = True


# The stores kept in this process (the master), by object id, and the one this thread is serving.
_local_stores: dict[int, _Store] = {}
_serving = threading.local()


def _public_methods(obj: Any) -> list[str]:
    return [name for name in dir(obj)
            if not name.startswith("_") and callable(getattr(obj, name, None))]


def _request(store: Any, operation: str, key: int, name: Any, args: tuple = (),
             kwargs: dict | None = None) -> Any:
    body = (operation, key, name, args, kwargs or {})
    try:
        request = pickle.dumps(body, _reduction.PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        request = _reduction.dumps(body, f"the arguments of {name!r}")
    serving = getattr(_serving, "store", None)
    if serving is not None and _local_stores.get(store.id) is serving:
        return _task.decode_outcome(serving._serve(request))
    return _task.decode_outcome(store.serve(request))


# ------------------------------------------------------------------ proxies

def _rebuild_proxy(cls: type, store_id: int, key: int, exposed: Any, manager_class: Any,
                   extra: Any) -> Any:
    proxy = cls.__new__(cls)
    proxy._adopt(_core.ObjectRef(store_id), key, exposed, manager_class, extra)
    return proxy


class BaseProxy:
    """A reference to an object a manager keeps. ``_callmethod(name, args, kwds)`` runs one of
    its methods in the master and returns the result (or raises what it raised); the object's
    exceptions keep their types."""

    _exposed_: tuple[str, ...] | None = None
    _method_to_typeid_: dict[str, str] | None = None

    def __init__(self, store: Any, key: int, exposed: Any = None, manager_class: Any = None,
                 extra: Any = None) -> None:
        self._adopt(store, key, exposed, manager_class, extra)

    def _adopt(self, store: Any, key: int, exposed: Any, manager_class: Any, extra: Any) -> None:
        object.__setattr__(self, "_store", store)
        object.__setattr__(self, "_key", key)
        object.__setattr__(self, "_exposed", exposed)
        object.__setattr__(self, "_manager_class", manager_class)
        object.__setattr__(self, "_extra", extra)

    def __reduce__(self) -> Any:
        return _rebuild_proxy, (type(self), self._store.id, self._key, self._exposed,
                                self._manager_class, self._extra)

    def _callmethod(self, methodname: str, args: tuple = (), kwds: dict | None = None) -> Any:
        """Runs ``methodname`` on the object in the master."""
        exposed = self._exposed
        if exposed is not None and methodname not in exposed:
            raise AttributeError(f"method {methodname!r} of {self!r} is not exposed")
        typeid = (self._method_to_typeid_ or {}).get(methodname)
        if typeid is None and self._manager_class is not None and self._extra is not None:
            typeid = (self._extra.get("method_to_typeid") or {}).get(methodname)
        if typeid is None:
            return _request(self._store, "call", self._key, methodname, tuple(args), kwds)
        key, methods = _request(self._store, "call_kept", self._key, methodname, tuple(args),
                                kwds)
        return self._manager_class._proxy_for(typeid, self._store, key, methods)

    def _getvalue(self) -> Any:
        """A copy of the object."""
        return _request(self._store, "value", self._key, None)

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} object, key={self._key} "
                f"in the store {self._store.id}>")

    def __str__(self) -> str:
        """The object's own repr, made in the master."""
        try:
            return _request(self._store, "call", self._key, "__repr__")
        except Exception:
            return repr(self)


def _method(name: str) -> Callable[..., Any]:
    def call(self: BaseProxy, *args: Any, **kwds: Any) -> Any:
        return self._callmethod(name, args, kwds)
    call.__name__ = name
    call.__doc__ = f"Runs ``{name}`` on the object in the master."
    return call


def MakeProxyType(name: str, exposed: Any, _cache: dict = {}) -> type:  # noqa: B006, N802
    """A proxy class with a method for each name of ``exposed``, as multiprocessing's."""
    exposed = tuple(exposed)
    # Pickled by reference, as the caller's module-level name.
    module = sys._getframe(1).f_globals.get("__name__", __name__)
    try:
        return _cache[(module, name, exposed)]
    except KeyError:
        pass
    namespace: dict[str, Any] = {name_: _method(name_) for name_ in exposed}
    namespace["_exposed_"] = exposed
    namespace["__module__"] = module
    proxy_type = type(name, (BaseProxy,), namespace)
    _cache[(module, name, exposed)] = proxy_type
    return proxy_type


class AutoProxy(BaseProxy):
    """The proxy of a registered type without a proxy type of its own: the object's public
    methods (or the ``exposed`` ones), looked up when called."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        exposed = self._exposed
        if exposed is not None and name not in exposed:
            raise AttributeError(f"{self!r} exposes no method {name!r}")
        return lambda *args, **kwds: self._callmethod(name, args, kwds)


class _SnapshotIteration:
    def __iter__(self) -> Any:
        return iter(self._callmethod("copy"))  # type: ignore[attr-defined]


_DICT_METHODS = ("__contains__", "__delitem__", "__getitem__", "__len__", "__setitem__",
                 "clear", "copy", "get", "items", "keys", "pop", "popitem", "setdefault",
                 "update", "values")


_DictBase = MakeProxyType("_DictBase", _DICT_METHODS)


class DictProxy(_SnapshotIteration, _DictBase):  # type: ignore
    """A managed dict. Iteration walks a snapshot of its keys; ``keys()``, ``values()`` and
    ``items()`` return lists. Proxies compare by identity, as multiprocessing's: compare
    ``copy()``s for the contents."""

    def __iter__(self) -> Any:
        return iter(self._callmethod("keys"))


_LIST_METHODS = ("__add__", "__contains__", "__delitem__", "__getitem__", "__len__", "__mul__",
                 "__reversed__", "__rmul__", "__setitem__", "append", "count", "extend", "index",
                 "insert", "pop", "remove", "reverse", "sort", "copy", "clear", "__imul__")


_ListBase = MakeProxyType("_ListBase", _LIST_METHODS)


class ListProxy(_SnapshotIteration, _ListBase):  # type: ignore
    """A managed list. Iteration walks a snapshot; ``+=`` and ``*=`` change it in place."""

    def __iadd__(self, other: Any) -> ListProxy:
        self._callmethod("extend", (other,))
        return self

    def __imul__(self, times: Any) -> ListProxy:
        self._callmethod("__imul__", (times,))
        return self


class Namespace:
    """A plain object whose attributes a manager keeps (``Manager().Namespace()``)."""

    def __init__(self, **kwds: Any) -> None:
        self.__dict__.update(kwds)

    def __repr__(self) -> str:
        items = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items() if not k.startswith("_"))
        return f"Namespace({items})"


class NamespaceProxy(BaseProxy):
    """A managed Namespace: reading, setting and deleting an attribute (not starting with ``_``)
    happen in the master."""

    _exposed_ = ("__getattribute__", "__setattr__", "__delattr__")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return _request(self._store, "getattr", self._key, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            _request(self._store, "setattr", self._key, name, (value,))

    def __delattr__(self, name: str) -> None:
        if name.startswith("_"):
            object.__delattr__(self, name)
        else:
            _request(self._store, "delattr", self._key, name)



class _ValueHolder:
    """A managed Value: a value and the typecode it was made with."""

    def __init__(self, typecode: Any, value: Any, lock: Any = True) -> None:
        self._typecode = typecode
        self._value = value

    def get(self) -> Any:
        return self._value

    def set(self, value: Any) -> None:
        self._value = value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._typecode!r}, {self._value!r})"


_ValueBase = MakeProxyType("_ValueBase", ("get", "set"))


class ValueProxy(_ValueBase):  # type: ignore[misc]
    """A managed Value: ``value`` reads and sets it in the master."""

    @property
    def value(self) -> Any:
        return self._callmethod("get")

    @value.setter
    def value(self, new: Any) -> None:
        self._callmethod("set", (new,))


ArrayProxy = MakeProxyType("ArrayProxy", ("__len__", "__getitem__", "__setitem__", "tolist"))


def _managed_array(typecode: str, sequence: Any, lock: Any = True) -> array.array:
    return array.array(typecode, sequence)


# ------------------------------------------------------------------ managers

class BaseManager:
    """A manager whose objects the master keeps; subclasses ``register`` the types they serve,
    as with :class:`multiprocessing.managers.BaseManager`.

    ``start()`` (or ``with``) makes its store; ``shutdown()`` drops every object it made."""

    _registry: dict[str, dict[str, Any]] = {}

    def __init__(self, address: Any = None, authkey: bytes | None = None,
                 serializer: str = "pickle", ctx: Any = None, *,
                 shutdown_timeout: float = 1.0) -> None:
        if address is not None:
            raise UsageError(
                "a fibermpi manager has no address: its objects live in the program's master, "
                "and only the program's processes reach them (pass no address)")
        if serializer != "pickle":
            raise UsageError(f"fibermpi managers pickle; serializer {serializer!r} is not one")
        self._store: Any = None
        self._shut_down = False

    def __reduce__(self) -> Any:
        return _rebuild_manager, (type(self), self._store.id if self._store else None,
                                  self._shut_down)

    @classmethod
    def register(cls, typeid: str, callable: Callable[..., Any] | None = None,
                 proxytype: type | None = None, exposed: Any = None,
                 method_to_typeid: dict[str, str] | None = None,
                 create_method: bool = True) -> None:
        """Serves ``typeid``: ``manager.<typeid>(*args, **kwds)`` makes ``callable(*args,
        **kwds)`` in the master and returns a proxy of it (``proxytype``, else an
        :class:`AutoProxy` of the object's public methods or of ``exposed``). A method named in
        ``method_to_typeid`` returns a proxy of its result, of that typeid."""
        if "_registry" not in cls.__dict__:
            cls._registry = dict(cls._registry)
        if proxytype is not None:
            exposed = exposed if exposed is not None else getattr(proxytype, "_exposed_", None)
            method_to_typeid = method_to_typeid or getattr(proxytype, "_method_to_typeid_", None)
        cls._registry[typeid] = {
            "callable": callable, "proxytype": proxytype,
            "exposed": tuple(exposed) if exposed is not None else None,
            "method_to_typeid": dict(method_to_typeid) if method_to_typeid else None,
        }
        if create_method:
            def create(self: BaseManager, *args: Any, **kwds: Any) -> Any:
                return self._create(typeid, *args, **kwds)
            create.__name__ = typeid
            create.__doc__ = f"A new {typeid}, kept by the manager in the master; its proxy."
            setattr(cls, typeid, create)

    @classmethod
    def _proxy_for(cls, typeid: str, store: Any, key: int, methods: list[str]) -> Any:
        entry = cls._registry.get(typeid)
        if entry is None:
            raise UsageError(f"{cls.__name__} has no registered typeid {typeid!r}")
        proxytype = entry["proxytype"] or AutoProxy
        exposed = entry["exposed"] if entry["exposed"] is not None else tuple(methods)
        extra = {"method_to_typeid": entry["method_to_typeid"]}
        return proxytype(store, key, exposed, cls, extra)

    def _create(self, typeid: str, *args: Any, **kwds: Any) -> Any:
        entry = type(self)._registry.get(typeid)
        if entry is None or entry["callable"] is None:
            raise UsageError(f"{type(self).__name__} has no callable registered for {typeid!r}")
        self._check_running()
        key, methods = _request(self._store, "create", 0, entry["callable"], args, kwds)
        return type(self)._proxy_for(typeid, self._store, key, methods)

    def _check_running(self) -> None:
        if self._shut_down:
            raise UsageError("the manager was shut down")
        if self._store is None:
            raise UsageError("the manager is not started: call start() or use it in a with block")

    def start(self, initializer: Callable[..., Any] | None = None, initargs: tuple = ()) -> None:
        """Makes the manager's store in the master; ``initializer(*initargs)`` runs there
        first."""
        if self._store is not None:
            raise UsageError("the manager is started already")
        if initializer is not None and not callable(initializer):
            raise TypeError("initializer must be a callable")
        _runtime.ensure_started(starts_processes=False)
        self._store = _core.ObjectRef.create_store()
        _request(self._store, "bind", 0, self._store.id)
        if initializer is not None:
            _request(self._store, "run", 0, initializer, tuple(initargs))

    def shutdown(self) -> None:
        """Drops every object the manager made; their proxies fail from then on."""
        if self._store is not None and not self._shut_down:
            _request(self._store, "shutdown", 0, None)
        self._shut_down = True

    def join(self, timeout: float | None = None) -> None:
        """Nothing to wait for: there is no manager process."""

    def connect(self) -> None:
        raise UsageError("a fibermpi manager cannot be connected to: pass the manager (or its "
                         "proxies) to the processes that use it")

    def get_server(self) -> Any:
        raise UsageError("a fibermpi manager has no server of its own: the master serves it")

    @property
    def address(self) -> None:
        return None

    def __enter__(self) -> BaseManager:
        if self._store is None:
            self.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.shutdown()


def _rebuild_manager(cls: type, store_id: int | None, shut_down: bool) -> BaseManager:
    manager = cls.__new__(cls)
    manager._store = _core.ObjectRef(store_id) if store_id is not None else None
    manager._shut_down = shut_down
    return manager


class SyncManager(BaseManager):
    """The manager ``Manager()`` returns: ``dict``, ``list``, ``Namespace``, ``Value`` and
    ``Array`` kept in the master; ``Queue``, ``JoinableQueue`` and the synchronization primitives
    are fibermpi's own."""

    def Queue(self, maxsize: int = 0) -> queues.Queue:  # noqa: N802
        self._check_running()
        return queues.Queue(maxsize)

    def JoinableQueue(self, maxsize: int = 0) -> queues.JoinableQueue:  # noqa: N802
        self._check_running()
        return queues.JoinableQueue(maxsize)

    def Lock(self) -> synchronize.Lock:  # noqa: N802
        self._check_running()
        return synchronize.Lock()

    def RLock(self) -> synchronize.RLock:  # noqa: N802
        self._check_running()
        return synchronize.RLock()

    def Semaphore(self, value: int = 1) -> synchronize.Semaphore:  # noqa: N802
        self._check_running()
        return synchronize.Semaphore(value)

    def BoundedSemaphore(self, value: int = 1) -> synchronize.BoundedSemaphore:  # noqa: N802
        self._check_running()
        return synchronize.BoundedSemaphore(value)

    def Condition(self, lock: Any = None) -> synchronize.Condition:  # noqa: N802
        self._check_running()
        return synchronize.Condition(lock)

    def Event(self) -> synchronize.Event:  # noqa: N802
        self._check_running()
        return synchronize.Event()

    def Barrier(self, parties: int, action: Any = None,  # noqa: N802
                timeout: float | None = None) -> synchronize.Barrier:
        self._check_running()
        return synchronize.Barrier(parties, action, timeout)


SyncManager.register("dict", dict, DictProxy)
SyncManager.register("list", list, ListProxy)
SyncManager.register("Namespace", Namespace, NamespaceProxy)
SyncManager.register("Value", _ValueHolder, ValueProxy)
SyncManager.register("Array", _managed_array, ArrayProxy)


def Manager() -> SyncManager:  # noqa: N802
    """A started :class:`SyncManager` (use it in a ``with`` block to shut it down)."""
    manager = SyncManager()
    manager.start()
    return manager

