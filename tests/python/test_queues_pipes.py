"""fibermpi's queues and pipes against multiprocessing's: items exactly once and in order,
block/timeout with queue.Full/queue.Empty, task_done/join, EOFError instead of a wait forever,
handles passed to Processes and pool tasks."""

from __future__ import annotations

import multiprocessing
import queue
import threading
import time

import pytest

import fibermpi


def produce(q, start, count):
    for i in range(start, start + count):
        q.put(i)


def echo(connection):
    while True:
        try:
            item = connection.recv()
        except EOFError:
            return
        connection.send(("echo", item))


def consume_and_mark(q, results):
    while True:
        item = q.get()
        if item is None:
            q.task_done()
            return
        results.put(item * 2)
        q.task_done()


def put_from_task(q, x):
    q.put(x * 10)
    return x


def send_and_close(connection, payload):
    connection.send_bytes(payload)
    connection.close()


def test_simple_queue_in_the_master():
    q = fibermpi.SimpleQueue()
    assert q.empty()
    for item in (1, "two", [3], {"four": 4}):
        q.put(item)
    assert not q.empty()
    assert [q.get() for _ in range(4)] == [1, "two", [3], {"four": 4}]
    q.close()
    with pytest.raises(ValueError, match="closed"):
        q.put(5)


def test_items_from_processes_arrive_once_each():
    q = fibermpi.Queue()
    producers = [fibermpi.Process(target=produce, args=(q, 100 * p, 50)) for p in range(3)]
    for p in producers:
        p.start()
    got = [q.get(timeout=120) for _ in range(150)]
    for p in producers:
        p.join(120)
        assert p.exitcode == 0
    assert sorted(got) == sorted(i for p in range(3) for i in range(100 * p, 100 * p + 50))
    for p in range(3):  # FIFO per producer
        own = [i for i in got if 100 * p <= i < 100 * p + 50]
        assert own == sorted(own)


def test_bounded_queue_blocks_and_times_out_with_the_standard_exceptions():
    q = fibermpi.Queue(maxsize=2)
    q.put(1)
    q.put_nowait(2)
    assert q.full() and q.qsize() == 2
    with pytest.raises(queue.Full):
        q.put_nowait(3)
    started = time.monotonic()
    with pytest.raises(queue.Full):
        q.put(3, timeout=0.2)
    assert time.monotonic() - started >= 0.15
    assert q.get() == 1 and q.get_nowait() == 2
    with pytest.raises(queue.Empty):
        q.get_nowait()
    with pytest.raises(queue.Empty):
        q.get(timeout=0.1)
    with pytest.raises(queue.Empty):
        q.get(block=False)
    # A put that waits for room goes through once a getter makes it.
    q.put("a")
    q.put("b")
    threading.Timer(0.2, q.get).start()
    q.put("c", timeout=30)
    assert [q.get(timeout=30), q.get(timeout=30)] == ["b", "c"]
    q.close()
    q.join_thread()
    q.cancel_join_thread()


def test_joinable_queue_task_done_and_join():
    jobs, results = fibermpi.JoinableQueue(), fibermpi.Queue()
    workers = [fibermpi.Process(target=consume_and_mark, args=(jobs, results)) for _ in range(2)]
    for w in workers:
        w.start()
    for i in range(20):
        jobs.put(i)
    for _ in workers:
        jobs.put(None)
    jobs.join()
    assert sorted(results.get(timeout=60) for _ in range(20)) == [i * 2 for i in range(20)]
    for w in workers:
        w.join(120)
    with pytest.raises(ValueError):
        jobs.task_done()


def test_a_queue_passed_to_pool_tasks():
    q = fibermpi.Queue()
    with fibermpi.Pool(2) as pool:
        assert pool.starmap(put_from_task, [(q, x) for x in range(5)]) == list(range(5))
    assert sorted(q.get(timeout=60) for _ in range(5)) == [0, 10, 20, 30, 40]


def test_duplex_pipe_with_a_process_and_eof_when_the_peer_is_gone():
    here, there = fibermpi.Pipe()
    process = fibermpi.Process(target=echo, args=(there,))
    process.start()
    there.close()
    for item in (1, "x", None):
        here.send(item)
        assert here.recv() == ("echo", item)
    assert not here.poll(0.05)
    here.close()
    process.join(120)
    assert process.exitcode == 0


def test_eof_error_instead_of_waiting_for_a_dead_writer():
    reader, writer = fibermpi.Pipe(duplex=False)
    process = fibermpi.Process(target=send_and_close, args=(writer, b"payload"))
    process.start()
    writer.close()
    assert reader.poll(120)
    assert reader.recv_bytes() == b"payload"
    with pytest.raises(EOFError):
        reader.recv()
    process.join(120)


def test_pipe_ends_refuse_misuse_like_multiprocessing():
    reader, writer = fibermpi.Pipe(duplex=False)
    assert reader.readable and not reader.writable and writer.writable
    with pytest.raises(OSError, match="read-only"):
        reader.send(1)
    with pytest.raises(OSError, match="write-only"):
        writer.recv()
    writer.send_bytes(b"0123456789", 2, 3)
    buffer = bytearray(8)
    assert reader.recv_bytes_into(buffer, 1) == 3 and bytes(buffer[1:4]) == b"234"
    writer.send_bytes(b"too long")
    with pytest.raises(multiprocessing.BufferTooShort):
        reader.recv_bytes_into(bytearray(2))
    writer.send_bytes(b"longer than four")
    with pytest.raises(OSError, match="bad message length"):
        reader.recv_bytes(maxlength=4)
    assert reader.closed
    with pytest.raises(OSError, match="closed"):
        reader.poll()
    with pytest.raises(ValueError):
        writer.send_bytes(b"abc", 5)
    writer.close()
    writer.close()
