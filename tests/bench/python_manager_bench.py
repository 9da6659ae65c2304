"""The workload of shared_state_bench.cc with Python's multiprocessing, for side-by-side ratios:
a Manager's dict set+get, Lock acquire+release, Value increment and Queue put+get, each called
from a worker process, and a JoinableQueue fed by 4 producers and drained by 4 consumers."""
import json
import multiprocessing as mp
import os
import statistics
import sys
import time


def time_calls(count, op):
    for i in range(count // 10):
        op(i)
    us = []
    for i in range(count):
        start = time.perf_counter()
        op(i)
        us.append((time.perf_counter() - start) * 1e6)
    return us


def dict_set_get(scores, count, out):
    def op(i):
        scores["m3"] = float(i)
        scores.get("m3")
    out.put(time_calls(count, op))


def lock_acquire_release(lock, count, out):
    def op(_):
        lock.acquire()
        lock.release()
    out.put(time_calls(count, op))


def value_increment(value, lock, count, out):
    # A manager's Value has no atomic add: the lock makes the read-modify-write one.
    def op(_):
        with lock:
            value.value += 1
    out.put(time_calls(count, op))


def queue_put_get(queue, count, out):
    def op(i):
        queue.put(i)
        queue.get()
    out.put(time_calls(count, op))


def produce(queue, count, go, progress):
    progress.put(0)
    go.wait()
    for i in range(count):
        queue.put(i)
    progress.put(1)


def consume(queue, progress):
    progress.put(0)
    while True:
        item = queue.get()
        queue.task_done()
        if item < 0:
            return


def from_a_worker(ctx, target, *args):
    out = ctx.SimpleQueue()
    worker = ctx.Process(target=target, args=(*args, out))
    worker.start()
    samples = out.get()
    worker.join()
    return samples


def print_latency(impl, op, us):
    us = sorted(us)
    print(json.dumps({"bench": "shared_op", "impl": impl, "op": op,
                      "p50_us": round(statistics.median(us), 2),
                      "p99_us": round(us[min(len(us) - 1, len(us) * 99 // 100)], 2)}), flush=True)


def main():
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    items = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    ctx = mp.get_context(os.environ.get("MP_START_METHOD", "fork"))
    impl = f"python multiprocessing ({ctx.get_start_method()})"
    with ctx.Manager() as manager:
        # Proxies are kept here: a proxy only passed to a process would be collected meanwhile.
        scores, lock, value, value_lock, queue = (manager.dict(), manager.Lock(), manager.Value("l", 0),
                                                  manager.Lock(), manager.Queue())
        print_latency(impl, "dict_set_get", from_a_worker(ctx, dict_set_get, scores, calls))
        print_latency(impl, "lock_acquire_release", from_a_worker(ctx, lock_acquire_release, lock, calls))
        print_latency(impl, "value_fetch_add", from_a_worker(ctx, value_increment, value, value_lock, calls))
        print_latency(impl, "queue_put_get", from_a_worker(ctx, queue_put_get, queue, calls))

    producers, consumers = 4, 4
    rates = []
    for _ in range(repeats):
        queue, go, progress = ctx.JoinableQueue(1024), ctx.Event(), ctx.SimpleQueue()
        processes = [ctx.Process(target=consume, args=(queue, progress)) for _ in range(consumers)]
        processes += [ctx.Process(target=produce, args=(queue, items // producers, go, progress))
                      for _ in range(producers)]
        for p in processes:
            p.start()
        for _ in processes:
            progress.get()
        start = time.perf_counter()
        go.set()
        for _ in range(producers):
            progress.get()
        queue.join()
        rates.append(items / (time.perf_counter() - start))
        for _ in range(consumers):
            queue.put(-1)
        for p in processes:
            p.join()
    print(json.dumps({"bench": "joinable_queue", "impl": impl, "producers": producers,
                      "consumers": consumers, "items_per_s": round(statistics.median(rates))}))


if __name__ == "__main__":
    main()
