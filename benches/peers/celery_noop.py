"""Celery's no-op rate on this machine, for `cargo bench --bench submit` to print beside
conveyor's end-to-end rate (issue 18's yardstick).

A worker (`celery worker -c 2`, prefork, acks_late, the default prefetch multiplier) is
started on a queue of its own on the local RabbitMQ; N `.delay()` calls of a task that
does nothing are published; the rate is N over the time from the first publish until
the queue is empty with nothing unacknowledged. Prints one line: `celery-noop <rate>`.

    python3 -m venv /var/tmp/conveyor-celery
    /var/tmp/conveyor-celery/bin/pip install 'celery==5.4.0'
    /var/tmp/conveyor-celery/bin/python benches/peers/celery_noop.py 10000
"""

import os
import subprocess
import sys
import time

from celery import Celery
from kombu import Connection, Queue

BROKER = os.environ.get("CELERY_BROKER", "amqp://guest:guest@127.0.0.1:5672//")
QUEUE = os.environ.get("CELERY_BENCH_QUEUE") or f"bench-celery-{os.getpid()}"

app = Celery("celery_noop", broker=BROKER)
app.conf.update(
    task_acks_late=True,
    task_ignore_result=True,
    task_default_queue=QUEUE,
    worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=True,
)


@app.task(name="noop")
def noop():
    return None


def depth(conn):
    """(ready, consumers) of the queue, from a passive declare."""
    ch = conn.channel()
    try:
        _, ready, consumers = ch.queue_declare(QUEUE, passive=True)
        return ready, consumers
    finally:
        ch.close()


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    here = os.path.dirname(os.path.abspath(__file__))
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "celery_noop", "worker", "-c", "2",
         "-Q", QUEUE, "--loglevel", "WARNING", "--without-gossip", "--without-mingle",
         "--without-heartbeat"],
        cwd=here,
        env={**os.environ, "CELERY_BENCH_QUEUE": QUEUE},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with Connection(BROKER) as conn:
            # Wait for the worker's consumer before timing anything.
            deadline = time.time() + 60
            while True:
                try:
                    if depth(conn)[1] >= 1:
                        break
                except Exception:
                    pass
                if time.time() > deadline:
                    raise SystemExit("celery worker did not start")
                time.sleep(0.2)
            start = time.time()
            for _ in range(n):
                noop.delay()
            # Ready 0 and, a moment later, still 0: what is left is in the workers'
            # prefetch (at most 2 x 4 messages), a few ms of work at these rates.
            while depth(conn)[0] > 0:
                time.sleep(0.005)
            elapsed = time.time() - start
            ch = conn.channel()
            ch.queue_delete(QUEUE)
            ch.close()
        print(f"celery-noop {n / elapsed:.0f}")
    finally:
        worker.terminate()
        worker.wait(timeout=30)


if __name__ == "__main__":
    # The worker imports this module by name; keep its queue the same.
    main()
