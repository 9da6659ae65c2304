"""Turns the benchmark rows (one JSON object per line) into tables with ratios, JSON, CSV and a
PNG plot (when matplotlib is available)."""
import csv
import json
import sys
from pathlib import Path


def load(path):
    rows = []
    for line in Path(path).read_text().splitlines():
        if not line.strip().startswith("{"):
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            # A benchmark killed while writing: its other rows still count.
            print(f"(skipped a broken result line: {line[:80]})")
    return rows


def find(rows, bench, impl_prefix, **match):
    for row in rows:
        if row["bench"] == bench and row.get("impl", "").startswith(impl_prefix) and all(row.get(k) == v for k, v in match.items()):
            return row
    return None


def fmt(value):
    return f"{value:>11.4g}" if value is not None else f"{'-':>11}"


def ratio(a, b):
    return f"{a / b:.2f}x" if a is not None and b else "-"


def process_table(rows):
    print(f"{'Process / queue':<34}{'fibermpi':>11}{'python mp':>11}{'raw MPI':>11}{'fiber/python':>14}{'fiber/raw':>11}")

    def line(label, bench, field, **match):
        values = [find(rows, bench, prefix, **match) for prefix in ("fibermpi", "python", "raw")]
        f, p, r = (row.get(field) if row else None for row in values)
        print(f"{label:<34}{fmt(f)}{fmt(p)}{fmt(r)}{ratio(f, p):>14}{ratio(f, r):>11}")

    line("start 1 process (s)", "start_processes", "median_s", processes=1)
    line("start 8 processes (s)", "start_processes", "median_s", processes=8)
    line("queue round trip p50 (us)", "queue_round_trip", "p50_us")
    line("queue round trip p99 (us)", "queue_round_trip", "p99_us")
    line("blocked child CPU (%)", "idle_cpu", "blocked_child_pct")
    line("blocked master CPU (%)", "idle_cpu", "blocked_master_pct")


POOL_IMPLS = ("fibermpi static", "fibermpi spawned", "python mp", "mpi4py.futures")

POOL_LINES = [
    ("overhead 1 ms tasks (s)", "overhead", "median_s", {"task_ms": 1}),
    ("overhead 10 ms tasks (s)", "overhead", "median_s", {"task_ms": 10}),
    ("overhead 100 ms tasks (s)", "overhead", "median_s", {"task_ms": 100}),
    ("throughput chunksize 1 (tasks/s)", "throughput", "tasks_per_s", {"chunksize": "1"}),
    ("throughput default chunks (tasks/s)", "throughput", "tasks_per_s", {"chunksize": "default"}),
    ("latency p50 (us)", "latency", "p50_us", {}),
    ("latency p99 (us)", "latency", "p99_us", {}),
    ("latency p50, pool of 1 (us)", "latency_one_worker", "p50_us", {}),
    ("start-up 2 workers (s)", "startup", "median_s", {"workers": 2}),
    ("start-up 4 workers (s)", "startup", "median_s", {"workers": 4}),
    ("start-up 8 workers (s)", "startup", "median_s", {"workers": 8}),
    ("idle CPU master (%)", "idle", "master_cpu_pct", {}),
    ("idle CPU worker (%)", "idle", "worker_cpu_pct", {}),
    ("RSS per worker (MB)", "idle", "worker_rss_mb", {}),
]


def pool_table(rows):
    print()
    print(f"{'Pool':<38}" + "".join(f"{name:>18}" for name in POOL_IMPLS) + f"{'static/mp':>11}{'spawned/mp':>11}")
    for label, bench, field, match in POOL_LINES:
        values = []
        for impl in POOL_IMPLS:
            row = find(rows, bench, impl, **match)
            values.append(row.get(field) if row else None)
        print(f"{label:<38}" + "".join(f"{fmt(v):>18}" for v in values) + f"{ratio(values[0], values[2]):>11}{ratio(values[1], values[2]):>11}")
    floor = find(rows, "overhead_floor", "sleep only", task_ms=1)
    if floor:
        print(f"{'  (1 ms rounds with no runtime at all: ' + format(floor['median_s'], '.3f') + ' s on this machine)':<38}")
    for mode in ("static", "spawned"):
        ours, raw = find(rows, "latency", f"fibermpi {mode}"), find(rows, "latency", f"raw MPI {mode}")
        if ours and raw:
            print(f"latency p50 {mode}: fibermpi {ours['p50_us']} us vs raw MPI ping-pong {raw['p50_us']} us = {ratio(ours['p50_us'], raw['p50_us'])}")
        one = find(rows, "latency_one_worker", f"fibermpi {mode}")
        if one and raw:
            print(f"latency p50 {mode}, pool of 1: fibermpi {one['p50_us']} us = {ratio(one['p50_us'], raw['p50_us'])} raw")


PEER_IMPLS = ("fibermpi spawned", "python mp", "fiber", "ray", "dask", "ipyparallel")


def find_exact(rows, bench, impl, **match):
    for row in rows:
        if row["bench"] == bench and row.get("impl") == impl and "error" not in row and all(
                row.get(k) == v for k, v in match.items()):
            return row
    return None


def peers_table(rows):
    """fibermpi beside the peers of .venv-peers/, each used as its users write it; a peer that
    failed is named with its error, not left out."""
    if not any(row.get("impl") in PEER_IMPLS[2:] for row in rows):
        return
    print()
    print("The peers, side by side (2 workers; overhead: 5 workers; ratios: the peer / fibermpi spawned)")
    print(f"{'':<38}" + "".join(f"{name:>18}" for name in PEER_IMPLS))
    for label, bench, field, match in POOL_LINES:
        values = []
        for impl in PEER_IMPLS:
            row = find_exact(rows, bench, impl, **match)
            values.append(row.get(field) if row else None)
        print(f"{label:<38}" + "".join(f"{fmt(v):>18}" for v in values))
        print(f"{'  ratio':<38}" + "".join(f"{ratio(v, values[0]):>18}" for v in values))
    for row in rows:
        if row.get("impl") in PEER_IMPLS and "error" in row:
            print(f"  {row['impl']} {row['bench']}: {row['error']}")
        elif row.get("impl") in PEER_IMPLS and row.get("closes_hung"):
            print(f"  {row['impl']} start-up of {row['workers']}: close() and join() hung "
                  f"{row['closes_hung']} time(s)")
    for row in rows:
        if row["bench"] == "peers" and "error" in row:
            print(f"  peers: {row['error']}")
    es = [row for row in rows if row["bench"] == "es_iteration"]
    if es:
        # Python against Python: the ratios are to fibermpi's Python front end (spawned);
        # es_estool_port, the same ES in C++ on fibermpi, stands beside them.
        ours = find_exact(rows, "es_iteration", "fibermpi python (spawned)")
        print()
        print(f"An ES iteration, population {es[0]['population']}, {es[0]['workers']} workers "
              "(one CartPole-v1 episode per member: the same ES in Python with Gymnasium on each, "
              "and fibermpi's es_estool_port in C++ beside them)")
        for row in es:
            if "error" in row:
                print(f"  {row['impl']:<32} failed: {row['error']}")
            else:
                print(f"  {row['impl']:<32} {row['median_s']:>9.4f} s  "
                      f"{ratio(row['median_s'], ours['median_s'] if ours else None):>9} of "
                      "fibermpi python's")


def resilience_table(rows):
    detection, churn = find(rows, "detection", "fibermpi"), find(rows, "churn", "fibermpi")
    join = find(rows, "join", "fibermpi")
    if not detection and not churn and not join:
        return
    print()
    print("Resilience (spawned workers)")
    if detection:
        print(f"  kill -> task running again elsewhere: median {detection['median_ms']} ms, max {detection['max_ms']} ms")
    if churn:
        print(f"  1 ms tasks on 4 workers: {churn['calm_tasks_per_s']} tasks/s undisturbed, "
              f"{churn['churn_tasks_per_s']} with a worker killed every second ({churn['ratio'] * 100:.0f}%)")
    if join:
        print(f"  a 2-rank job joining a running pool: tasks running in it {join['join_median_s']} s after it was "
              f"asked for (median, max {join['join_max_s']} s, includes its mpirun start-up); "
              f"leaving on SIGTERM {join['leave_median_s']} s")


def spawn_table(rows):
    loops = [row for row in rows if row["bench"] == "spawn_loop"]
    cycles = [row for row in rows if row["bench"] == "pool_cycle"]
    if not loops and not cycles:
        return
    print()
    print("Spawning")
    for row in loops:
        print(f"  raw MPI_Comm_spawn loop, {row['mpi']}: {row['completed']} of {row['iterations']} iterations "
              f"(spawn of 8: median {row['spawn_s_p50']} s, max {row['spawn_s_max']} s)"
              f"{', then stuck' if row['stuck'] else ''}")
    for row in cycles:
        print(f"  {row['pools']} pools of {row['workers']} workers x {row['tasks']} tasks one after another, "
              f"reserve {'on' if row['reserve'] else 'off'}: {row['seconds']} s, "
              f"{row['worker_processes']} worker processes")


def master_cpu_table(rows):
    measured = [row for row in rows if row["bench"] == "master_cpu"]
    if not measured:
        return
    print()
    print("The master's CPU per task (no-op tasks; 10 ms tasks / this = workers one master feeds)")
    for row in measured:
        per_task = row["master_cpu_us_per_task"]
        print(f"  {row['impl']}, {row['workers']} workers, chunksize {row.get('chunksize', 1)}: "
              f"{per_task} us per task (~{10000 / per_task:.0f} workers of 10 ms tasks)")


def map_memory_table(rows):
    measured = [row for row in rows if row["bench"] == "map_memory" and "error" not in row]
    if not measured:
        return
    print()
    print("The master's memory during one no-op map (peak resident set during the map; beyond: "
          "less what it held before and the result vector)")
    for row in measured:
        print(f"  {row['impl']}, {row['mode']} of {row['tasks']} tasks, chunksize {row['chunksize']}: "
              f"peak {row['peak_rss_mb']} MB (before {row['rss_before_mb']} MB, results "
              f"{row['vectors_mb']} MB, beyond {row['beyond_vectors_mb']} MB), {row['seconds']} s")


def scale_table(rows):
    measured = [row for row in rows if row["bench"] == "scale" and "error" not in row]
    if not measured:
        return
    print()
    print("Many workers, one master (sleep tasks; the machine's cores are shared by every worker)")
    for row in measured:
        print(f"  {row['impl']}, {row['workers']} workers x {row['task_ms']} ms tasks: "
              f"{row['tasks_per_s']} tasks/s of {row['ideal_tasks_per_s']} ideal "
              f"({100 * row['efficiency']:.0f}%), ready in {row['start_s']} s; machine "
              f"{row['machine_busy_cores']} of {row['cores']} cores busy, "
              f"{row['machine_cpu_us_per_task']} us of CPU per task in all; master "
              f"{row['master_cpu_us_per_task']} us per task")
        print(f"    per worker, in the master: {1024 * row['master_mb_per_worker']:.0f} kB, "
              f"{row['fds_per_worker']} descriptors, {row['idle_cpu_us_per_worker_s']} us of CPU "
              f"per second idle (all idle: {row['idle_machine_cores']} cores busy); at 2,048 "
              f"workers: {row['at_2048_master_mb']} MB, {row['at_2048_fds']} descriptors, "
              f"{row['at_2048_idle_core_pct']}% of a core idle")


SHARED_IMPLS = ("fibermpi static", "fibermpi spawned", "python")
SHARED_OPS = [
    ("Dict set+get p50 (us)", "dict_set_get"),
    ("Lock acquire+release p50 (us)", "lock_acquire_release"),
    ("Value fetch_add p50 (us)", "value_fetch_add"),
    ("Queue put+get p50 (us)", "queue_put_get"),
]


def shared_state_table(rows):
    if not any(row["bench"] in ("shared_op", "joinable_queue") for row in rows):
        return
    print()
    print("Shared state, called from a worker process (python: multiprocessing's Manager; its Value "
          "has no fetch_add: lock + value += 1)")
    print(f"{'':<38}" + "".join(f"{name:>18}" for name in SHARED_IMPLS) +
          f"{'python/static':>15}{'python/spawned':>16}")

    def line(label, values, faster_is_lower=True):
        static, spawned, python = values
        speedup = (lambda ours: ratio(python, ours)) if faster_is_lower else (lambda ours: ratio(ours, python))
        print(f"{label:<38}" + "".join(f"{fmt(v):>18}" for v in values) +
              f"{speedup(static):>15}{speedup(spawned):>16}")

    for label, op in SHARED_OPS:
        values = []
        for impl in SHARED_IMPLS:
            row = find(rows, "shared_op", impl, op=op)
            values.append(row.get("p50_us") if row else None)
        line(label, values)
    values = []
    for impl in SHARED_IMPLS:
        row = find(rows, "joinable_queue", impl)
        values.append(row.get("items_per_s") if row else None)
    line("joinable queue 4+4 (items/s)", values, faster_is_lower=False)


def failures(rows):
    failed = [row for row in rows if "error" in row]
    if not failed:
        return
    print()
    print("Benchmarks that failed (reported, not fatal)")
    for row in failed:
        print(f"  {row['bench']}: {row['error']}")


def plot(rows, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no PNG: matplotlib is not installed)")
        return
    panels = [
        ("Fiber overhead test (s, ideal 1.0)", [l for l in POOL_LINES if l[1] == "overhead"]),
        ("No-op throughput (tasks/s, log)", [l for l in POOL_LINES if l[1] == "throughput"]),
        ("apply_async round trip (us, log)", [l for l in POOL_LINES if l[1] == "latency"]),
        ("Start-up until ready (s)", [l for l in POOL_LINES if l[1] == "startup"]),
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4.2))
    width = 0.8 / len(POOL_IMPLS)
    for ax, (title, lines) in zip(axes, panels):
        for i, impl in enumerate(POOL_IMPLS):
            heights = []
            for _, bench, field, match in lines:
                row = find(rows, bench, impl, **match)
                heights.append(row.get(field, 0) if row else 0)
            ax.bar([x + i * width for x in range(len(lines))], heights, width, label=impl)
        ax.set_xticks([x + width * (len(POOL_IMPLS) - 1) / 2 for x in range(len(lines))])
        ax.set_xticklabels([l[0].split(" (")[0].replace("throughput ", "").replace("overhead ", "").replace("start-up ", "").replace("latency ", "") for l in lines], fontsize=8)
        ax.set_title(title, fontsize=10)
        if "log" in title:
            ax.set_yscale("log")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "pool.png", dpi=110)
    print(f"plot: {out / 'pool.png'}")
    plot_peers(rows, out, plt)


def plot_peers(rows, out, plt):
    """One bar per runtime on each workload, fibermpi first; a peer with no figure gets no bar and
    its name says so."""
    if not any(row.get("impl") in PEER_IMPLS[2:] for row in rows):
        return
    impls = PEER_IMPLS + ("mpi4py.futures",)
    panels = [
        ("Overhead test, 1 ms tasks (s; ideal 1.0)", "overhead", "median_s", {"task_ms": 1}, False),
        ("No-op tasks/s, chunksize 1 (log)", "throughput", "tasks_per_s", {"chunksize": "1"}, True),
        ("apply_async round trip p50 (us, log)", "latency", "p50_us", {}, True),
        ("ES iteration, population 256 (s, log)", "es_iteration", "median_s", {}, True),
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4.4))
    for ax, (title, bench, field, match, log) in zip(axes, panels):
        labels, heights = [], []
        for impl in impls:
            row = find_exact(rows, bench, impl, **match)
            labels.append(impl.replace("fibermpi spawned", "fibermpi") + ("" if row else "\n(none)"))
            heights.append(row.get(field, 0) if row else 0)
        ax.bar(range(len(impls)), heights, color=["C0"] + ["C7"] * (len(impls) - 1))
        ax.set_xticks(range(len(impls)))
        ax.set_xticklabels(labels, fontsize=8, rotation=30, ha="right")
        ax.set_title(title, fontsize=10)
        if log:
            ax.set_yscale("log")
    fig.tight_layout()
    fig.savefig(out / "peers.png", dpi=110)
    print(f"plot: {out / 'peers.png'}")


def main():
    rows = load(sys.argv[1])
    out = Path(sys.argv[2])
    (out / "results.json").write_text(json.dumps(rows, indent=2))
    keys = sorted({k for row in rows for k in row})
    with open(out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)
    process_table(rows)
    pool_table(rows)
    resilience_table(rows)
    spawn_table(rows)
    master_cpu_table(rows)
    map_memory_table(rows)
    scale_table(rows)
    peers_table(rows)
    shared_state_table(rows)
    failures(rows)
    plot(rows, out)


if __name__ == "__main__":
    main()
