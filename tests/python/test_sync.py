"""fibermpi's Lock, RLock, Semaphore, BoundedSemaphore, Event, Condition, Barrier, Value and Array
against multiprocessing's semantics, shared by the master, Processes and pool workers."""

from __future__ import annotations

import ctypes
import threading
import time

import pytest

import fibermpi


def add_under_lock(counter, times):
    for _ in range(times):
        with counter.get_lock():
            counter.value += 1
    return times


def hold_until(lock, event, report):
    with lock:
        report.put("held")
        event.wait(30)


def wait_for_event(event, report):
    report.put(("set", event.wait(30)))


def wait_on_condition(condition, ready, report):
    with condition:
        report.put("waiting")
        notified = condition.wait_for(lambda: ready.value == 1, timeout=30)
        report.put(("woken", notified))


def arrive(barrier, report):
    report.put(barrier.wait(30))


def count_action(counter):
    with counter.get_lock():
        counter.value += 1


def release_twice(semaphore):
    semaphore.release()
    semaphore.release()


def fill(array, start, stop):
    for index in range(start, stop):
        array[index] = index * index


def test_a_lock_serialises_increments_of_a_value_across_pool_workers():
    counter = fibermpi.Value("i", 0)
    with fibermpi.Pool(3) as pool:
        assert pool.starmap(add_under_lock, [(counter, 40)] * 4) == [40] * 4
    assert counter.value == 160


def test_lock_acquire_timeout_and_release_of_an_unheld_lock():
    lock = fibermpi.Lock()
    assert lock.acquire() is True
    assert lock.acquire(block=False) is False
    started = time.monotonic()
    assert lock.acquire(timeout=0.2) is False
    assert time.monotonic() - started >= 0.15
    lock.release()
    with pytest.raises(ValueError, match="not held"):
        lock.release()


def test_a_process_holding_a_lock_keeps_the_master_out_until_it_releases():
    lock, event, report = fibermpi.Lock(), fibermpi.Event(), fibermpi.Queue()
    process = fibermpi.Process(target=hold_until, args=(lock, event, report))
    process.start()
    assert report.get(timeout=30) == "held"
    assert lock.acquire(timeout=0.1) is False
    event.set()
    assert lock.acquire(timeout=30) is True
    lock.release()
    process.join(30)
    assert process.exitcode == 0


def test_rlock_recursion_and_a_release_by_a_thread_that_does_not_hold_it():
    lock = fibermpi.RLock()
    assert lock.acquire() and lock.acquire()
    lock.release()
    problems = []

    def other():
        problems.append(lock.acquire(timeout=0.1))
        try:
            lock.release()
        except AssertionError as error:
            problems.append(str(error))
    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert problems == [False, "attempt to release recursive lock not owned by thread"]
    lock.release()
    assert lock.acquire(block=False)
    lock.release()


def test_semaphore_counts_and_a_bounded_one_refuses_an_extra_release():
    semaphore = fibermpi.Semaphore(2)
    assert semaphore.acquire() and semaphore.acquire()
    assert semaphore.acquire(timeout=0.1) is False
    assert semaphore.get_value() == 0
    process = fibermpi.Process(target=release_twice, args=(semaphore,))
    process.start()
    process.join(30)
    assert semaphore.acquire(timeout=30)
    assert semaphore.get_value() == 1
    bounded = fibermpi.BoundedSemaphore(1)
    with bounded:
        pass
    with pytest.raises(ValueError, match="released too many times"):
        bounded.release()
    with pytest.raises(ValueError):
        fibermpi.Semaphore(-1)


def test_an_event_set_in_the_master_wakes_a_process():
    event, report = fibermpi.Event(), fibermpi.Queue()
    assert event.wait(0.05) is False
    process = fibermpi.Process(target=wait_for_event, args=(event, report))
    process.start()
    time.sleep(0.2)
    event.set()
    assert report.get(timeout=30) == ("set", True)
    assert event.is_set()
    event.clear()
    assert not event.is_set()
    process.join(30)


def test_a_condition_notified_in_the_master_wakes_a_process_waiting_for_a_predicate():
    condition, report = fibermpi.Condition(), fibermpi.Queue()
    ready = fibermpi.Value("i", 0)
    process = fibermpi.Process(target=wait_on_condition, args=(condition, ready, report))
    process.start()
    assert report.get(timeout=30) == "waiting"
    with condition:
        ready.value = 1
        condition.notify_all()
    assert report.get(timeout=30) == ("woken", True)
    process.join(30)
    assert process.exitcode == 0
    with condition:
        assert condition.wait(0.05) is False
    with pytest.raises(RuntimeError, match="un-acquired lock"):
        condition.wait(0.01)
    with pytest.raises(RuntimeError, match="un-acquired lock"):
        condition.notify()


def test_a_barrier_passes_four_parties_with_distinct_indices_and_runs_its_action_once():
    runs = fibermpi.Value("i", 0)
    barrier, report = fibermpi.Barrier(4, action=lambda: count_action(runs)), fibermpi.Queue()
    processes = [fibermpi.Process(target=arrive, args=(barrier, report)) for _ in range(3)]
    for process in processes:
        process.start()
    indices = {barrier.wait(30)} | {report.get(timeout=30) for _ in processes}
    assert indices == {0, 1, 2, 3}
    for process in processes:
        process.join(30)
    assert runs.value == 1
    assert barrier.parties == 4 and barrier.n_waiting == 0 and not barrier.broken


def test_a_barrier_wait_that_times_out_breaks_it_until_reset():
    barrier = fibermpi.Barrier(2, timeout=0.2)
    with pytest.raises(threading.BrokenBarrierError):
        barrier.wait()
    assert barrier.broken
    with pytest.raises(threading.BrokenBarrierError):
        barrier.wait(5)
    barrier.reset()
    assert not barrier.broken
    barrier.abort()
    assert barrier.broken


def test_value_and_array_are_ctypes_kept_by_the_master():
    number = fibermpi.Value("d", 1.5)
    assert number.value == 1.5
    small = fibermpi.Value(ctypes.c_ubyte, 255, lock=False)
    small.value += 1  # C's overflow, as multiprocessing's shared ctypes
    assert small.value == 0
    assert not hasattr(small, "get_lock")
    array = fibermpi.Array("i", 10)
    with fibermpi.Pool(2) as pool:
        pool.starmap(fill, [(array, 0, 5), (array, 5, 10)])
    assert array[:] == [i * i for i in range(10)]
    assert len(array) == 10 and list(array)[-1] == 81 and array[-1] == 81
    text = fibermpi.Array("c", b"hello")
    assert text.value == b"hello" and text.raw == b"hello"
    with pytest.raises(TypeError):
        fibermpi.Value("i", 1.5)
    with pytest.raises(TypeError, match="unknown typecode"):
        fibermpi.Value("z", 1)
    own_lock = fibermpi.Lock()
    assert fibermpi.Value("i", 0, lock=own_lock).get_lock() == own_lock
    with pytest.raises(AttributeError, match="acquire"):
        fibermpi.Value("i", 0, lock=object())


def test_an_event_pulse_wakes_a_waiter_and_odd_timeouts_are_handled():
    event, woken = fibermpi.Event(), []
    waiter = threading.Thread(target=lambda: woken.append(event.wait(30)))
    waiter.start()
    time.sleep(0.5)  # the waiter waits now
    event.set()
    event.clear()
    waiter.join(30)
    assert woken == [True] and not event.is_set()
    lock = fibermpi.Lock()
    assert lock.acquire(timeout=float("inf"))  # threading.TIMEOUT_MAX and the like: no limit
    lock.release()
    event.set()
    assert event.wait(1e12) is True
    with pytest.raises(ValueError, match="not nan"):
        fibermpi.Lock().acquire(timeout=float("nan"))
    with pytest.raises(ValueError, match="released too many times"):
        fibermpi.BoundedSemaphore(0).release()


def test_structures_are_refused_by_value_with_the_reason():
    class Point(ctypes.Structure):
        _fields_ = [("x", ctypes.c_int), ("y", ctypes.c_int)]
    with pytest.raises(TypeError, match="simple ctypes types only .* structure Point"):
        fibermpi.Value(Point)
