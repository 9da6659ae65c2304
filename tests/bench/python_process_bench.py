"""The same workload as process_bench.cc with Python multiprocessing, for side-by-side ratios."""
import json
import multiprocessing as mp
import os
import statistics
import sys
import time


def report_ready(ready):
    ready.put(1)


def echo(inbox, outbox):
    while True:
        x = inbox.get()
        if x < 0:
            return
        outbox.put(x)


def block_in_get(inbox, ready):
    ready.put(os.getpid())
    inbox.get()


def cpu_seconds_of(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    round_trips = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    ctx = mp.get_context(os.environ.get("MP_START_METHOD", "fork"))
    impl = f"python multiprocessing ({ctx.get_start_method()})"
    for count in (1, 8):
        samples = []
        for _ in range(repeats):
            ready = ctx.SimpleQueue()
            processes = [ctx.Process(target=report_ready, args=(ready,)) for _ in range(count)]
            start = time.perf_counter()
            for p in processes:
                p.start()
            for _ in range(count):
                ready.get()
            samples.append(time.perf_counter() - start)
            for p in processes:
                p.join()
        print(json.dumps({"bench": "start_processes", "impl": impl, "processes": count,
                          "median_s": round(statistics.median(samples), 4)}))

    to_child, to_parent = ctx.SimpleQueue(), ctx.SimpleQueue()
    child = ctx.Process(target=echo, args=(to_child, to_parent))
    child.start()
    to_child.put(0)
    to_parent.get()
    rtts = []
    for i in range(round_trips):
        start = time.perf_counter()
        to_child.put(i)
        to_parent.get()
        rtts.append((time.perf_counter() - start) * 1e6)
    to_child.put(-1)
    child.join()
    rtts.sort()
    print(json.dumps({"bench": "queue_round_trip", "impl": impl, "p50_us": round(rtts[len(rtts) // 2], 1),
                      "p99_us": round(rtts[len(rtts) * 99 // 100], 1)}))

    never, ready = ctx.SimpleQueue(), ctx.SimpleQueue()
    child = ctx.Process(target=block_in_get, args=(never, ready))
    child.start()
    pid = ready.get()
    time.sleep(0.5)
    before = cpu_seconds_of(pid)
    time.sleep(3)
    print(json.dumps({"bench": "idle_cpu", "impl": impl,
                      "blocked_child_pct": round(100 * (cpu_seconds_of(pid) - before) / 3, 2)}))
    never.put(0)
    child.join()


if __name__ == "__main__":
    main()
