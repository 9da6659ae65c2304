"""The elastic pool's figures: tests/bench/k8s_elastic_bench.cc run as a FiberJob's launcher on the
development cluster (its workers are worker pods, each its own MPI job joined through the job's name
service), and outside Kubernetes for comparison.

  grow        time from pool.resize(1 + k) on a ready Pool(1) to tasks started on all k new
              workers, k = 1, 4, 8: (k8s) worker pods asked for through the scale subresource;
              (spawn) MPI_Comm_spawn outside Kubernetes, warm reserve off; (join) an independent
              `mpirun -n k` job joining through fiber::listen() and ompi-server, timed from the
              harness's start of that mpirun
  throughput  1 ms tasks on a pool of 4 worker pods: undisturbed, then while a worker pod is deleted
              every 2 s (graceful, then --grace-period=0 --force); every result checked exactly once
  detect      a worker pod killed (--grace-period=0 --force) while it runs a long task: from the
              delete to that task started again elsewhere, with heartbeat_timeout 5 s and 2 s

The development cluster shares the machine with everything else that runs on it: its figures
include that machine's load.

Usage: k8s_elastic_bench.py [--build-dir build-openmpi4] [--repeats 5] [--sizes 1,4,8]
                            [--phase-seconds 5] [--only grow-k8s,grow-spawn,grow-join,throughput,detect]
                            [--out BUILD/bench/k8s_elastic.json] [--containers]
Prints markdown tables and writes the figures as JSON."""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import signal
import statistics
import subprocess
import sys
import shutil
import time
from typing import Any, Callable, Iterator

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from k8s.devcluster.kube import KubeClient, KubeError, client_from_kubeconfig, group_path, pod_path  # noqa: E402

KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"
NAMESPACE = "default"
JOBS = group_path("fibermpi.io", "v1alpha1", "fiberjobs", NAMESPACE)
RUNTIME_IMAGE = "fibermpi/runtime:dev"
SCENARIOS = ("grow-k8s", "grow-spawn", "grow-join", "throughput", "detect")
# Released pods go after pod_idle_timeout; short, so that every growth starts from one worker pod.
BASE_CONFIG = {"pod_idle_timeout": "1s"}
# What the launcher needs of its own FiberJob where the controller gives it no account of its own.
LAUNCHER_RBAC = [
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
     "metadata": {"name": "fiber-elastic-bench", "namespace": NAMESPACE},
     "rules": [{"apiGroups": ["fibermpi.io"], "resources": ["fiberjobs"], "verbs": ["get", "patch"]},
               {"apiGroups": ["fibermpi.io"], "resources": ["fiberjobs/scale"],
                "verbs": ["get", "patch", "update"]},
               # The release list (ConfigMap NAME-release) the program writes.
               {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "update"]}]},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
     "metadata": {"name": "fiber-elastic-bench", "namespace": NAMESPACE},
     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "fiber-elastic-bench"},
     "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": NAMESPACE}]}]


# --- waiting and files --------------------------------------------------------------------------

def wait_until(what: str, check: Callable[[], Any], timeout_s: float = 120, interval_s: float = 0.01) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(interval_s)


def wait_for_file(path: pathlib.Path, timeout_s: float = 180, alive: Callable[[], bool] = lambda: True) -> str:
    """The file's content once it exists; fails early when `alive` says the program has ended."""
    def ready() -> bool:
        if path.exists():
            return True
        if not alive():
            raise RuntimeError(f"the program ended before it wrote {path.name}")
        return False
    wait_until(path.name, ready, timeout_s)
    return path.read_text()


def touch(path: pathlib.Path, text: str = "1") -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text + "\n")
    temporary.rename(path)


def json_lines(text: str) -> list[dict[str, Any]]:
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            rows.append(json.loads(line))
    return rows


def rounds(sizes: list[int], repeats: int) -> Iterator[str]:
    for k in sizes:
        for r in range(repeats):
            yield f"{k}-{r}"


# --- the development cluster ---------------------------------------------------------------------

class Cluster:
    """A development cluster started for the benchmark (scripts/dev-cluster up/down)."""

    def __init__(self, state_dir: pathlib.Path, controller_build: pathlib.Path, pods_per_node: int,
                 container_build: pathlib.Path | None = None):
        self.dir = state_dir
        # With a build folder: pods run as real containers of the runtime image, the folder (the
        # program, its libraries, the work directories) mounted at the same path.
        self.container_build = container_build
        self.env = {**os.environ, "KUBECONFIG": str(state_dir / "kubeconfig")}
        up = subprocess.run([str(ROOT / "scripts/dev-cluster"), "up", str(state_dir), "--pods-per-node",
                             str(pods_per_node)], capture_output=True, text=True, timeout=180,
                            env={**os.environ, "FIBER_BUILD_DIR": str(controller_build)})
        if up.returncode != 0:
            raise RuntimeError(f"scripts/dev-cluster up failed:\n{up.stdout}{up.stderr}")
        self.client: KubeClient = client_from_kubeconfig(str(state_dir / "kubeconfig"))
        self.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(LAUNCHER_RBAC))

    def down(self) -> None:
        subprocess.run([str(ROOT / "scripts/dev-cluster"), "down", str(self.dir)], capture_output=True,
                       timeout=180)

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        result = subprocess.run([KUBECTL, *args], input=stdin, capture_output=True, text=True, timeout=60,
                                env=self.env)
        if result.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)} exited {result.returncode}: {result.stderr}")
        return result.stdout

    def worker_pods(self, job: str) -> list[dict[str, Any]]:
        return self.client.list(pod_path(NAMESPACE), label_selector=(
            f"fibermpi.io/job-name={job},fibermpi.io/role=worker"))["items"]

    def phase(self, job: str) -> str:
        return self.client.get(f"{JOBS}/{job}").get("status", {}).get("phase", "")

    def launcher_log(self, job: str) -> str:
        return self.client.get_text(pod_path(NAMESPACE, f"{job}-launcher", "log"))

    def run_job(self, job: str, program: str, args: list[str], config: dict[str, str],
                harness: Callable[[Callable[[], bool]], None], timeout_s: float = 240) -> list[dict[str, Any]]:
        """Runs the program as the launcher of FiberJob `job` while `harness(alive)` drives it; the
        JSON lines it printed. A job that failed gives its lines and a row {"error": ...}."""
        command = [program, *args]
        pod: dict[str, Any] = {"containers": [{"name": "main", "image": "fibermpi/bench", "command": command}]}
        if self.container_build:
            # args, not command: the image's entrypoint (tini) stays PID 1, as in the samples.
            pod = {"containers": [{"name": "main", "image": RUNTIME_IMAGE, "args": command,
                                   "volumeMounts": [{"name": "build", "mountPath": str(self.container_build)}]}],
                   "volumes": [{"name": "build", "hostPath": {"path": str(self.container_build)}}]}
        body = {"apiVersion": "fibermpi.io/v1alpha1", "kind": "FiberJob", "metadata": {"name": job},
                "spec": {"launcher": {"template": {"spec": pod}},
                         "workers": {"minReplicas": 0, "maxReplicas": 16, "replicas": 0,
                                     "template": {"spec": json.loads(json.dumps(pod))}},
                         "runPolicy": {"cleanPodPolicy": "Running"},
                         "config": yaml.safe_dump(config)}}
        self.client.create(JOBS, body)
        try:
            finished = lambda: self.phase(job) in ("Succeeded", "Failed")  # noqa: E731
            try:
                harness(lambda: not finished())
            except RuntimeError as error:
                if not finished():
                    raise
                print(f"  {job}: {error}", file=sys.stderr)
            wait_until(f"{job} to finish", finished, timeout_s, 0.2)
            log = self.launcher_log(job)
            (self.dir / f"{job}.log").write_text(log)
            rows = json_lines(log)
            if self.phase(job) != "Succeeded":
                rows.append({"error": f"FiberJob {job} failed (launcher log: {self.dir / job}.log): "
                                      + " | ".join(log.strip().splitlines()[-3:])})
            return rows
        finally:
            try:
                self.client.delete(f"{JOBS}/{job}")
            except KubeError:
                pass


# --- growth --------------------------------------------------------------------------------------

def drive_growth(work: pathlib.Path, sizes: list[int], repeats: int, alive: Callable[[], bool],
                 settle: Callable[[], None]) -> None:
    """Lets the program grow round after round; `settle` waits until the workers a round released
    are gone."""
    for tag in rounds(sizes, repeats):
        settle()
        touch(work / f"go-{tag}")
        wait_for_file(work / f"shrunk-{tag}", alive=alive)


def grow_k8s(cluster: Cluster, program: str, work: pathlib.Path, sizes: list[int], repeats: int) -> list[dict]:
    """One FiberJob per growth: its Pool(1) grows once, by k worker pods. (A launcher growing again
    and again can stall for minutes in Open MPI 4.1's connect/accept; one growth per job keeps the
    figure to what it measures.)"""
    rows = []
    for tag in rounds(sizes, repeats):
        k, r = tag.split("-")
        round_dir = work / tag
        round_dir.mkdir()
        try:
            rows += [{**row, "k": int(k), "round": int(r)} for row in cluster.run_job(
                f"elastic-grow-{tag}", program, ["grow", str(round_dir), k, "1"], BASE_CONFIG,
                lambda alive: drive_growth(round_dir, [int(k)], 1, alive, lambda: None))]
        except (RuntimeError, TimeoutError) as error:
            rows.append({"k": int(k), "round": int(r), "error": f"elastic-grow-{tag}: {error}"})
    return rows


def local_env() -> dict[str, str]:
    """Runnable as root, oversubscribing, quiet; the MPI is the build's (see in_build_env)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIBER_K8S")}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1",
               PRTE_ALLOW_RUN_AS_ROOT="1", PRTE_ALLOW_RUN_AS_ROOT_CONFIRM="1", FIBER_QUIET="1")
    return env


def in_build_env(build_dir: pathlib.Path, command: list[str]) -> list[str]:
    """`command` run with the build's MPI (its env.sh: mpirun on PATH, OPAL_PREFIX for Open MPI 5)."""
    return ["bash", "-c", f'. "{build_dir}/env.sh" && exec "$@"', "in-build-env", *command]


def run_local(command: list[str], env: dict[str, str], work: pathlib.Path,
              driver: Callable[[Callable[[], bool]], None], timeout_s: float = 240) -> list[dict[str, Any]]:
    """Runs the program outside Kubernetes while `driver(alive)` drives it; its JSON lines."""
    log = work / "program.log"
    with open(work / "program.out", "w+") as out, open(log, "w") as err:
        program = subprocess.Popen(command, env=env, stdout=out, stderr=err, text=True)
        try:
            driver(lambda: program.poll() is None)
            program.wait(timeout=timeout_s)
        finally:
            if program.poll() is None:
                program.kill()
                program.wait()
        out.seek(0)
        text = out.read()
    if program.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {program.returncode}:\n{text}{log.read_text()}")
    return json_lines(text)


def grow_spawn(build_dir: pathlib.Path, program: str, work: pathlib.Path, sizes: list[int],
               repeats: int) -> list[dict]:
    # Without the warm reserve and with batches of one, resize(1 + k) spawns exactly k processes.
    env = {**local_env(), "FIBER_RESERVE_MAX_IDLE": "0", "FIBER_MIN_SPAWN_BATCH": "1"}
    command = [program, "grow", str(work), ",".join(map(str, sizes)), str(repeats)]
    return run_local(in_build_env(build_dir, command), env, work,
                     lambda alive: drive_growth(work, sizes, repeats, alive, lambda: None))


def grow_join(build_dir: pathlib.Path, program: str, work: pathlib.Path, sizes: list[int],
              repeats: int) -> list[dict]:
    env = local_env()
    uri = work / "ompi-server.uri"
    server = subprocess.Popen(in_build_env(build_dir, ["ompi-server", "--no-daemonize", "-r", str(uri)]), env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_file(uri, 60)
        server_uri = f"file:{uri}"
        mpirun = in_build_env(build_dir, ["mpirun", "--ompi-server", server_uri, "--enable-recovery"])

        def drive(alive: Callable[[], bool]) -> None:
            address = wait_for_file(work / "address", alive=alive).strip()
            for tag in rounds(sizes, repeats):
                k = tag.split("-")[0]
                wait_for_file(work / f"want-{tag}", alive=alive)
                started = time.time()
                joining = subprocess.Popen([*mpirun, "--oversubscribe", "-n", k, program],
                                           env={**env, "FIBER_CONNECT": address},
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                touch(work / f"t0-{tag}", repr(started))
                try:
                    wait_for_file(work / f"left-{tag}", alive=alive)
                    joining.wait(timeout=60)
                finally:
                    if joining.poll() is None:
                        joining.kill()
                        joining.wait()

        return run_local([*mpirun, "-n", "1", program, "join", str(work), ",".join(map(str, sizes)),
                          str(repeats)], env, work, drive)
    finally:
        server.kill()
        server.wait()


# --- throughput under pod loss -------------------------------------------------------------------

def throughput_k8s(cluster: Cluster, program: str, work: pathlib.Path, seconds: float, job: str,
                   disturbance: str, config: dict[str, str]) -> list[dict]:
    """Undisturbed, then while a worker pod is deleted every 2 s: `graceful` (kubectl delete pod)
    or `forced` (--grace-period=0 --force)."""
    options = {"graceful": [], "forced": ["--grace-period=0", "--force"]}[disturbance]
    phases = ["undisturbed", disturbance]

    def running_pods() -> list[str]:
        return sorted(p["metadata"]["name"] for p in cluster.worker_pods(job)
                      if p.get("status", {}).get("phase") == "Running" and "deletionTimestamp" not in p["metadata"])

    def drive(alive: Callable[[], bool]) -> None:
        for phase in phases:
            wait_until("4 worker pods running", lambda: len(running_pods()) == 4, 120, 0.05)
            touch(work / f"go-{phase}")
            wait_for_file(work / f"started-{phase}", alive=alive)
            ended = work / f"ended-{phase}"
            victim = 0
            while phase != "undisturbed" and not ended.exists():
                if not alive():
                    raise RuntimeError(f"the program ended during the {phase} phase")
                next_delete = time.monotonic() + 2
                pods = running_pods()
                if pods:
                    cluster.kubectl("delete", "pod", pods[victim % len(pods)], "--wait=false", *options)
                    victim += 1
                while time.monotonic() < next_delete and not ended.exists():
                    time.sleep(0.01)
            wait_for_file(ended, alive=alive)

    return cluster.run_job(job, program, ["throughput", str(work), str(seconds), ",".join(phases)], config, drive)


# --- detection of a killed pod -------------------------------------------------------------------

def detect_k8s(cluster: Cluster, program: str, work: pathlib.Path, repeats: int,
               heartbeat_timeout: str | None) -> list[float]:
    job = "elastic-detect"
    config = dict(BASE_CONFIG)
    if heartbeat_timeout:
        config["heartbeat_timeout"] = heartbeat_timeout
    detections: list[float] = []

    def starts(task: int) -> dict[str, float]:
        """{"<pod>-<pid>": start time} of the task's runs so far (start-<task>-<pod>-<pid> files;
        a replacement pod may take a deleted pod's name, never its process)."""
        return {path.name[len(f"start-{task}-"):]: float(path.read_text())
                for path in work.glob(f"start-{task}-*") if not path.name.endswith(".tmp")}

    def drive(alive: Callable[[], bool]) -> None:
        for r in range(repeats):
            touch(work / f"go-{r}")
            tasks = [r * 10 + i for i in range(3)]
            wait_until("3 long tasks started", lambda: all(starts(t) for t in tasks), 120)
            victim_task = tasks[0]
            (victim,) = starts(victim_task)
            deleted = time.time()
            cluster.client.delete(pod_path(NAMESPACE, victim.rsplit("-", 1)[0]), grace_period_seconds=0)
            rerun = wait_until("the task started again elsewhere",
                               lambda: [t for w, t in starts(victim_task).items() if w != victim], 120)
            detections.append(min(rerun) - deleted)
            touch(work / f"release-{r}")
            wait_for_file(work / f"done-{r}", alive=alive)

    rows = cluster.run_job(job, program, ["detect", str(work), str(repeats)], config, drive)
    errors = [row["error"] for row in rows if "error" in row]
    if errors or len(detections) < repeats:
        raise RuntimeError(f"{len(detections)} of {repeats} detections measured: {errors[-1] if errors else ''}")
    return detections


# --- report --------------------------------------------------------------------------------------

def summary(values: list[float], errors: list[str] | None = None) -> dict[str, Any]:
    figure: dict[str, Any] = {"runs": values}
    if values:
        figure.update(median=statistics.median(values), min=min(values), max=max(values))
    if errors:
        figure["errors"] = errors
    return figure


def growth_summary(rows: list[dict], k: int) -> dict[str, Any]:
    return summary([row["latency_s"] for row in rows if row.get("k") == k and "latency_s" in row],
                   [row["error"] for row in rows if row.get("k") == k and "error" in row])


def print_growth(figures: dict[str, Any], sizes: list[int]) -> None:
    print("\n### Growth: resize(1 + k) on a ready Pool(1) -> tasks running on all k new workers (s)\n")
    print("| k | how | median | min | max | runs |")
    print("|---|-----|--------|-----|-----|------|")
    names = {"grow-k8s": "worker pods (scale subresource), dev cluster",
             "grow-spawn": "MPI_Comm_spawn, no Kubernetes", "grow-join": "joining `mpirun -n k`, no Kubernetes"}
    for k in sizes:
        for scenario, name in names.items():
            figure = figures.get(scenario, {}).get(str(k))
            if figure and figure["runs"]:
                failed = f" ({len(figure['errors'])} failed)" if figure.get("errors") else ""
                print(f"| {k} | {name} | {figure['median']:.2f} | {figure['min']:.2f} | {figure['max']:.2f} "
                      f"| {len(figure['runs'])}{failed} |")
            elif figure:
                print(f"| {k} | {name} | failed | | | {'; '.join(figure.get('errors', []))[:200]} |")


def print_throughput(figures: dict[str, Any]) -> None:
    runs = figures.get("throughput")
    if not runs:
        return
    print("\n### 1 ms tasks on 4 worker pods, a worker pod deleted every 2 s (chunksize 1)\n")
    print("| deletion | undisturbed tasks/s | disturbed tasks/s | share | tasks checked |")
    print("|----------|---------------------|-------------------|-------|---------------|")
    for name, phases in runs.items():
        calm = phases.get("undisturbed")
        disturbed = next((row for phase, row in phases.items() if phase not in ("undisturbed", "error")), None)
        if calm and disturbed:
            print(f"| {name} | {calm['tasks_per_s']:.0f} | {disturbed['tasks_per_s']:.0f} | "
                  f"{disturbed['tasks_per_s'] / calm['tasks_per_s']:.0%} | {calm['tasks'] + disturbed['tasks']} |")
        else:
            calm_text = f"{calm['tasks_per_s']:.0f}" if calm else "-"
            print(f"| {name} | {calm_text} | failed: {phases.get('error', 'no result')[:160]} | - | - |")


def print_detection(figures: dict[str, Any]) -> None:
    rows = figures.get("detect")
    if not rows:
        return
    print("\n### A worker pod killed (--grace-period=0 --force) mid-task: delete -> task started elsewhere (s)\n")
    print("| heartbeat_timeout | median | min | max | runs |")
    print("|-------------------|--------|-----|-----|------|")
    for timeout, figure in rows.items():
        if "error" in figure:
            print(f"| {timeout} | failed: {figure['error'][:200]} | | | |")
            continue
        print(f"| {timeout} | {figure['median']:.2f} | {figure['min']:.2f} | {figure['max']:.2f} | "
              f"{len(figure['runs'])} |")


def run_scenarios(args: argparse.Namespace, build_dir: pathlib.Path, program: str, controller_build: pathlib.Path,
                  sizes: list[int], only: list[str], work: Callable[[str], pathlib.Path], scratch: pathlib.Path,
                  figures: dict[str, Any]) -> None:
    for scenario, run in (("grow-spawn", grow_spawn), ("grow-join", grow_join)):
        if scenario in only:
            try:
                rows = run(build_dir, program, work(scenario), sizes, args.repeats)
            except (RuntimeError, TimeoutError, subprocess.TimeoutExpired) as error:
                rows = [{"k": k, "error": str(error)[-400:]} for k in sizes]
            figures[scenario] = {str(k): growth_summary(rows, k) for k in sizes}
    if any(s in only for s in ("grow-k8s", "throughput", "detect")):
        cluster = Cluster(pathlib.Path(scratch, "cluster"), controller_build, max(sizes) + 10,
                          build_dir if args.containers else None)
        try:
            if "grow-k8s" in only:
                rows = grow_k8s(cluster, program, work("grow-k8s"), sizes, args.repeats)
                figures["grow-k8s"] = {str(k): growth_summary(rows, k) for k in sizes}
            if "throughput" in only:
                figures["throughput"] = {}
                for disturbance, timeout in (("graceful", "5s"), ("forced", "5s"), ("forced", "2s")):
                    name = f"{disturbance}, heartbeat_timeout {timeout}"
                    job = f"elastic-throughput-{disturbance}-{timeout}"
                    try:
                        rows = throughput_k8s(cluster, program, work(job), args.phase_seconds, job, disturbance,
                                              {**BASE_CONFIG, "heartbeat_timeout": timeout})
                    except (RuntimeError, TimeoutError) as error:
                        rows = [{"error": str(error)}]
                    figures["throughput"][name] = {row["phase"]: row for row in rows
                                                   if row.get("scenario") == "throughput"}
                    errors = [row["error"] for row in rows if "error" in row]
                    if errors:
                        figures["throughput"][name]["error"] = errors[-1]
            if "detect" in only:
                figures["detect"] = {}
                for timeout in ("5s", "2s"):
                    name = f"{timeout} ({'default' if timeout == '5s' else 'fiber.yaml'})"
                    try:
                        runs = detect_k8s(cluster, program, work(f"detect-{timeout}"), args.repeats,
                                          None if timeout == "5s" else timeout)
                        figures["detect"][name] = summary(runs)
                    except (RuntimeError, TimeoutError) as error:
                        figures["detect"][name] = {"error": str(error)}
        finally:
            cluster.down()


def report(figures: dict[str, Any], sizes: list[int], out: pathlib.Path) -> None:
    print(f"Machine: {figures['machine']} (the development cluster's pods, the API server and the "
          "controller run on the same cores)")
    print_growth(figures, sizes)
    print_throughput(figures)
    print_detection(figures)
    out.write_text(json.dumps(figures, indent=2))
    print(f"\nJSON: {out}")


def end_on_sigterm(signum: int, frame: Any) -> None:
    """A harness stopped by `timeout` still takes its cluster down (the `finally` blocks run)."""
    raise SystemExit(f"stopped by signal {signum}")


def main() -> int:
    signal.signal(signal.SIGTERM, end_on_sigterm)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default=str(ROOT / "build-openmpi4"),
                        help="an Open MPI 4.1 build (FIBER_MPI=openmpi4) with tests/bench/k8s_elastic_bench")
    parser.add_argument("--program", help="the benchmark program (default: BUILD_DIR/tests/bench/k8s_elastic_bench)")
    parser.add_argument("--controller-build-dir",
                        help="where scripts/dev-cluster finds fiber-controller (default: BUILD_DIR if it has "
                             "one, else build/)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sizes", default="1,4,8")
    parser.add_argument("--phase-seconds", type=float, default=5.0)
    parser.add_argument("--only", default=",".join(SCENARIOS), help="comma-separated: " + ", ".join(SCENARIOS))
    parser.add_argument("--out", help="JSON results (default: BUILD_DIR/bench/k8s_elastic.json)")
    parser.add_argument("--containers", action="store_true",
                        help=f"run the pods as real containers of {RUNTIME_IMAGE} (scripts/images builds it), "
                             "BUILD_DIR mounted into them, instead of host processes")
    args = parser.parse_args()
    if args.containers:
        # The image's user (not root) writes the work directories the harness makes.
        os.umask(0)
    build_dir = pathlib.Path(args.build_dir).resolve()
    program = str(pathlib.Path(args.program or build_dir / "tests/bench/k8s_elastic_bench").resolve())
    sizes = [int(s) for s in args.sizes.split(",")]
    only = args.only.split(",")
    if args.repeats < 1 or args.phase_seconds <= 0 or any(k < 1 for k in sizes):
        parser.error("--repeats, --phase-seconds and every size must be positive")
    if unknown := [s for s in only if s not in SCENARIOS]:
        parser.error(f"unknown scenario {', '.join(unknown)}: choose from {', '.join(SCENARIOS)}")
    if not os.access(program, os.X_OK):
        parser.error(f"{program} is not built (an openmpi4 build configured with -DFIBER_BUILD_BENCH=ON)")
    controller_build = pathlib.Path(args.controller_build_dir) if args.controller_build_dir else (
        build_dir if (build_dir / "k8s/controller/fiber-controller").exists() else ROOT / "build")
    out = pathlib.Path(args.out) if args.out else build_dir / "bench/k8s_elastic.json"
    out.parent.mkdir(parents=True, exist_ok=True)

    figures: dict[str, Any] = {"machine": f"{os.cpu_count()} cores, shared with the development cluster"}
    # Pods see the host's filesystem on the development cluster: the work directories live in the
    # build folder, where the program's processes in every pod can reach them.
    # Kept after the run (launcher logs of failed jobs, the cluster's logs); replaced by the next run.
    scratch = out.parent / "k8s_elastic_work"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()

    def work(name: str) -> pathlib.Path:
        path = pathlib.Path(scratch, name)
        path.mkdir()
        return path

    try:
        run_scenarios(args, build_dir, program, controller_build, sizes, only, work, scratch, figures)
    finally:
        # What was measured is reported even when a later scenario failed or the run was stopped.
        report(figures, sizes, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
