"""The Pool workloads of pool_bench.cc on Python's multiprocessing.Pool (fork) and, when run
under mpiexec with mpi4py, on mpi4py.futures.MPIPoolExecutor. One JSON object per line."""
import json
import os
import statistics
import sys
import time


def noop(x):
    return x


def sleep_ms(ms):
    time.sleep(ms / 1000.0)
    return ms


def own_pid(_):
    return os.getpid()


def cpu_seconds_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb_of(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))]


def emit(**row):
    print(json.dumps(row), flush=True)


class MultiprocessingAdapter:
    name = "python mp"

    def __init__(self, n):
        import multiprocessing
        self.pool = multiprocessing.get_context("fork").Pool(n)
        self.n = n

    def wait_ready(self):
        self.pool.map(noop, range(self.n), 1)

    def submit(self, fn, arg):
        return self.pool.apply_async(fn, (arg,))

    @staticmethod
    def result(handle):
        return handle.get()

    def map(self, fn, inputs, chunksize):
        return self.pool.map(fn, inputs, chunksize)

    def close(self):
        self.pool.close()
        self.pool.join()


class Mpi4pyAdapter:
    name = "mpi4py.futures"

    def __init__(self, n):
        from mpi4py.futures import MPIPoolExecutor
        self.pool = MPIPoolExecutor(max_workers=n)
        self.n = n

    def wait_ready(self):
        self.pool.bootup(wait=True)

    def submit(self, fn, arg):
        return self.pool.submit(fn, arg)

    @staticmethod
    def result(handle):
        return handle.result()

    def map(self, fn, inputs, chunksize):
        return list(self.pool.map(fn, inputs, chunksize=chunksize))

    def close(self):
        self.pool.shutdown(wait=True)


def run(adapter_type, repeats, round_trips, tasks):
    name = adapter_type.name
    pool = adapter_type(5)
    pool.wait_ready()
    for duration in (1, 10, 100):
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(1000 // duration):
                handles = [pool.submit(sleep_ms, duration) for _ in range(5)]
                for h in handles:
                    pool.result(h)
            samples.append(time.perf_counter() - start)
        emit(bench="overhead", impl=name, task_ms=duration, median_s=round(statistics.median(samples), 4))
    pool.close()

    pool = adapter_type(2)
    pool.wait_ready()
    inputs = list(range(tasks))
    for label, chunksize in (("1", 1), ("default", None)):
        if chunksize is None:
            chunk, extra = divmod(len(inputs), 2 * 4)
            chunksize = chunk + (1 if extra else 0)
        rates = []
        for _ in range(repeats):
            start = time.perf_counter()
            results = pool.map(noop, inputs, chunksize)
            rates.append(len(results) / (time.perf_counter() - start))
        emit(bench="throughput", impl=name, chunksize=label, tasks_per_s=round(statistics.median(rates)))
    rtts = []
    for i in range(-200, round_trips):
        start = time.perf_counter()
        pool.result(pool.submit(noop, i))
        if i >= 0:
            rtts.append((time.perf_counter() - start) * 1e6)
    emit(bench="latency", impl=name, p50_us=round(statistics.median(rtts), 1), p99_us=round(percentile(rtts, 0.99), 1))

    pids = sorted(set(pool.map(own_pid, range(40), 1)))
    time.sleep(0.5)
    before = [cpu_seconds_of(p) for p in pids]
    own_before = time.process_time()
    start = time.perf_counter()
    time.sleep(5)
    elapsed = time.perf_counter() - start
    worker_pct = max(100.0 * (cpu_seconds_of(p) - b) / elapsed for p, b in zip(pids, before))
    emit(bench="idle", impl=name, master_cpu_pct=round(100.0 * (time.process_time() - own_before) / elapsed, 2),
         worker_cpu_pct=round(worker_pct, 2), worker_rss_mb=round(max(rss_mb_of(p) for p in pids), 1))
    pool.close()

    for n in (2, 4, 8):
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            pool = adapter_type(n)
            pool.wait_ready()
            samples.append(time.perf_counter() - start)
            pool.close()
        emit(bench="startup", impl=name, workers=n, median_s=round(statistics.median(samples), 4))


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    round_trips = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    tasks = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
    which = sys.argv[4] if len(sys.argv) > 4 else "mp"
    run(Mpi4pyAdapter if which == "mpi4py" else MultiprocessingAdapter, repeats, round_trips, tasks)


if __name__ == "__main__":
    main()
