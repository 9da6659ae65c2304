"""The exceptions fibermpi raises.

Every one derives from :class:`fibermpi.Error`, itself a :class:`multiprocessing.ProcessError`,
so code written against ``multiprocessing`` catches them where it caught that module's errors.
A task's own exception is raised in the caller with its own type (and the worker's traceback as
its ``__cause__``), not wrapped: these are fibermpi's errors about running it.
"""

from __future__ import annotations

import multiprocessing

__all__ = [
    "Error", "TimeoutError", "WorkerLost", "SpawnError", "RemoteError", "TerminatedError",
    "UsageError", "ConfigError",
]


class Error(multiprocessing.ProcessError):
    """Root of fibermpi's exceptions."""


class TimeoutError(Error, multiprocessing.TimeoutError):  # noqa: A001 - multiprocessing's name
    """A wait with a timeout (``AsyncResult.get(timeout)``, ``next(timeout)``) ran out of time."""


class WorkerLost(Error):
    """The worker processes running a task kept dying: it was run ``max_task_retries`` + 1 times
    and every process running it died before it finished."""


class SpawnError(Error):
    """A process could not be started (the MPI could not spawn it, or it was refused: another
    build of fibermpi, another protocol)."""


class RemoteError(Error):
    """A task raised an exception that cannot be rebuilt in the caller (its class cannot be
    imported or unpickled there): its type name, message and traceback, as text."""


class TerminatedError(Error):
    """The pool was terminated before the task finished."""


class UsageError(Error, ValueError):
    """The API was used in a way it cannot be: a bad argument, an object in the wrong state."""


class ConfigError(UsageError):
    """The runtime's configuration cannot be used (``fibermpi.init()``'s settings, ``fiber.yaml``,
    a ``FIBER_*`` variable); the message names the source, the key and what is wrong."""
