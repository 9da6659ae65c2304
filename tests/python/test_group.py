"""fibermpi.Group: members on one real MPI communicator (mpi4py's), exit codes, a failing or
killed member stopping the others, restarts, terminate, nesting inside a worker, misuse.

Runs in every launch mode with the other API tests (spawned members, or idle ranks under
``fibermpi run -n 4``)."""

from __future__ import annotations

import array
import os
import pickle
import signal
import sys
import time

import pytest

import fibermpi
from fibermpi import group_comm, group_rank, group_restarts, group_size

# Long enough for a spawn on a loaded machine; a hang still fails.
END = 120


def report_membership(report):
    comm = group_comm()
    assert comm is group_comm()
    # A buffer collective on a real communicator, and a pickled one.
    mine = array.array("d", [comm.Get_rank() + 1.0] * 4)
    total = array.array("d", [0.0] * 4)
    comm.Allreduce(mine, total)
    ranks = comm.allgather(group_rank())
    shared = comm.bcast({"from": "rank 0"} if comm.Get_rank() == 0 else None, root=0)
    report.put((group_rank(), group_size(), group_restarts(), comm.Get_rank(), comm.Get_size(),
                type(comm).__name__, list(total), ranks, shared))


def test_members_share_a_real_communicator():
    report = fibermpi.Queue()
    group = fibermpi.Group(3, report_membership, args=(report,))
    assert group.exitcodes == [None, None, None] and group.restarts == 0 and group.size == 3
    group.start()
    group.join(END)
    assert group.exitcodes == [0, 0, 0], group.exitcodes
    seen = sorted(report.get(timeout=10) for _ in range(3))
    for rank, entry in enumerate(seen):
        assert entry == (rank, 3, 0, rank, 3, "Intracomm", [6.0] * 4, [0, 1, 2],
                         {"from": "rank 0"})
    assert not group.is_alive() and "exitcodes=[0, 0, 0]" in repr(group)


def exit_by_rank(codes):
    comm = group_comm()
    code = codes[comm.Get_rank()]
    if code == "raise":
        raise RuntimeError("a member's uncaught error")
    if code is not None:
        sys.exit(code)
    while comm.Get_size() > 1:  # the others are stopped here
        time.sleep(0.05)


@pytest.mark.parametrize("codes,expected", [
    ([None, "raise", None], [-15, 1, -15]),
    ([None, None, 7], [-15, -15, 7]),
    ([0, 0], [0, 0]),
])
def test_a_failing_member_stops_the_others(codes, expected):
    group = fibermpi.Group(len(codes), exit_by_rank, args=(codes,))
    with group:
        pass
    assert group.exitcodes == expected and group.restarts == 0


def allreduce_until_killed(victim, marks):
    comm = group_comm()
    value = array.array("d", [1.0] * 128)
    total = array.array("d", [0.0] * 128)
    for step in range(10**9):
        if step == 50 and comm.Get_rank() == victim:
            marks.put(time.time())
            os.kill(os.getpid(), signal.SIGKILL)
        comm.Allreduce(value, total)


def test_a_member_killed_mid_allreduce_stops_the_group():
    marks = fibermpi.Queue()
    group = fibermpi.Group(3, allreduce_until_killed, args=(1, marks))
    group.start()
    killed_at = marks.get(timeout=END)
    group.join(END)
    ended_after = time.time() - killed_at
    codes = group.exitcodes
    assert codes[1] == -9, codes
    # Stopped by their runtime, or ended by the failed Allreduce (Open MPI 5's fault tolerance
    # reports the dead peer).
    assert codes[0] in (-15, 1) and codes[2] in (-15, 1), codes
    # Within the heartbeat timeout (5 s by default) and a few seconds more.
    assert ended_after < 5 + 5, ended_after


def fail_until_attempt(good_attempt, seen):
    comm = group_comm()
    seen.put((group_restarts(), comm.Get_rank()))
    comm.Barrier()  # every member has reported before one fails
    if group_restarts() < good_attempt and comm.Get_rank() == comm.Get_size() - 1:
        sys.exit(5)
    comm.Barrier()


def test_the_whole_group_runs_again_while_restarts_remain():
    seen = fibermpi.Queue()
    with fibermpi.Group(2, fail_until_attempt, args=(2, seen), max_restarts=2) as group:
        pass
    assert group.restarts == 2 and group.exitcodes == [0, 0]
    runs = [seen.get(timeout=10) for _ in range(6)]
    assert sorted(runs) == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]

    with fibermpi.Group(2, fail_until_attempt, args=(5, seen), max_restarts=1) as exhausted:
        pass
    # Rank 0 is stopped in its barrier, or ended by it when it reports the dead peer first.
    assert exhausted.restarts == 1 and exhausted.exitcodes in ([-15, 5], [1, 5])


def sleep_forever(running=None):
    group_comm()
    if running is not None:
        running.put(group_rank())
    while True:
        time.sleep(0.1)


def test_terminate_stops_every_member_and_join_with_timeout_returns():
    running = fibermpi.Queue()
    group = fibermpi.Group(2, sleep_forever, args=(running,))
    group.start()
    assert sorted(running.get(timeout=END) for _ in range(2)) == [0, 1]
    started = time.monotonic()
    group.join(0.5)
    assert time.monotonic() - started >= 0.4 and group.is_alive()
    assert group.exitcodes == [None, None]
    group.terminate()
    group.join(END)
    assert group.exitcodes == [-15, -15] and not group.is_alive()
    group.terminate()  # after the end: nothing


def test_leaving_a_with_block_by_an_exception_terminates_the_group():
    running = fibermpi.Queue()
    with pytest.raises(KeyError):
        with fibermpi.Group(2, sleep_forever, args=(running,)) as group:
            assert sorted(running.get(timeout=END) for _ in range(2)) == [0, 1]
            raise KeyError("the block failed")
    assert group.exitcodes == [-15, -15]


def allreduce_sum(value):
    return group_comm().allreduce(value)


def group_in_a_worker(size):
    results = fibermpi.Queue()
    with fibermpi.Group(size, put_allreduce, args=(results,)) as group:
        pass
    return group.exitcodes, sorted(results.get(timeout=10) for _ in range(size))


def put_allreduce(results):
    results.put(allreduce_sum(group_rank() + 10))


def test_a_group_runs_inside_a_pool_worker():
    with fibermpi.Pool(1) as pool:
        codes, sums = pool.apply(group_in_a_worker, (2,))
    assert codes == [0, 0] and sums == [21, 21]


def report_pid_then_wait(pids, release):
    pids.put(os.getpid())
    release.wait(END)


def listed_members(size, pids, release):
    """Starts a group of `size`, returns the pids active_children() lists for it while it runs
    (checked against what the members report), and whether it lists any after the end."""
    group = fibermpi.Group(size, report_pid_then_wait, args=(pids, release))
    group.start()
    reported = sorted(pids.get(timeout=END) for _ in range(size))
    deadline = time.monotonic() + 30
    while True:  # a member is placed before it runs; its pid is known from then on
        members = [child for child in fibermpi.active_children()
                   if child.name.startswith("GroupMember-")]
        if sorted(member.pid for member in members) == reported or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    alive = all(member.is_alive() and member.daemon for member in members)
    release.set()
    group.join(END)
    after = [child for child in fibermpi.active_children() if child.name.startswith("GroupMember-")]
    return reported, sorted(member.pid for member in members), alive, group.exitcodes, after, members


def test_active_children_lists_a_running_groups_members_and_not_after_its_end():
    reported, listed, alive, codes, after, members = listed_members(
        2, fibermpi.Queue(), fibermpi.Event())
    assert listed == reported and alive and codes == [0, 0] and after == []
    assert not any(member.is_alive() for member in members)


def listed_members_in_a_worker(size, pids, release):
    reported, listed, alive, codes, after, _ = listed_members(size, pids, release)
    return reported, listed, alive, codes, after


def test_a_worker_lists_the_members_of_its_own_group():
    with fibermpi.Pool(1) as pool:
        reported, listed, alive, codes, after = pool.apply(
            listed_members_in_a_worker, (2, fibermpi.Queue(), fibermpi.Event()))
    assert listed == reported and alive and codes == [0, 0] and after == []


def test_misuse_is_refused():
    with pytest.raises(fibermpi.UsageError, match="size must be at least 1, got 0"):
        fibermpi.Group(0, sleep_forever)
    with pytest.raises(TypeError, match="size must be an int"):
        fibermpi.Group(2.0, sleep_forever)
    with pytest.raises(TypeError, match="target must be callable"):
        fibermpi.Group(2, "not a function")
    with pytest.raises(fibermpi.UsageError, match="max_restarts cannot be negative"):
        fibermpi.Group(1, sleep_forever, max_restarts=-1)
    group = fibermpi.Group(1, exit_by_rank, args=([0],))
    with pytest.raises(fibermpi.UsageError, match="can only join a started group"):
        group.join()
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(group)
    group.start()
    with pytest.raises(fibermpi.UsageError, match="started before"):
        group.start()
    group.join(END)
    assert group.exitcodes == [0]
    for outside in (group_comm, group_rank, group_size, group_restarts):
        with pytest.raises(fibermpi.UsageError, match="only be called inside a member"):
            outside()


def test_an_unpicklable_argument_is_refused_at_start():
    import threading
    group = fibermpi.Group(2, exit_by_rank, args=(threading.Lock(),))
    with pytest.raises(TypeError, match="Group-"):
        group.start()
    assert not group.is_alive()
