"""Where a development Slurm keeps its files inside DIR, and the slurm.conf that says so."""

from __future__ import annotations

import dataclasses
import os
import socket

NODE_NAME = "localhost"
PARTITION = "debug"
CLUSTER_NAME = "devslurm"
# A UNIX socket's path holds at most 107 bytes; the sockets of a step (slurmstepd's,
# spool/localhost_<job>.<step>, and its PMIx server's) are the longest paths kept in DIR.
MAX_SOCKET_PATH = 107
LONGEST_SOCKET_NAME = max(len(f"spool/{NODE_NAME}_4294967294.4294967294"),
                          len("spool/stepd.slurm.pmix.4294967294.4294967294"), len("munge/munge.socket.lock"))


@dataclasses.dataclass(frozen=True)
class Layout:
    """The paths of one development Slurm, all below `root` (an absolute, resolved path)."""

    root: str

    @staticmethod
    def of(directory: str) -> Layout:
        return Layout(os.path.realpath(directory))

    def path(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    @property
    def slurm_conf(self) -> str:
        return self.path("slurm.conf")

    @property
    def env_file(self) -> str:
        return self.path("env.sh")

    @property
    def record(self) -> str:
        return self.path("devslurm.json")

    @property
    def munge_dir(self) -> str:
        return self.path("munge")

    @property
    def munge_socket(self) -> str:
        return self.path("munge", "munge.socket")

    @property
    def munge_key(self) -> str:
        return self.path("munge", "munge.key")

    @property
    def state_dir(self) -> str:
        return self.path("state")

    @property
    def spool_dir(self) -> str:
        return self.path("spool")

    @property
    def log_dir(self) -> str:
        return self.path("log")

    @property
    def run_dir(self) -> str:
        return self.path("run")

    @property
    def tmp_dir(self) -> str:
        return self.path("tmp")

    def log_file(self, daemon: str) -> str:
        """The log slurmctld or slurmd writes (SlurmctldLogFile, SlurmdLogFile); slurmd's also
        holds what its slurmstepds log."""
        return self.path("log", f"{daemon}.log")

    def output_file(self, daemon: str) -> str:
        """Where a daemon's stdout and stderr go: in the foreground each daemon writes there all
        it logs itself, from its first line on (munged only there)."""
        return self.path("log", f"{daemon}.out")

    def environment_line(self) -> str:
        """What a shell needs for Slurm's client commands to reach this Slurm: slurm.conf names the
        munge socket (AuthInfo), so SLURM_CONF is all."""
        return f"export SLURM_CONF={self.slurm_conf}"

    def socket_path_problem(self) -> str:
        """Why the sockets kept in DIR cannot be made, or "" when they can."""
        longest = len(self.root) + 1 + LONGEST_SOCKET_NAME
        if longest > MAX_SOCKET_PATH:
            return (f"{self.root} is too long for the UNIX sockets kept in it ({longest} > {MAX_SOCKET_PATH} bytes): "
                    f"use a shorter DIR (at most {MAX_SOCKET_PATH - longest + len(self.root)} characters)")
        return ""


def free_ports(count: int) -> list[int]:
    """Ports nothing listens on now, distinct from each other (all held open while choosing)."""
    held = []
    try:
        for _ in range(count):
            probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            probe.bind(("", 0))
            held.append(probe)
        return [probe.getsockname()[1] for probe in held]
    finally:
        for probe in held:
            probe.close()


def slurm_conf(layout: Layout, cpus: int, controller_port: int, node_port: int) -> str:
    """One node `localhost` advertising `cpus` CPUs whatever the machine has (config_overrides),
    in partition `debug`. No plugin touches cgroups, accounting or job completion records, and the
    timeouts are short so that a test sees a dead step or node within seconds. batch_sched_delay=0:
    a batch job starts at slurmctld's next scheduling pass (each second) instead of up to 3 s later."""
    return f"""# Written by `scripts/dev-slurm up {layout.root}`; rewritten by each `up`.
ClusterName={CLUSTER_NAME}
SlurmctldHost={NODE_NAME}
SlurmctldPort={controller_port}
SlurmdPort={node_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={layout.munge_socket}
StateSaveLocation={layout.state_dir}
SlurmdSpoolDir={layout.spool_dir}
SlurmctldPidFile={layout.path("run", "slurmctld.pid")}
SlurmdPidFile={layout.path("run", "slurmd.pid")}
SlurmctldLogFile={layout.log_file("slurmctld")}
SlurmdLogFile={layout.log_file("slurmd")}
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
TmpFS={layout.tmp_dir}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerParameters=batch_sched_delay=0
MpiDefault=none
SlurmdParameters=config_overrides
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=5
NodeName={NODE_NAME} NodeAddr=127.0.0.1 CPUs={cpus} Sockets=1 CoresPerSocket={cpus} ThreadsPerCore=1 State=UNKNOWN
PartitionName={PARTITION} Nodes={NODE_NAME} Default=YES MaxTime=INFINITE State=UP
"""
