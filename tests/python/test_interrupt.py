"""Ctrl-C at a terminal, as a user presses it: a program started as `python prog.py` gets
KeyboardInterrupt where its master waits in map; under `fibermpi run` the launcher ends every
rank. Either way no process of the program is left behind."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import subprocess
import termios
import time
from pathlib import Path

import pytest

from conftest import FIBERMPI, PROGRAMS, PYTHON, clean_environment


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def processes_of_session(session: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == session and fields[0] != "Z":
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("launcher", [[], [FIBERMPI, "run", "-n", "3"]], ids=["singleton", "run3"])
def test_ctrl_c_raises_keyboard_interrupt_in_map_and_leaves_no_process(launcher):
    controller, terminal = pty.openpty()

    def own_session_on_the_terminal() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    run = subprocess.Popen([*launcher, PYTHON, str(PROGRAMS / "ctrl_c.py")], stdin=terminal,
                           stdout=terminal, stderr=terminal, env=clean_environment(),
                           preexec_fn=own_session_on_the_terminal)
    os.close(terminal)
    said = b""

    def read_for(seconds: float) -> None:
        nonlocal said
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if select.select([controller], [], [], 0.2)[0]:
                try:
                    chunk = os.read(controller, 4096)
                except OSError:
                    return
                if not chunk:
                    return
                said += chunk
            elif run.poll() is not None:
                return
    try:
        deadline = time.monotonic() + 120
        while b"WORKERS" not in said or b"\n" not in said.split(b"WORKERS", 1)[1]:
            assert run.poll() is None and time.monotonic() < deadline, said.decode(errors="replace")
            read_for(0.5)
        line = said.decode(errors="replace").split("WORKERS", 1)[1].split("\n")[0].split()
        workers = [int(word) for word in line if word.isdigit()]
        time.sleep(1)
        os.write(controller, b"\x03")
        run.wait(timeout=60)
        read_for(1)
        text = said.decode(errors="replace")
        if launcher:
            # The kernel sends SIGINT to the whole foreground group, the launcher included, which
            # ends every rank at once (as for a C++ program): the shell's status, no traceback.
            assert run.returncode == 128 + signal.SIGINT, text
        else:
            assert "INTERRUPTED" in text and "KeyboardInterrupt" in text, text
        deadline = time.monotonic() + 20
        while any(running(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in workers if running(pid)], text
        while processes_of_session(run.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not processes_of_session(run.pid), text
    finally:
        for pid in processes_of_session(run.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        os.close(controller)
