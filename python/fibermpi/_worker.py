"""The program fibermpi spawns as a worker: ``python -m fibermpi._worker``. Importing fibermpi
starts the engine, which serves tasks in this process until the master lets it go and never
returns here. The caller's ``sys.path``, working directory and ``__main__`` arrive with each
task (fibermpi._task)."""

import fibermpi  # noqa: F401  (serves, then exits)

raise SystemExit("fibermpi._worker: this process was not started by fibermpi as a worker "
                 "(FIBER_WORKER is not set); run a program that uses fibermpi instead")
