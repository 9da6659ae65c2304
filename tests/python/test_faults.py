"""Faults, each in a program of its own: a pool worker SIGKILLed mid-map loses and repeats
nothing; a Process SIGKILLed ends with exit code -9; a lock holder SIGKILLed releases the lock, a
party SIGKILLed at a barrier breaks it."""

from __future__ import annotations

import pytest

from conftest import launch


@pytest.mark.parametrize("mode", ["singleton", "run4"])
def test_a_worker_killed_mid_map_and_a_killed_process(mode):
    done = launch(mode, "kill_mid_map.py", timeout=180)
    assert done.returncode == 0, done.stdout
    assert "KILLED " in done.stdout, done.stdout
    assert "MAP EXACT 300" in done.stdout, done.stdout
    assert "PROCESS EXITCODE -9" in done.stdout, done.stdout


@pytest.mark.parametrize("mode", ["singleton", "run4"])
def test_a_killed_lock_holder_releases_and_a_killed_barrier_party_breaks_it(mode):
    done = launch(mode, "kill_sync_holders.py", timeout=180)
    assert done.returncode == 0, done.stdout
    assert "HOLDER EXITCODE -9" in done.stdout, done.stdout
    assert "LOCK ACQUIRED True" in done.stdout, done.stdout
    assert "BARRIER BROKEN" in done.stdout and "killed by signal 9" in done.stdout, done.stdout
    assert "PARTY EXITCODE -9" in done.stdout, done.stdout
