"""`dev-slurm up|down|status DIR`: starts, stops and reports a one-node Slurm whose every file
lives in DIR; nothing it starts writes outside DIR, so `down` has only processes to end.

DIR layout: devslurm.json (the daemons' pids and start times, the ports; written before anything
starts), slurm.conf, env.sh (the line `up` prints), munge/ (key, socket, munged's pid and seed
files), state/ (StateSaveLocation), spool/ (SlurmdSpoolDir), log/ (slurmctld.log, slurmd.log and
each daemon's stdout and stderr in NAME.out), run/ (Slurm's pid files), tmp/ (TmpFS).

`up` on a DIR that is up says so, prints the environment line again and succeeds (it fails when
asked for other CPUs than the running node has); on a DIR with some of its processes left (a daemon
died) it fails and asks for `down` first. Each `up` starts from an
empty Slurm state (slurmctld -c): no job of an earlier `up` comes back."""

from __future__ import annotations

import argparse
import json
import os
import pwd
import shutil
import subprocess
import sys
import time
from typing import Any, Callable

from . import processes
from .config import NODE_NAME, PARTITION, Layout, free_ports, slurm_conf
from .processes import ProcessId

DAEMONS = ("munged", "slurmctld", "slurmd")
NEEDED_COMMANDS = DAEMONS + ("sinfo",)
START_TIMEOUT_S = 60.0
MUNGE_START_TIMEOUT_S = 10.0
STOP_GRACE_S = 10.0
STEP_STOP_GRACE_S = 1.0
STEP_SEARCHES = 3
# Ended daemons are no longer this process's children: whoever adopted them reaps them (pid 1 of a
# container may take a second or two), and until then `pgrep slurm` still lists them.
REAP_WAIT_S = 5.0
CLIENT_TIMEOUT_S = 15.0
EXIT_DOWN = 3


class SlurmError(Exception):
    """`up`, `down` or `status` cannot go on; the message says why and what to do."""


def log(message: str) -> None:
    print(f"dev-slurm: {message}", file=sys.stderr, flush=True)


# --- the record ---------------------------------------------------------------------------------
def read_record(layout: Layout) -> dict[str, Any]:
    try:
        with open(layout.record, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def write_record(layout: Layout, record: dict[str, Any]) -> None:
    with open(layout.record + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(record, handle, indent=2)
    os.replace(layout.record + ".tmp", layout.record)


def recorded_daemons(record: dict[str, Any]) -> dict[str, ProcessId]:
    return {name: ProcessId(entry["pid"], entry["start_ticks"]) for name, entry in record.get("daemons", {}).items()}


def running_daemons(layout: Layout) -> dict[str, ProcessId]:
    return {name: daemon for name, daemon in recorded_daemons(read_record(layout)).items() if daemon.alive()}


# --- Slurm's client commands --------------------------------------------------------------------
def client_environment(layout: Layout) -> dict[str, str]:
    """This process's environment without another Slurm's job variables, naming this slurm.conf."""
    environment = {name: value for name, value in os.environ.items() if not name.startswith("SLURM_")}
    environment["SLURM_CONF"] = layout.slurm_conf
    return environment


def run_client(layout: Layout, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S,
                          env=client_environment(layout), stdin=subprocess.DEVNULL)


def node_state(layout: Layout) -> str:
    """The node's state as sinfo prints it (`idle`, `down*`, ...), or "" while slurmctld does not answer."""
    try:
        result = run_client(layout, "sinfo", "-h", "-N", "-o", "%t")
    except subprocess.TimeoutExpired:
        return ""
    return result.stdout.strip() if result.returncode == 0 else ""


# --- logs ---------------------------------------------------------------------------------------
def tail(path: str, lines: int) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return "".join(handle.readlines()[-lines:])
    except OSError:
        return ""


def log_tails(layout: Layout, lines: int = 20) -> str:
    """The end of what each daemon wrote, for a failure's message."""
    parts = []
    for daemon in DAEMONS:
        text = tail(layout.output_file(daemon), lines)
        if text.strip():
            parts.append(f"--- {layout.output_file(daemon)} (last {lines} lines)\n{text.rstrip()}")
    return "\n".join(parts) or "(the daemons wrote nothing)"


# --- up -----------------------------------------------------------------------------------------
def munge_account(layout: Layout) -> tuple[int, int]:
    """The uid and gid munged runs as: the `munge` account when it exists and can reach DIR (every
    directory from / to DIR searchable by others, which a mkdtemp DIR is not), root otherwise."""
    try:
        account = pwd.getpwnam("munge")
    except KeyError:
        return 0, 0
    directory = layout.root
    while True:
        if not os.stat(directory).st_mode & 0o001:
            return 0, 0
        if directory == os.path.dirname(directory):
            return account.pw_uid, account.pw_gid
        directory = os.path.dirname(directory)


def prepare_munge(layout: Layout, uid: int, gid: int) -> None:
    """munge/ owned by munged's account with a key of 1024 random bytes (kept across `up`s), and
    no socket left by a munged that was killed."""
    os.makedirs(layout.munge_dir, mode=0o755, exist_ok=True)
    os.chmod(layout.munge_dir, 0o755)
    if not os.path.exists(layout.munge_key):
        descriptor = os.open(layout.munge_key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(os.urandom(1024))
    for name in [""] + os.listdir(layout.munge_dir):
        os.chown(os.path.join(layout.munge_dir, name), uid, gid)
    for stale in (layout.munge_socket, layout.munge_socket + ".lock"):
        if os.path.exists(stale):
            os.unlink(stale)


def start_daemon(layout: Layout, name: str, argv: list[str], uid: int = 0, gid: int = 0) -> subprocess.Popen[bytes]:
    """Starts a daemon in the foreground of a session of its own, marked with DEVSLURM_DIR."""
    environment = dict(client_environment(layout), **{processes.MARK: layout.root})
    with open(layout.output_file(name), "wb") as output:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=layout.root, env=environment, close_fds=True,
                                user=uid or None, group=gid or None, extra_groups=[] if uid else None)


def wait_until(what: str, ready: Callable[[], bool], started: dict[str, subprocess.Popen[bytes]],
               timeout_s: float) -> None:
    """Polls ready() until it holds; fails at once when a started daemon exits."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        for name, process in started.items():
            if process.poll() is not None:
                raise SlurmError(f"{name} exited with status {process.returncode} while waiting for {what}")
        if time.monotonic() > deadline:
            raise SlurmError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.1)


def start_all(layout: Layout, record: dict[str, Any]) -> None:
    started: dict[str, subprocess.Popen[bytes]] = {}

    def launch(name: str, argv: list[str], uid: int = 0, gid: int = 0) -> None:
        process = start_daemon(layout, name, argv, uid, gid)
        started[name] = process
        identity = ProcessId.of(process.pid)
        record["daemons"][name] = {"pid": process.pid, "start_ticks": identity.start_ticks if identity else 0}
        write_record(layout, record)

    uid, gid = munge_account(layout)
    prepare_munge(layout, uid, gid)
    # --force: munged refuses to run as root, and a DIR below a group-writable directory, otherwise.
    launch("munged", ["munged", "--foreground", "--force", f"--socket={layout.munge_socket}",
                      f"--key-file={layout.munge_key}", f"--pid-file={layout.path('munge', 'munged.pid')}",
                      f"--seed-file={layout.path('munge', 'munged.seed')}"],
           uid, gid)
    wait_until("munged's socket", lambda: os.path.exists(layout.munge_socket), started, MUNGE_START_TIMEOUT_S)
    launch("slurmctld", ["slurmctld", "-D", "-c", "-f", layout.slurm_conf])
    launch("slurmd", ["slurmd", "-D", "-c", "-f", layout.slurm_conf, "-N", NODE_NAME])
    wait_until(f"node {NODE_NAME} to be idle in partition {PARTITION}", lambda: node_state(layout) == "idle",
               started, START_TIMEOUT_S)


def setup_problem(layout: Layout) -> str:
    """Why a Slurm cannot be started here, or "" when it can."""
    missing = [command for command in NEEDED_COMMANDS if not shutil.which(command)]
    if missing:
        return f"{', '.join(missing)} not found: install the Debian packages slurm-wlm and munge (scripts/setup does)"
    if os.geteuid() != 0:
        return "needs root: its daemons run as root (SlurmUser, SlurmdUser) and slurmd runs jobs as their users"
    return layout.socket_path_problem()


def up(layout: Layout, cpus: int) -> int:
    problem = setup_problem(layout)
    if problem:
        raise SlurmError(problem)
    running = running_daemons(layout)
    if len(running) == len(DAEMONS):
        running_cpus = read_record(layout).get("cpus")
        if running_cpus != cpus:
            raise SlurmError(f"{layout.root} is up with {running_cpus} CPUs, not {cpus}: "
                             f"run `scripts/dev-slurm down {layout.root}` first")
        log(f"{layout.root} is already up with {cpus} CPUs ("
            + ", ".join(f"{name} {daemon.pid}" for name, daemon in running.items()) + ")")
        print(layout.environment_line(), flush=True)
        return 0
    leftovers = processes.marked(layout.root)
    if running or leftovers:
        raise SlurmError(f"{layout.root} is partly up ({', '.join(running) or 'no daemon'} running, "
                         f"{len(leftovers)} processes of it left): run `scripts/dev-slurm down {layout.root}` first")
    started_at = time.monotonic()
    for directory in (layout.root, layout.state_dir, layout.spool_dir, layout.log_dir, layout.run_dir, layout.tmp_dir):
        os.makedirs(directory, exist_ok=True)
    controller_port, node_port = free_ports(2)
    with open(layout.slurm_conf, "w", encoding="utf-8") as handle:
        handle.write(slurm_conf(layout, cpus, controller_port, node_port))
    record: dict[str, Any] = {"cpus": cpus, "slurmctld_port": controller_port, "slurmd_port": node_port,
                              "daemons": {}}
    write_record(layout, record)
    try:
        start_all(layout, record)
    except (SlurmError, OSError) as error:
        tails = log_tails(layout)
        stop(layout)
        raise SlurmError(f"{error}\n{tails}\nthe daemons it started are stopped again") from error
    with open(layout.env_file, "w", encoding="utf-8") as handle:
        handle.write(layout.environment_line() + "\n")
    log(f"up in {time.monotonic() - started_at:.1f} s: node {NODE_NAME} with {cpus} CPUs, slurmctld on port "
        f"{controller_port}, slurmd on port {node_port}; the environment is also in {layout.env_file}")
    print(layout.environment_line(), flush=True)
    return 0


# --- down ---------------------------------------------------------------------------------------
def step_processes(layout: Layout, daemons: dict[str, ProcessId]) -> list[ProcessId]:
    """The slurmstepds of this Slurm and its jobs' processes, not this process or its ancestors."""
    daemon_pids = {daemon.pid for daemon in daemons.values()}
    steps = [pid for pid in processes.marked(layout.root) if pid not in daemon_pids]
    excluded = processes.own_lineage() | daemon_pids
    found = []
    for pid in dict.fromkeys(steps + processes.descendants(steps) + processes.job_processes(layout.slurm_conf)):
        identity = ProcessId.of(pid)
        if pid not in excluded and identity:
            found.append(identity)
    return found


def stop(layout: Layout) -> list[str]:
    """Ends Slurm's daemons, then what is left of its steps and jobs (a step may fork while it is
    ended: looked for again), then munged (the others authenticate through it up to their end).
    Returns what it ended, for the report."""
    daemons = {name: daemon for name, daemon in recorded_daemons(read_record(layout)).items() if daemon.alive()}
    ended = [f"{name} ({daemon.pid})" for name, daemon in daemons.items()]
    survivors = processes.terminate([daemons[name] for name in ("slurmctld", "slurmd") if name in daemons],
                                    STOP_GRACE_S)
    steps: list[ProcessId] = []
    for _ in range(STEP_SEARCHES):
        left = step_processes(layout, daemons)
        if not left:
            break
        steps += left
        survivors += processes.terminate(left, STEP_STOP_GRACE_S)
    if steps:
        ended.append(f"{len(steps)} step and job processes")
    if "munged" in daemons:
        survivors += processes.terminate([daemons["munged"]], STOP_GRACE_S)
    if survivors:
        raise SlurmError("processes that outlived SIGKILL: " + " ".join(str(process.pid) for process in survivors))
    processes.wait_while(list(daemons.values()) + steps, ProcessId.exists, REAP_WAIT_S)
    for stale in (layout.munge_socket, layout.munge_socket + ".lock",
                  layout.path("run", "slurmctld.pid"), layout.path("run", "slurmd.pid")):
        if os.path.exists(stale):
            os.unlink(stale)
    record = read_record(layout)
    if record:
        record["daemons"] = {}
        write_record(layout, record)
    return ended


def down(layout: Layout) -> int:
    if not os.path.isdir(layout.root):
        log(f"{layout.root} does not exist: nothing to stop")
        return 0
    ended = stop(layout)
    if ended:
        log(f"{layout.root} is down: ended " + ", ".join(ended))
    else:
        log(f"no process of {layout.root} was running: nothing to stop")
    return 0


# --- status -------------------------------------------------------------------------------------
def status(layout: Layout) -> int:
    running = running_daemons(layout)
    for name in DAEMONS:
        print(f"{name:<10} {'running, pid ' + str(running[name].pid) if name in running else 'not running'}")
    steps = [pid for pid in processes.marked(layout.root) if processes.command_name(pid) == "slurmstepd"]
    print(f"{'steps':<10} {len(steps)} slurmstepd processes")
    if "slurmctld" in running:
        for argv in (["sinfo", "-N", "-o", "%N %P %t %c"], ["squeue", "-o", "%i %j %T %D %C %M %R"]):
            try:
                result = run_client(layout, *argv)
                print(result.stdout.rstrip() or result.stderr.rstrip())
            except subprocess.TimeoutExpired:
                print(f"{argv[0]}: no answer within {CLIENT_TIMEOUT_S:.0f} s")
    if len(running) == len(DAEMONS):
        print(f"up: {layout.environment_line()}")
        return 0
    print("down" if not running else f"partly up: run `scripts/dev-slurm down {layout.root}` before `up`")
    return EXIT_DOWN


# --- command line -------------------------------------------------------------------------------
def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return value


def add_arguments(subparsers: Any) -> None:
    up_parser = subparsers.add_parser("up", help="start munged, slurmctld and slurmd; print the environment to use")
    up_parser.add_argument("dir")
    up_parser.add_argument("--cpus", type=positive, default=8,
                           help="CPUs the node advertises, whatever the machine has (default 8)")
    down_parser = subparsers.add_parser("down", help="stop the daemons, their steps and jobs (fine when not up)")
    down_parser.add_argument("dir")
    status_parser = subparsers.add_parser("status", help="the daemons, sinfo and squeue; exit 0 when up, 3 otherwise")
    status_parser.add_argument("dir")


def main(args: argparse.Namespace) -> int:
    layout = Layout.of(args.dir)
    try:
        if args.command == "up":
            return up(layout, args.cpus)
        if args.command == "down":
            return down(layout)
        return status(layout)
    except SlurmError as error:
        log(f"{args.command} failed: {error}")
        return 1
