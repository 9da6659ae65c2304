"""A Process SIGKILLed while it holds a fibermpi Lock: the master releases it and the next
acquire succeeds. A Process SIGKILLed while it waits at a Barrier: the master, waiting there
too, gets threading.BrokenBarrierError instead of waiting forever."""

import os
import signal
import threading
import time

import fibermpi as mp


def hold_forever(lock, report):
    lock.acquire()
    report.put("held")
    time.sleep(600)


def wait_at(barrier, report):
    report.put("arriving")
    barrier.wait()


if __name__ == "__main__":
    lock, report = mp.Lock(), mp.Queue()
    holder = mp.Process(target=hold_forever, args=(lock, report))
    holder.start()
    assert report.get(timeout=60) == "held"
    assert lock.acquire(timeout=0.2) is False
    os.kill(holder.pid, signal.SIGKILL)
    holder.join(60)
    print("HOLDER EXITCODE", holder.exitcode, flush=True)
    print("LOCK ACQUIRED", lock.acquire(timeout=60), flush=True)

    barrier = mp.Barrier(3)
    party = mp.Process(target=wait_at, args=(barrier, report))
    party.start()
    assert report.get(timeout=60) == "arriving"
    time.sleep(0.3)  # the party waits at the barrier now
    threading.Timer(0.3, os.kill, (party.pid, signal.SIGKILL)).start()
    try:
        barrier.wait(60)
        print("BARRIER PASSED", flush=True)
    except threading.BrokenBarrierError as error:
        print("BARRIER BROKEN", error, flush=True)
    party.join(60)
    print("PARTY EXITCODE", party.exitcode, flush=True)
