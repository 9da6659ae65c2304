"""multiprocessing's module-level helpers: one start method, ``"fibermpi"``."""

from __future__ import annotations

import os
import sys
from typing import Any

from fibermpi import _core

__all__ = ["cpu_count", "get_context", "set_start_method", "get_start_method",
           "get_all_start_methods", "freeze_support"]

START_METHOD = "fibermpi"


def cpu_count() -> int:
    """The CPUs of this machine (``os.cpu_count()``), as multiprocessing's; a Pool's default size
    is the usable physical cores instead (those the cgroup allows)."""
    count = os.cpu_count()
    if count is None:
        raise NotImplementedError("cannot determine number of cpus")
    return count


def get_all_start_methods() -> list[str]:
    return [START_METHOD]


def get_start_method(allow_none: bool = False) -> str:
    return START_METHOD


def set_start_method(method: str | None, force: bool = False) -> None:
    """Only ``"fibermpi"`` (or None) is accepted: workers are MPI processes, never forks."""
    if method not in (None, START_METHOD):
        raise ValueError(f"cannot find context for {method!r}: fibermpi has one start method, "
                         f"{START_METHOD!r}")


def get_context(method: str | None = None) -> Any:
    """The fibermpi module itself: its ``Pool``, ``Process``, ``Queue``... are the context's."""
    set_start_method(method)
    return sys.modules["fibermpi"]


def freeze_support() -> None:
    """Nothing to do: fibermpi's workers start as ``python -m fibermpi._worker``."""


def default_pool_size() -> int:
    """The workers a Pool() starts: usable physical cores, or a launcher's ranks less one."""
    return _core.default_pool_size()
