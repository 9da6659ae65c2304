"""The master's memory during one large no-op map with Python's multiprocessing (beside
map_memory_bench.cc): its peak resident set during the map (VmHWM, reset just before), what it
held before the map, and the
part of the peak beyond what it held before (the input list) and the result list. One map per run. Prints one JSON row.

Usage: python_map_memory.py [tasks] [workers] [chunksize] [map|imap]
"""
import json
import multiprocessing
import sys
import time


def noop(x):
    return x


def status_mb(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return -1.0


def main():
    tasks = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    chunksize = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    mode = sys.argv[4] if len(sys.argv) > 4 else "map"
    with multiprocessing.Pool(workers) as pool:
        pool.map(noop, [1, 2, 3])
        inputs = list(range(tasks))
        # The peak counts from here (Linux), as in map_memory_bench.
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
        before = status_mb("VmRSS")
        start = time.perf_counter()
        if mode == "imap":
            expected = 0
            for value in pool.imap(noop, inputs, chunksize):
                assert value == expected
                expected += 1
            assert expected == tasks
        else:
            results = pool.map(noop, inputs, chunksize)
            assert len(results) == tasks and results[-1] == tasks - 1
        seconds = time.perf_counter() - start
        peak = status_mb("VmHWM")
    # The result list: 8 bytes of pointer per item and a 28-byte int object (those above 256 are
    # objects of their own).
    vectors = 0 if mode == "imap" else tasks * (8 + 28) / (1 << 20)
    print(json.dumps({"bench": "map_memory", "impl": "python multiprocessing", "mode": mode,
                      "tasks": tasks, "workers": workers, "chunksize": chunksize,
                      "peak_rss_mb": round(peak, 1), "rss_before_mb": round(before, 1),
                      "vectors_mb": round(vectors, 1),
                      "beyond_vectors_mb": round(peak - before - vectors, 1),
                      "seconds": round(seconds, 2)}))


if __name__ == "__main__":
    main()
