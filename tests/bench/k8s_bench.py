"""FiberJob operator benchmarks on the development cluster (scripts/dev-cluster, fiber-controller):

  scale   time from `kubectl scale fj/NAME --replicas=k` to k worker pods Running (k = 1, 10, 50),
          each measured from zero workers, repeated, medians;
  jobs    reconcile throughput: 100 FiberJobs created while the controller is paused (suspended jobs,
          so that only the controller and the API server work), time from its resumption until every
          one has its status written.

Usage: k8s_bench.py [--repeats 3] [--sizes 1,10,50] [--jobs 100] [--out FILE.json]
Prints a table and writes the figures as JSON (default build/bench/k8s.json)."""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from k8s.devcluster.kube import KubeClient, client_from_kubeconfig, group_path, pod_path  # noqa: E402

KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"
JOBS = group_path("fibermpi.io", "v1alpha1", "fiberjobs", "default")


def fiberjob(name: str, replicas: int, max_replicas: int, suspend: bool = False) -> dict[str, Any]:
    def template(command: str) -> dict[str, Any]:
        return {"spec": {"containers": [{"name": "main", "image": "fibermpi/runtime:0.1.0",
                                         "command": ["/bin/sh", "-c", command]}]}}
    return {"apiVersion": "fibermpi.io/v1alpha1", "kind": "FiberJob", "metadata": {"name": name},
            "spec": {"launcher": {"template": template("exec sleep 3600")},
                     "workers": {"template": template("exec sleep 3600"), "replicas": replicas,
                                 "minReplicas": 0, "maxReplicas": max_replicas},
                     "runPolicy": {"suspend": suspend, "cleanPodPolicy": "All"}}}


def wait_until(what: str, check: Callable[[], bool], timeout_s: float = 300, interval_s: float = 0.01) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(interval_s)


def running_workers(client: KubeClient, job: str) -> int:
    pods = client.list(pod_path("default"), label_selector=f"fibermpi.io/job-name={job},fibermpi.io/role=worker")
    return sum(1 for p in pods["items"] if p.get("status", {}).get("phase") == "Running"
               and "deletionTimestamp" not in p["metadata"])


def worker_pods(client: KubeClient, job: str) -> int:
    pods = client.list(pod_path("default"), label_selector=f"fibermpi.io/job-name={job},fibermpi.io/role=worker")
    return len(pods["items"])


def scale_bench(client: KubeClient, kubeconfig: str, sizes: list[int], repeats: int) -> dict[int, list[float]]:
    job = "scale-bench"
    client.create(JOBS, fiberjob(job, 0, max(sizes)))
    wait_until("the job running", lambda: client.get(f"{JOBS}/{job}").get("status", {}).get("phase") == "Running")
    env = {**os.environ, "KUBECONFIG": kubeconfig}
    times: dict[int, list[float]] = {k: [] for k in sizes}
    for _ in range(repeats):
        for k in sizes:
            start = time.monotonic()
            subprocess.run([KUBECTL, "scale", f"fj/{job}", f"--replicas={k}"], check=True, env=env,
                           capture_output=True, timeout=60)
            wait_until(f"{k} workers running", lambda: running_workers(client, job) == k)
            times[k].append(time.monotonic() - start)
            # Back to zero the way a program releases workers: the controller never deletes a
            # running worker that is not named in workersToDelete (it may be in use).
            names = [p["metadata"]["name"] for p in client.list(
                pod_path("default"), label_selector=f"fibermpi.io/job-name={job},fibermpi.io/role=worker")["items"]]
            client.patch(f"{JOBS}/{job}", {"spec": {"workers": {"replicas": 0, "workersToDelete": names}}})
            wait_until("no worker pod", lambda: worker_pods(client, job) == 0)
            client.patch(f"{JOBS}/{job}", {"spec": {"workers": {"workersToDelete": None}}})
    client.delete(f"{JOBS}/{job}")
    return times


def jobs_bench(client: KubeClient, state_dir: str, count: int) -> dict[str, float]:
    """The controller is paused (SIGSTOP) while the jobs are created, so that what is timed is its
    own work through the backlog: informer events, reconciles, status writes."""
    controller = int(pathlib.Path(state_dir, "pids", "controller.pid").read_text())
    names = [f"many-{i:03d}" for i in range(count)]
    os.kill(controller, signal.SIGSTOP)
    try:
        for name in names:
            client.create(JOBS, fiberjob(name, 1, 1, suspend=True))
    finally:
        os.kill(controller, signal.SIGCONT)
    start = time.monotonic()

    def all_written() -> bool:
        items = client.list(JOBS)["items"]
        return sum(1 for j in items if j["metadata"]["name"].startswith("many-")
                   and j.get("status", {}).get("phase") == "Suspended") == count
    wait_until(f"{count} jobs with their status", all_written, interval_s=0.02)
    elapsed = time.monotonic() - start
    for name in names:
        client.delete(f"{JOBS}/{name}")
    return {"jobs": count, "all_status_written_s": elapsed, "jobs_per_s": count / elapsed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", default="1,10,50")
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--out", default=str(ROOT / "build/bench/k8s.json"))
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.repeats < 1 or args.jobs < 1 or any(k < 1 for k in sizes):
        parser.error("--repeats, --jobs and every size must be at least 1")

    with tempfile.TemporaryDirectory(prefix="fiber-k8s-bench-") as state_dir:
        up = subprocess.run([str(ROOT / "scripts/dev-cluster"), "up", state_dir, "--pods-per-node",
                             str(max(sizes) + 10)], capture_output=True, text=True, timeout=180)
        if up.returncode != 0:
            print(up.stdout + up.stderr, file=sys.stderr)
            return 1
        try:
            kubeconfig = os.path.join(state_dir, "kubeconfig")
            client = client_from_kubeconfig(kubeconfig)
            scale = scale_bench(client, kubeconfig, sizes, args.repeats)
            jobs = jobs_bench(client, state_dir, args.jobs)
        finally:
            subprocess.run([str(ROOT / "scripts/dev-cluster"), "down", state_dir], capture_output=True, timeout=180)

    print("kubectl scale -> all new workers Running (s), from zero workers, 2 nodes")
    print(f"{'workers':>8} {'median':>8} {'min':>8} {'max':>8}")
    figures: dict[str, Any] = {"scale": {}, "jobs": jobs}
    for k, values in scale.items():
        figures["scale"][str(k)] = {"median_s": statistics.median(values), "runs_s": values}
        print(f"{k:>8} {statistics.median(values):>8.2f} {min(values):>8.2f} {max(values):>8.2f}")
    print(f"{jobs['jobs']} FiberJobs waiting for a paused controller: every status written "
          f"{jobs['all_status_written_s']:.2f} s after it went on ({jobs['jobs_per_s']:.1f} jobs/s)")
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.out).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
