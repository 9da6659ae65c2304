"""fibermpi.Process against multiprocessing.Process: exit codes, subclasses, names, sentinels,
the states a Process object goes through."""

from __future__ import annotations

import multiprocessing.connection
import os
import select
import signal
import sys
import time

import pytest

import fibermpi


def exit_with(code):
    sys.exit(code)


def raise_error():
    raise RuntimeError("uncaught in a process")


def sleep_for(seconds):
    time.sleep(seconds)


def report_name(expected):
    process = fibermpi.current_process()
    if process.name != expected or process.pid != os.getpid():
        sys.exit(9)


class Subclass(fibermpi.Process):
    def __init__(self, code):
        super().__init__()
        self.code = code

    def run(self):
        sys.exit(self.code)


@pytest.mark.parametrize("target,args,code", [
    (exit_with, (0,), 0), (exit_with, (None,), 0), (exit_with, (3,), 3), (exit_with, ("text",), 1),
    (raise_error, (), 1), (sleep_for, (0,), 0),
])
def test_exit_codes(target, args, code):
    process = fibermpi.Process(target=target, args=args)
    assert process.exitcode is None and not process.is_alive()
    process.start()
    process.join(timeout=120)
    assert process.exitcode == code
    assert not process.is_alive()


def test_a_subclass_runs_its_own_run():
    process = Subclass(4)
    process.start()
    process.join(120)
    assert process.exitcode == 4


def test_terminate_gives_minus_sigterm():
    process = fibermpi.Process(target=sleep_for, args=(60,), daemon=True)
    process.start()
    deadline = time.monotonic() + 60
    while not process.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    process.terminate()
    process.join(60)
    assert process.exitcode == -signal.SIGTERM


def ignore_sigterm_forever(ready):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    ready.put(True)
    while True:
        time.sleep(0.01)


def test_kill_ends_a_process_that_ignores_sigterm():
    ready = fibermpi.SimpleQueue()
    process = fibermpi.Process(target=ignore_sigterm_forever, args=(ready,))
    process.start()
    assert ready.get() is True
    process.terminate()
    process.join(0.5)
    assert process.exitcode is None, "SIGTERM was ignored: the process must still run"
    process.kill()
    process.join(60)
    assert process.exitcode == -signal.SIGKILL


def test_names_and_current_process():
    assert fibermpi.current_process().name == "MainProcess"
    process = fibermpi.Process(target=report_name, args=("worker-a",), name="worker-a")
    assert process.name == "worker-a"
    assert repr(process).startswith("<Process name='worker-a' initial")
    process.start()
    assert process.pid > 0
    process.join(120)
    assert process.exitcode == 0
    assert "stopped exitcode=0" in repr(process)


def test_join_with_timeout_and_active_children():
    process = fibermpi.Process(target=sleep_for, args=(2,))
    process.start()
    process.join(timeout=0.05)
    assert process.exitcode is None
    assert process in fibermpi.active_children()
    process.join()
    assert process.exitcode == 0
    assert process not in fibermpi.active_children()


def test_active_children_lists_a_live_pools_workers_and_not_after_it_ends():
    before = len(fibermpi.active_children())
    with fibermpi.Pool(2) as pool:
        pool.wait_until_workers_up()
        workers = [child for child in fibermpi.active_children() if child.name.startswith("PoolWorker-")]
        assert sorted(worker.pid for worker in workers) == sorted(pool._pool.worker_pids())
        assert all(worker.is_alive() and worker.daemon for worker in workers)
        assert fibermpi.active_children()[-1] is workers[-1]  # the same objects each time
    assert len(fibermpi.active_children()) == before
    assert not any(worker.is_alive() for worker in workers)


def test_sentinel_becomes_readable_at_the_end():
    process = fibermpi.Process(target=sleep_for, args=(0.5,))
    process.start()
    sentinel = process.sentinel
    assert multiprocessing.connection.wait([sentinel], timeout=120) == [sentinel]
    assert select.select([sentinel], [], [], 0)[0] == [sentinel]
    process.join(60)
    assert process.exitcode == 0


def test_misuse_is_refused():
    process = fibermpi.Process(target=sleep_for, args=(0,))
    with pytest.raises(AssertionError, match="can only join a started process"):
        process.join()
    process.start()
    with pytest.raises(AssertionError, match="cannot start a process twice"):
        process.start()
    with pytest.raises(AssertionError, match="already started"):
        process.daemon = True
    process.join(120)
    process.close()
    with pytest.raises(ValueError, match="closed"):
        process.is_alive()
    running = fibermpi.Process(target=sleep_for, args=(1,))
    running.start()
    with pytest.raises(ValueError, match="still running"):
        running.close()
    running.join(120)
    with pytest.raises(ValueError, match="group"):
        fibermpi.Process(group=1)


def test_module_helpers():
    assert fibermpi.cpu_count() == os.cpu_count()
    assert fibermpi.get_start_method() == "fibermpi"
    assert fibermpi.get_context() is fibermpi
    with pytest.raises(ValueError, match="fibermpi"):
        fibermpi.set_start_method("fork")
    fibermpi.freeze_support()


def test_meta_marks_a_function_and_refuses_bad_values():
    @fibermpi.meta(cpu=2, gpu=1)
    def marked():
        pass
    assert marked.__fibermpi_meta__ == {"cpu": 2, "gpu": 1}
    with pytest.raises(ValueError, match="cpu must be at least 1"):
        fibermpi.meta(cpu=0)
    with pytest.raises(TypeError, match="memory must be an int"):
        fibermpi.meta(memory=1.5)
    with pytest.raises(TypeError):
        fibermpi.meta(disk=3)

    def fibers_own():  # what Fiber's @fiber.meta(cpu=2, memory=100) leaves on a function
        pass
    fibers_own.__fiber_meta__ = {"cpu": 2, "mem": 100}
    assert fibermpi._meta.requirements_of(fibers_own) == {"cpu": 2, "memory": 100}
    fibers_own.__fiber_meta__ = {"cpu": 1.5}
    with pytest.raises(fibermpi.UsageError, match="cpu=1.5: a positive int"):
        fibermpi._meta.requirements_of(fibers_own)


def map_in_a_nested_pool(report):
    with fibermpi.Pool(2) as pool:
        report.put(pool.map(abs, range(-5, 0)))


def start_a_nested_process(value):
    report = fibermpi.Queue()
    child = fibermpi.Process(target=report.put, args=(value * 10,))
    child.start()
    child.join(60)
    return child.exitcode, report.get(timeout=60), child.name


def test_pools_and_processes_nest_inside_workers():
    report = fibermpi.Queue()
    process = fibermpi.Process(target=map_in_a_nested_pool, args=(report,))
    process.start()
    assert report.get(timeout=120) == [5, 4, 3, 2, 1]
    process.join(60)
    assert process.exitcode == 0
    with fibermpi.Pool(1) as pool:
        code, value, name = pool.apply(start_a_nested_process, (4,))
    assert (code, value) == (0, 40) and name.startswith("Process-")
