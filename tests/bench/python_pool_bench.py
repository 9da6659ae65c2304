"""The Pool workloads of pool_bench.cc on Python's multiprocessing.Pool (fork), on
mpi4py.futures.MPIPoolExecutor (run under mpiexec with mpi4py), and on the peers of
.venv-peers/ (scripts/setup --peers): Uber's Fiber, Ray, Dask distributed and ipyparallel, each
used as its users write it. One JSON object per line.
Usage: python_pool_bench.py [repeats] [round_trips] [tasks] [mp|fibermpi|mpi4py|fiber|ray|dask|ipyparallel]
fibermpi runs with the checkout's .venv/bin/python (the package scripts/setup installs), as
`python` (spawned workers) or under `fibermpi run -n 6` (static ranks)."""
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

    def imap(self, fn, inputs, chunksize):
        return self.pool.imap(fn, inputs, chunksize)

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


class FibermpiAdapter(MultiprocessingAdapter):
    """fibermpi's Python front end (the package in .venv/): its Pool is multiprocessing's API.
    Under a launcher (fibermpi run -n N) the other ranks are its first workers."""

    def __init__(self, n):
        import fibermpi
        launched = any(os.environ.get(v) for v in ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"))
        self.name = "fibermpi python (static ranks)" if launched else "fibermpi python (spawned)"
        self.pool = fibermpi.Pool(n)
        self.n = n

    def wait_ready(self):
        self.pool.wait_until_workers_up()


def _run_chunk(fn, items):
    """A chunk of a map, for the peers that have no chunksize of their own (Ray, Dask)."""
    return [fn(item) for item in items]


def _chunks(inputs, chunksize):
    return [inputs[i:i + chunksize] for i in range(0, len(inputs), chunksize)]


class FiberAdapter(MultiprocessingAdapter):
    """Uber's Fiber 0.2.1 (PyPI), its local backend: its Pool is multiprocessing's API."""
    name = "fiber"

    def __init__(self, n):
        import fiber
        self.pool = fiber.Pool(n)
        self.n = n


class RayAdapter:
    """Ray on a local cluster of its own (ray.init with n CPUs), remote functions as its users
    write them; a map of chunks of several inputs runs each chunk as one task."""
    name = "ray"

    def __init__(self, n):
        import ray
        self.ray = ray
        ray.init(num_cpus=n, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
        self.remotes = {}
        self.n = n

    def _remote(self, fn):
        if fn not in self.remotes:
            self.remotes[fn] = self.ray.remote(fn)
        return self.remotes[fn]

    def wait_ready(self):
        self.ray.get([self._remote(noop).remote(i) for i in range(self.n)])

    def submit(self, fn, arg):
        return self._remote(fn).remote(arg)

    def result(self, handle):
        return self.ray.get(handle)

    def map(self, fn, inputs, chunksize):
        if chunksize == 1:
            return self.ray.get([self._remote(fn).remote(x) for x in inputs])
        run_chunk = self._remote(_run_chunk)
        chunks = self.ray.get([run_chunk.remote(fn, c) for c in _chunks(inputs, chunksize)])
        return [r for chunk in chunks for r in chunk]

    def close(self):
        self.ray.shutdown()


class DaskAdapter:
    """Dask distributed on a LocalCluster of n single-threaded worker processes."""
    name = "dask"

    def __init__(self, n):
        from distributed import Client, LocalCluster
        self.cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                    dashboard_address=None)
        self.client = Client(self.cluster)
        self.n = n

    def wait_ready(self):
        self.client.wait_for_workers(self.n)
        self.client.gather(self.client.map(noop, range(self.n), pure=False))

    def submit(self, fn, arg):
        return self.client.submit(fn, arg, pure=False)

    @staticmethod
    def result(handle):
        return handle.result()

    def map(self, fn, inputs, chunksize):
        if chunksize == 1:
            return self.client.gather(self.client.map(fn, inputs, pure=False))
        futures = [self.client.submit(_run_chunk, fn, c, pure=False)
                   for c in _chunks(inputs, chunksize)]
        return [r for chunk in self.client.gather(futures) for r in chunk]

    def close(self):
        self.client.close()
        self.cluster.close()


class IpyparallelAdapter:
    """ipyparallel: a cluster of n engines started by ipp.Cluster, a load-balanced view."""
    name = "ipyparallel"

    def __init__(self, n):
        import ipyparallel as ipp
        self.cluster = ipp.Cluster(n=n, log_level=40)
        self.client = self.cluster.start_and_connect_sync()
        # Functions of __main__ travel by value and run in the engines' namespace, which needs
        # their imports; those of a module travel by name, so the engines import this folder's.
        here = os.path.dirname(os.path.abspath(__file__))
        self.client[:].execute(f"import os, sys, time; sys.path.insert(0, {here!r})", block=True)
        self.view = self.client.load_balanced_view()
        self.n = n

    def wait_ready(self):
        self.client.wait_for_engines(self.n)
        self.view.map_sync(noop, range(self.n), chunksize=1)

    def submit(self, fn, arg):
        return self.view.apply_async(fn, arg)

    @staticmethod
    def result(handle):
        return handle.get()

    def map(self, fn, inputs, chunksize):
        return list(self.view.map_sync(fn, inputs, chunksize=chunksize))

    def close(self):
        self.client.close()
        self.cluster.stop_cluster_sync()


ADAPTERS = {"mp": MultiprocessingAdapter, "fibermpi": FibermpiAdapter, "mpi4py": Mpi4pyAdapter,
            "fiber": FiberAdapter,
            "ray": RayAdapter, "dask": DaskAdapter, "ipyparallel": IpyparallelAdapter}


def closed_within(pool, seconds):
    """Closes `pool` from a helper thread: a peer whose close hangs is reported, not waited for."""
    import threading
    closer = threading.Thread(target=pool.close, daemon=True)
    closer.start()
    closer.join(seconds)
    return not closer.is_alive()


def run(adapter_type, repeats, round_trips, tasks):
    pool = adapter_type(5)
    name = pool.name
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
    if not closed_within(pool, 20):
        emit(bench="overhead", impl=name, error="close() and join() did not return within 20 s")

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
    # imap, where the pool has multiprocessing's: of a list and of a generator (fibermpi reads a
    # generator whole when called; multiprocessing's task thread reads it as fast as it can).
    for source in ("list", "generator") if hasattr(pool, "imap") else ():
        for chunksize in (1, 64):
            rates = []
            for _ in range(repeats):
                items = inputs if source == "list" else (x for x in inputs)
                start = time.perf_counter()
                count = sum(1 for _ in pool.imap(noop, items, chunksize))
                rates.append(count / (time.perf_counter() - start))
            emit(bench="imap", impl=name, source=source, chunksize=chunksize,
                 tasks_per_s=round(statistics.median(rates)))
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
    if not closed_within(pool, 20):
        emit(bench="idle", impl=name, error="close() and join() did not return within 20 s")

    for n in (2, 4, 8):
        samples = []
        hung = 0
        for _ in range(repeats):
            start = time.perf_counter()
            pool = adapter_type(n)
            pool.wait_ready()
            samples.append(time.perf_counter() - start)
            # Fiber 0.2.1's close() and join() now and then never return (its pool is left).
            hung += not closed_within(pool, 20)
        row = dict(bench="startup", impl=name, workers=n, median_s=round(statistics.median(samples), 4))
        if hung:
            row["closes_hung"] = hung
        emit(**row)


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    round_trips = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    tasks = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
    which = sys.argv[4] if len(sys.argv) > 4 else "mp"
    if which not in ADAPTERS:
        sys.exit(f"python_pool_bench: unknown pool '{which}' (one of {', '.join(ADAPTERS)})")
    run(ADAPTERS[which], repeats, round_trips, tasks)


if __name__ == "__main__":
    main()
