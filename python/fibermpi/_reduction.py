"""How Python objects travel to workers: pickle (functions of importable modules and of a script
file by reference, as multiprocessing's spawn sends them), and cloudpickle by value for what a
worker could not import (lambdas, closures, nested functions, the functions and classes of an
interactive session or of ``python -c``)."""

from __future__ import annotations

import io
import pickle
import sys

import cloudpickle

PROTOCOL = pickle.HIGHEST_PROTOCOL


def main_is_importable() -> bool:
    """The master's ``__main__`` can be imported again in a worker: a script file, or a module
    run with ``-m``. Not an interactive session, ``-c`` or stdin."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name not in (None, "__main__"):
        return True
    path = getattr(main, "__file__", None)
    return bool(path) and not str(path).startswith("<")


def dumps(obj: object, what: str = "object", importable_main: bool | None = None) -> bytes:
    """Pickled bytes of ``obj``; raises ``pickle.PicklingError`` (a ``TypeError`` for Python's own
    refusals) naming ``what`` when neither pickle nor cloudpickle can take it.
    ``importable_main``: :func:`main_is_importable`, where the caller knows it already."""
    if importable_main is None:
        importable_main = main_is_importable()
    if importable_main:
        try:
            return pickle.dumps(obj, PROTOCOL)
        except (pickle.PicklingError, AttributeError, TypeError):
            pass  # a lambda, a closure, a nested function: by value below
    try:
        buffer = io.BytesIO()
        cloudpickle.Pickler(buffer, protocol=PROTOCOL).dump(obj)
        return buffer.getvalue()
    except (pickle.PicklingError, TypeError, AttributeError) as error:
        message = f"fibermpi cannot send {what} to another process: {error}"
        try:
            refusal = type(error)(message)
        except Exception:  # an exception class with another signature
            refusal = pickle.PicklingError(message)
        raise refusal from error

loads = pickle.loads
