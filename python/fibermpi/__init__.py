"""fibermpi: Python's :mod:`multiprocessing` API over fibermpi's C++ engine on MPI.

    import fibermpi as mp

    def fitness(params): ...

    if __name__ == "__main__":
        with mp.Pool(8) as pool:
            print(pool.map(fitness, population))

The same program runs as ``python prog.py`` (workers are spawned), under a launcher
(``fibermpi run -n 8 python prog.py``, ``mpirun``, Slurm: ranks 1..n-1 serve as workers and the
code under ``if __name__ == "__main__":`` runs on rank 0 alone) and in a FiberJob on Kubernetes.
A :class:`Group` runs an mpi4py program's body in processes that share a real MPI communicator
(:func:`group_comm`), the port path for SPMD codes written for ``mpirun``.
Tasks run again elsewhere when their worker dies, and every result arrives once.

A worker process starts serving when it imports fibermpi, and never returns from that import.
"""

from fibermpi.context import (cpu_count, freeze_support, get_all_start_methods, get_context,
                              get_start_method, set_start_method)
from fibermpi.errors import (ConfigError, Error, RemoteError, SpawnError, TerminatedError,
                             TimeoutError, UsageError, WorkerLost)
from fibermpi.pool import AsyncResult, Autoscale, IMapIterator, MapResult, Pool
from fibermpi.process import Process, active_children, current_process, parent_process
from fibermpi.group import Group, group_comm, group_rank, group_restarts, group_size
from fibermpi.queues import JoinableQueue, Queue, SimpleQueue
from fibermpi.connection import Pipe
from fibermpi.synchronize import (Barrier, BoundedSemaphore, Condition, Event, Lock, RLock,
                                  Semaphore)
from fibermpi.sharedctypes import Array, RawArray, RawValue, Value
from fibermpi.managers import Manager
from fibermpi._meta import meta
from fibermpi._runtime import init

__all__ = [
    "Pool", "AsyncResult", "MapResult", "IMapIterator", "Autoscale",
    "Process", "current_process", "active_children", "parent_process",
    "Group", "group_comm", "group_rank", "group_size", "group_restarts",
    "SimpleQueue", "Queue", "JoinableQueue", "Pipe",
    "Lock", "RLock", "Semaphore", "BoundedSemaphore", "Condition", "Event", "Barrier",
    "Value", "Array", "RawValue", "RawArray", "Manager",
    "cpu_count", "get_context", "set_start_method", "get_start_method", "get_all_start_methods",
    "freeze_support", "init", "meta",
    "Error", "TimeoutError", "WorkerLost", "SpawnError", "RemoteError", "TerminatedError",
    "UsageError", "ConfigError",
]

__version__ = "0.1.0"

# Last, once every name above exists: a worker (and every rank under a launcher) starts here. A
# worker serves tasks from here on and imports the program's main module again as __mp_main__,
# which finds this module complete.
from fibermpi import _runtime as _start_here  # noqa: E402

_start_here.start_if_worker()
del _start_here
