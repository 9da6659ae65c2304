"""fibermpi.Manager() and BaseManager.register against multiprocessing.managers: Python objects
kept in the master, changed in place by pool workers and Processes, nested proxies, the objects'
own exceptions, shutdown."""

from __future__ import annotations

import threading

import pytest

import fibermpi
from fibermpi.managers import BaseManager


class Counter:
    def __init__(self, start=0):
        self.count = start

    def add(self, amount=1):
        self.count += amount
        return self.count

    def child(self):
        return Counter(self.count * 10)

    def get(self):
        return self.count


class CounterManager(BaseManager):
    pass


CounterManager.register("Counter", Counter, method_to_typeid={"child": "Counter"})


def record(shared, log, key):
    shared[key] = key * key
    log.append(key)
    shared["nested"].append(key)
    return key


def make_in_a_worker(size):
    manager = fibermpi.Manager()  # its store lives in the master, like the master's own
    made = manager.list(range(size))
    value = fibermpi.Value("i", size)
    return manager, made, value


def bump(counter, times):
    for _ in range(times):
        counter.add()


def test_a_managed_dict_and_list_are_changed_in_place_by_pool_workers():
    with fibermpi.Manager() as manager:
        shared, log = manager.dict(), manager.list()
        shared["nested"] = manager.list()
        with fibermpi.Pool(3) as pool:
            assert sorted(pool.starmap(record, [(shared, log, k) for k in range(8)])) == list(range(8))
        assert sorted(log) == list(range(8))
        assert sorted(shared["nested"]) == list(range(8))
        assert {k: shared[k] for k in range(8)} == {k: k * k for k in range(8)}
        assert len(shared) == 9 and isinstance(shared.keys(), list)
        # Python's equality: 1, 1.0 and True are one key.
        shared[1.0] = "one"
        assert shared[True] == "one" and shared.get(1) == "one"
        with pytest.raises(KeyError, match="missing"):
            shared["missing"]
        with pytest.raises(IndexError):
            log[100]
        log += [100]
        assert log[-1] == 100 and 100 in log
        assert list(shared) == shared.keys() == list(shared.copy())


def test_namespace_value_array_queue_and_lock_of_a_manager():
    with fibermpi.Manager() as manager:
        namespace = manager.Namespace()
        namespace.x = 3
        assert namespace.x == 3
        with pytest.raises(AttributeError):
            namespace.missing
        value = manager.Value("i", 5)
        value.value = value.value + 1
        assert value.value == 6 and value.get() == 6
        array = manager.Array("d", [1.0, 2.0])
        array[1] = 4.5
        assert len(array) == 2 and array[1] == 4.5
        queue = manager.Queue()
        queue.put("x")
        assert queue.get(timeout=10) == "x"
        with manager.Lock():
            pass
        assert isinstance(manager.Barrier(1).wait(), int)


def test_a_registered_class_is_served_from_the_master_with_method_to_typeid():
    with CounterManager() as manager:
        counter = manager.Counter(1)
        processes = [fibermpi.Process(target=bump, args=(counter, 25)) for _ in range(2)]
        for process in processes:
            process.start()
        bump(counter, 25)
        for process in processes:
            process.join(30)
            assert process.exitcode == 0
        assert counter.get() == 76
        child = counter.child()
        assert child.get() == 760 and child.add(1) == 761
        assert counter.get() == 76
        with pytest.raises(AttributeError):
            counter.count  # an attribute, not an exposed method
        with pytest.raises(TypeError):
            counter.add(1, 2, 3)


def test_shutdown_drops_the_objects_and_bad_uses_are_named():
    manager = fibermpi.Manager()
    shared = manager.dict(a=1)
    with pytest.raises(TypeError, match="cannot send the arguments of .__setitem__.*_thread.lock"):
        shared["f"] = threading.Lock()  # unpicklable
    assert shared["a"] == 1  # the manager stays usable
    manager.shutdown()
    with pytest.raises(fibermpi.UsageError, match="shut down"):
        shared["a"]
    with pytest.raises(fibermpi.UsageError, match="shut down"):
        manager.dict()
    with pytest.raises(fibermpi.UsageError, match="no address"):
        BaseManager(address=("", 50000))


def test_a_manager_and_a_value_made_in_a_pool_worker_live_in_the_master():
    with fibermpi.Pool(1) as pool:
        manager, made, value = pool.apply(make_in_a_worker, (4,))
        pool.terminate()  # the worker is gone; the objects are not
    assert made[:] == [0, 1, 2, 3] and value.value == 4
    made.append(4)
    assert len(made) == 5
    assert manager.dict(a=1)["a"] == 1
    manager.shutdown()


def test_calls_between_objects_of_one_manager_and_their_text():
    with fibermpi.Manager() as manager:
        first, second = manager.dict(a=1), manager.dict(b=2)
        first.update(second)  # the master reads `second` while it serves `first`
        assert first.copy() == {"a": 1, "b": 2}
        items = manager.list([first])
        items.extend(manager.list([3, 4]))
        assert len(items) == 3 and items[0]["b"] == 2 and items[1:] == [3, 4]
        namespace = manager.Namespace(x=1)
        assert str(namespace) == "Namespace(x=1)" and "NamespaceProxy" in repr(namespace)
        assert str(second) == "{'b': 2}"
