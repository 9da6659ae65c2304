"""fibermpi.Pool against multiprocessing.Pool's semantics: values, order, exceptions with their
own types and the worker's traceback, callbacks, timeouts, bad input that loses nothing."""

from __future__ import annotations

import multiprocessing
import multiprocessing.pool
import os
import pickle
import threading
import time

import pytest

import fibermpi


def square(x):
    return x * x


def add(x, y):
    return x + y


def fail_on(x, bad):
    if x == bad:
        raise KeyError(f"input {x} is bad")
    return x


def sleep_then(seconds, value):
    time.sleep(seconds)
    return value


def pid_of(_):
    return os.getpid()


class Custom(Exception):
    def __init__(self, code, text):
        super().__init__(code, text)
        self.code = code


def raise_custom():
    raise Custom(7, "custom failure")


class Unpicklable:
    def __reduce__(self):
        raise TypeError("this object refuses to be pickled")


def return_unpicklable():
    return Unpicklable()


_initialized = None


def remember(value):
    global _initialized
    _initialized = value


def initialized(_):
    return _initialized


@pytest.fixture(scope="module")
def pool():
    with fibermpi.Pool(2) as running:
        yield running


def test_map_is_in_order_and_exact(pool):
    assert pool.map(square, range(100)) == [x * x for x in range(100)]
    assert pool.map(square, range(100), chunksize=7) == [x * x for x in range(100)]
    assert pool.map(square, []) == []


def test_apply_starmap_and_the_async_forms(pool):
    assert pool.apply(add, (2, 3)) == 5
    assert pool.apply(add, (), {"x": 1, "y": 2}) == 3
    assert pool.starmap(add, [(1, 2), (3, 4)]) == [3, 7]
    assert pool.apply_async(square, (9,)).get(timeout=60) == 81
    assert pool.map_async(square, [1, 2, 3]).get(timeout=60) == [1, 4, 9]
    assert pool.starmap_async(add, [(1, 1)]).get(timeout=60) == [2]


def test_imap_in_order_and_imap_unordered_complete(pool):
    assert list(pool.imap(square, range(50))) == [x * x for x in range(50)]
    assert list(pool.imap(square, range(50), chunksize=8)) == [x * x for x in range(50)]
    assert sorted(pool.imap_unordered(square, range(50))) == sorted(x * x for x in range(50))
    iterator = pool.imap(square, [3])
    assert iterator.next(timeout=60) == 9
    with pytest.raises(StopIteration):
        iterator.next(timeout=60)


def test_lambdas_closures_and_nested_functions_travel_by_value(pool):
    offset = 10
    assert pool.map(lambda x: x + offset, [1, 2]) == [11, 12]

    def nested(x):
        return x * offset
    assert pool.apply(nested, (3,)) == 30


def test_a_task_exception_keeps_its_type_and_the_worker_traceback(pool):
    with pytest.raises(KeyError, match="input 3 is bad") as raised:
        pool.starmap(fail_on, [(x, 3) for x in range(5)])
    cause = raised.value.__cause__
    assert isinstance(cause, multiprocessing.pool.RemoteTraceback)
    assert "fail_on" in str(cause) and "KeyError" in str(cause)
    with pytest.raises(Custom) as custom:
        pool.apply(raise_custom)
    assert custom.value.code == 7
    # The pool goes on.
    assert pool.apply(square, (4,)) == 16


def test_an_unpicklable_result_is_maybe_encoding_error_and_the_pool_goes_on(pool):
    with pytest.raises(multiprocessing.pool.MaybeEncodingError, match="refuses to be pickled"):
        pool.apply(return_unpicklable)
    assert pool.apply(square, (5,)) == 25


def test_an_unpicklable_argument_fails_that_call_naming_it(pool):
    with pytest.raises(TypeError, match="refuses to be pickled"):
        pool.apply(square, (Unpicklable(),))
    with pytest.raises(TypeError, match="lock"):
        pool.map(square, [threading.Lock()])
    assert pool.map(square, [6]) == [36]


def test_callbacks_and_error_callbacks(pool):
    values, errors = [], []
    done = threading.Event()
    pool.apply_async(square, (3,), callback=values.append, error_callback=errors.append).wait(60)
    pool.apply_async(fail_on, (1, 1), callback=values.append,
                     error_callback=lambda e: (errors.append(e), done.set())).wait(60)
    result = pool.map_async(square, [1, 2], callback=values.append)
    result.wait(60)
    assert done.wait(60)
    deadline = time.monotonic() + 30
    while len(values) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert values == [9, [1, 4]] or values == [[1, 4], 9]
    assert len(errors) == 1 and isinstance(errors[0], KeyError)


def test_a_result_is_ready_once_its_callback_returned(pool):
    # As in multiprocessing: get(), wait() and ready() see the callback's work done.
    seen = []

    def slow_append(value):
        time.sleep(0.3)
        seen.append(value)

    results = [pool.apply_async(square, (i,), callback=slow_append) for i in range(3)]
    assert [result.get(60) for result in results] == [0, 1, 4]
    assert sorted(seen) == [0, 1, 4]
    failed = pool.apply_async(fail_on, (1, 1), error_callback=lambda e: (time.sleep(0.3),
                                                                          seen.append(e)))
    failed.wait(60)
    assert failed.ready() and isinstance(seen[-1], KeyError)
    pending = pool.apply_async(square, (5,), callback=slow_append)
    with pytest.raises(fibermpi.TimeoutError):
        pending.get(timeout=0.01)
    assert pending.get(60) == 25 and seen[-1] == 25
    # A callback that gets another result: no deadlock, whichever callback runs first.
    inner = pool.apply_async(square, (6,), callback=seen.append)
    outer = pool.apply_async(square, (7,), callback=lambda v: seen.append((v, inner.get(60))))
    assert outer.get(60) == 49 and (49, 36) in seen


def test_checking_ready_in_a_loop_does_not_hold_results_up(pool):
    # A check polls MPI itself and does not make fibermpi's progress thread stand aside: a loop
    # of checks and short sleeps once kept 300 results waiting about a minute.
    called_back = []
    results = [pool.apply_async(square, (i,), callback=called_back.append) for i in range(300)]
    deadline = time.monotonic() + 20
    while not all(result.ready() for result in results) and time.monotonic() < deadline:
        time.sleep(0.001)
    assert sorted(called_back) == [i * i for i in range(300)]


def test_ready_successful_and_timeouts(pool):
    slow = pool.apply_async(sleep_then, (2, "late"))
    assert not slow.ready()
    with pytest.raises(ValueError):
        slow.successful()
    with pytest.raises(fibermpi.TimeoutError) as timed_out:
        slow.get(timeout=0.05)
    assert isinstance(timed_out.value, multiprocessing.TimeoutError)
    assert slow.get(timeout=60) == "late"
    assert slow.ready() and slow.successful()
    failed = pool.apply_async(fail_on, (2, 2))
    failed.wait(60)
    assert failed.ready() and not failed.successful()


def test_initializer_runs_in_every_worker():
    with fibermpi.Pool(2, initializer=remember, initargs=("set",)) as pool:
        assert set(pool.map(initialized, range(8), chunksize=1)) == {"set"}


def test_closed_and_terminated_pools_refuse_work():
    pool = fibermpi.Pool(1)
    with pytest.raises(ValueError, match="still running"):
        pool.join()
    pool.close()
    with pytest.raises(ValueError, match="Pool not running"):
        pool.apply(square, (1,))
    pool.join()
    called_back = []
    with fibermpi.Pool(1) as pool:
        pending = pool.apply_async(sleep_then, (2, None), error_callback=called_back.append)
        time.sleep(0.2)
    with pytest.raises(fibermpi.TerminatedError):
        pending.get(timeout=60)
    deadline = time.monotonic() + 30
    while not called_back and time.monotonic() < deadline:
        time.sleep(0.01)
    # The error callback gets the error's own class, as get() raises it.
    assert [type(error) for error in called_back] == [fibermpi.TerminatedError]
    with pytest.raises(ValueError, match="Pool not running"):
        pool.map(square, [1])
    # A rank of a launcher's world is not killed by terminate(): it finishes the running task,
    # then serves again. A program that ends before that ends with the launcher's failure status
    # (the C++ pool test waits the same way).
    if os.environ.get("OMPI_COMM_WORLD_SIZE"):
        time.sleep(3)


def test_bad_arguments_are_refused_before_any_worker_starts():
    with pytest.raises(ValueError, match="processes must be at least 1"):
        fibermpi.Pool(0)
    with pytest.raises(TypeError, match="initializer"):
        fibermpi.Pool(1, initializer=5)
    with pytest.raises(ValueError, match="maxtasksperchild"):
        fibermpi.Pool(1, maxtasksperchild=0)
    with pytest.raises(TypeError, match="func must be callable"):
        with fibermpi.Pool(1) as pool:
            pool.map(5, [1])
    with pytest.raises(NotImplementedError):
        with fibermpi.Pool(1) as pool:
            pickle.dumps(pool)


def test_resize_and_fibers_waits():
    with fibermpi.Pool(1) as pool:
        pool.wait_until_workers_up()
        pool.resize(2)
        pool.wait_until_workers_up()
        assert pool._processes == 2
        assert pool.map(square, range(20)) == [x * x for x in range(20)]
        pool.resize(1)
        assert pool.map(square, range(5)) == [0, 1, 4, 9, 16]


def test_errors_are_multiprocessing_errors():
    assert issubclass(fibermpi.Error, multiprocessing.ProcessError)
    assert issubclass(fibermpi.TimeoutError, multiprocessing.TimeoutError)
    assert issubclass(fibermpi.UsageError, ValueError)
    assert issubclass(fibermpi.ConfigError, fibermpi.UsageError)
    for name in ("WorkerLost", "SpawnError", "RemoteError", "TerminatedError"):
        assert issubclass(getattr(fibermpi, name), fibermpi.Error)
