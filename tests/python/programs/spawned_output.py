"""What spawned processes print reaches the master's stdout, in every batch spawned (Open MPI 5
alone loses the output of later spawns in a program started without mpirun): a Group, then
Processes one after another, each spawning more."""

import os
import sys

import fibermpi


def say(tag):
    sys.stdout.write(f"SAID {tag}\n")  # one write: whole lines, whatever the buffering
    sys.stdout.flush()
    sys.stderr.write(f"ERR {tag}\n")


def member():
    say(f"member{fibermpi.group_rank()}")


if __name__ == "__main__":
    with fibermpi.Group(3, member) as group:
        pass
    for number in range(6):
        process = fibermpi.Process(target=say, args=(f"process{number}",))
        process.start()
        process.join(60)
    with fibermpi.Pool(2) as pool:
        pool.map(say, [f"task{number}" for number in range(4)])
    print("MAIN done", group.exitcodes, flush=True)
