"""``fibermpi.meta``: Fiber's decorator that says what a function needs to run.

    @fibermpi.meta(cpu=2, memory=4096, gpu=1)
    def train(config): ...

    fibermpi.Process(target=train, args=(config,)).start()

A Process whose target (or, for a subclass, whose ``run``) carries it is bound to ``cpu`` cores
of its own and given ``gpu`` GPUs of its host (``CUDA_VISIBLE_DEVICES``) while it runs, as a
Pool's ``cpus_per_worker`` and ``gpus_per_worker`` are; ``memory`` (MB, as Fiber has it) is checked
against what the program's place can give one process (a Slurm allocation's node, a FiberJob's
worker pod, this machine). A request that cannot fit fails ``start()`` with
:class:`fibermpi.UsageError` naming both sides. For a Pool, give the same through its
``cpus_per_worker``, ``memory_per_worker`` (bytes) and ``gpus_per_worker``.
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

__all__ = ["meta", "requirements_of"]

F = TypeVar("F", bound=Callable[..., Any])

_ATTRIBUTE = "__fibermpi_meta__"
_FIBERS = "__fiber_meta__"  # what Fiber's own decorator sets: read too
_KEYS = ("cpu", "memory", "gpu")


def meta(*, cpu: int | None = None, memory: int | None = None, gpu: int | None = None) -> Callable[[F], F]:
    """Marks a function with what it needs: ``cpu`` cores, ``memory`` MB, ``gpu`` GPUs (each a
    positive int, or None for no particular need)."""
    wanted = {"cpu": cpu, "memory": memory, "gpu": gpu}
    for key, value in wanted.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"fibermpi.meta: {key} must be an int, not {type(value).__name__}")
        if value < 1:
            raise ValueError(f"fibermpi.meta: {key} must be at least 1 (got {value})")
    wanted = {key: value for key, value in wanted.items() if value is not None}

    def mark(function: F) -> F:
        if not callable(function):
            raise TypeError(f"fibermpi.meta decorates a callable, not {function!r}")
        setattr(function, _ATTRIBUTE, dict(wanted))
        return function
    return mark


def requirements_of(function: Any) -> dict[str, int]:
    """What ``function`` was marked with (fibermpi's or Fiber's decorator, which names memory
    ``mem``); {} when nothing. ``fibermpi.UsageError`` for a value that is not a positive int."""
    from fibermpi.errors import UsageError
    for attribute in (_ATTRIBUTE, _FIBERS):
        found = getattr(function, attribute, None)
        if not isinstance(found, dict):
            continue
        found = dict(found)
        if "memory" not in found and "mem" in found:
            found["memory"] = found["mem"]
        wanted = {key: found[key] for key in _KEYS if found.get(key) is not None}
        for key, value in wanted.items():
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value < 2**43:
                raise UsageError(f"{getattr(function, '__qualname__', function)!r} asks for "
                                 f"{key}={value!r}: a positive int (memory in MB) is needed")
        return wanted
    return {}
