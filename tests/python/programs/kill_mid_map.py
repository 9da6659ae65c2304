"""A worker SIGKILLed in the middle of a map: every value arrives, once, in order, and the
pool replaces the worker. Then a Process killed by SIGKILL ends with exit code -9."""

import os
import signal
import threading
import time

import fibermpi as mp


def slow_square(x):
    time.sleep(0.02)
    return x * x


def sleep_for(seconds):
    time.sleep(seconds)


if __name__ == "__main__":
    with mp.Pool(2) as pool:
        pool.wait_until_workers_up()
        victim = pool._pool.worker_pids()[0]

        def kill_one():
            time.sleep(0.5)
            os.kill(victim, signal.SIGKILL)
            print("KILLED", victim, flush=True)
        killer = threading.Thread(target=kill_one)
        killer.start()
        values = pool.map(slow_square, range(300), chunksize=1)
        killer.join()
        assert values == [x * x for x in range(300)], "lost or repeated values"
        assert victim not in pool._pool.worker_pids()
        print("MAP EXACT", len(values), flush=True)
    process = mp.Process(target=sleep_for, args=(60,))
    process.start()
    pid = process.pid
    os.kill(pid, signal.SIGKILL)
    process.join(60)
    print("PROCESS EXITCODE", process.exitcode, flush=True)
