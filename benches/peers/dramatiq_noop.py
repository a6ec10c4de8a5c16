"""Dramatiq's no-op rate, and its rate with one database write per task, on this machine,
for `cargo bench --bench submit` to print beside conveyor's end-to-end rate and Celery's
(issue 63's yardsticks).

A worker (`dramatiq --processes 2`: two processes, as Celery's `-c 2`, each with
Dramatiq's default 8 threads and prefetch of 2 x threads; default middleware; acks after
the actor returns) is started on a queue of its own on the local RabbitMQ; N `.send()`
calls of an actor are published (persistent, no publisher confirms: Dramatiq's
defaults, as Celery's); the rate is N over the time from the first publish until the
queue is empty and every message has been acknowledged (counted exactly: a middleware
appends one byte to a file after each ack).

    python dramatiq_noop.py [N]        # actor does nothing: prints `dramatiq-noop <rate>`
    python dramatiq_noop.py [N] db     # actor does one INSERT + commit into PostgreSQL:
                                       # prints `dramatiq-db <rate>`

The db mode creates a scratch database `bench_dramatiq_<pid>` (dropped afterwards) on
`BENCH_PG_ADMIN` (default `postgres://postgres@127.0.0.1:5432`, the server
scripts/services.sh sets up: user postgres, trust on loopback) with `BENCH_PG_PARAMS`
(default `sslmode=disable`, as the submit bench), and a table like the submit bench's
floor (`id VARCHAR(36) PRIMARY KEY, body TEXT NOT NULL`). Each worker thread keeps one
psycopg connection, opened when the worker process starts (not timed). The broker is
`DRAMATIQ_BROKER` (default `amqp://guest:guest@127.0.0.1:5672/%2F`).

Installed into the same venv as Celery's peer (versions this was written against:
dramatiq 2.2.1 with pika 1.4.4, psycopg 3.3.9 with psycopg-binary 3.3.9, Python 3.11):

    python3 -m venv /var/tmp/conveyor-celery
    /var/tmp/conveyor-celery/bin/pip install 'celery==5.4.0' 'dramatiq[rabbitmq]==2.2.1' \\
        'psycopg[binary]==3.3.9'
    /var/tmp/conveyor-celery/bin/python benches/peers/dramatiq_noop.py 10000
    /var/tmp/conveyor-celery/bin/python benches/peers/dramatiq_noop.py 10000 db
"""

import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import dramatiq
import pika
from dramatiq.brokers.rabbitmq import RabbitmqBroker
from dramatiq.middleware import Middleware

BROKER = os.environ.get("DRAMATIQ_BROKER", "amqp://guest:guest@127.0.0.1:5672/%2F")
# The worker processes get it from the environment (their argv is dramatiq's).
MODE = os.environ.get("DRAMATIQ_BENCH_MODE") or (
    sys.argv[2] if len(sys.argv) > 2 else "noop"
)
QUEUE = os.environ.get("DRAMATIQ_BENCH_QUEUE") or f"bench-dramatiq-{MODE}-{os.getpid()}"
# Set in the worker processes only: where each ack is counted, and the db mode's DSN.
ACKS = os.environ.get("DRAMATIQ_BENCH_ACKS")
DSN = os.environ.get("DRAMATIQ_BENCH_DSN")
PROCESSES = 2


class AckCounter(Middleware):
    """One byte appended to a file after each ack (O_APPEND: atomic across threads and
    processes); the file's size is the number of messages done."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND)

    def after_ack(self, broker, message):
        os.write(self.fd, b".")


broker = RabbitmqBroker(url=BROKER)
if ACKS:
    broker.add_middleware(AckCounter(ACKS))
dramatiq.set_broker(broker)

_local = threading.local()


def _conn():
    import psycopg

    c = getattr(_local, "conn", None)
    if c is None:
        c = _local.conn = psycopg.connect(DSN)
    return c


class DbConnections(Middleware):
    """Opens each worker thread's connection when the thread starts, before any message."""

    def after_worker_thread_boot(self, broker, thread):
        _conn()


if ACKS and DSN:
    broker.add_middleware(DbConnections())


@dramatiq.actor(queue_name=QUEUE, actor_name="noop")
def noop():
    return None


@dramatiq.actor(queue_name=QUEUE, actor_name="db_write")
def db_write(body):
    c = _conn()
    c.execute(
        "INSERT INTO bench_dramatiq (id, body) VALUES (%s, %s)", (str(uuid.uuid4()), body)
    )
    c.commit()


def depth():
    """(ready, consumers) of the queue, from a passive declare (None before it exists)."""
    conn = pika.BlockingConnection(pika.URLParameters(BROKER))
    try:
        while True:
            ch = conn.channel()
            try:
                ok = ch.queue_declare(QUEUE, passive=True).method
                yield ok.message_count, ok.consumer_count
            except pika.exceptions.ChannelClosedByBroker:
                yield None
            finally:
                if ch.is_open:
                    ch.close()
    finally:
        conn.close()


def scratch_db():
    """A database of its own with the table; its DSN and a function that drops it."""
    import psycopg

    admin = os.environ.get("BENCH_PG_ADMIN", "postgres://postgres@127.0.0.1:5432").rstrip("/")
    params = os.environ.get("BENCH_PG_PARAMS", "sslmode=disable")
    name = f"bench_dramatiq_{os.getpid()}"
    with psycopg.connect(f"{admin}/postgres?{params}", autocommit=True) as c:
        c.execute(f"DROP DATABASE IF EXISTS {name}")
        c.execute(f"CREATE DATABASE {name}")
    dsn = f"{admin}/{name}?{params}"
    with psycopg.connect(dsn) as c:
        c.execute(
            "CREATE TABLE bench_dramatiq (id VARCHAR(36) PRIMARY KEY, body TEXT NOT NULL)"
        )

    def drop():
        with psycopg.connect(f"{admin}/postgres?{params}", autocommit=True) as c:
            c.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    return dsn, drop


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    if MODE not in ("noop", "db"):
        raise SystemExit(f"unknown mode {MODE!r}: noop or db")
    here = os.path.dirname(os.path.abspath(__file__))
    fd, acks = tempfile.mkstemp(prefix="dramatiq-acks-")
    os.close(fd)
    env = {
        **os.environ,
        "DRAMATIQ_BENCH_QUEUE": QUEUE,
        "DRAMATIQ_BENCH_MODE": MODE,
        "DRAMATIQ_BENCH_ACKS": acks,
    }
    dsn, drop = scratch_db() if MODE == "db" else (None, None)
    if dsn:
        env["DRAMATIQ_BENCH_DSN"] = dsn
    worker = subprocess.Popen(
        [sys.executable, "-m", "dramatiq", "dramatiq_noop", "--processes", str(PROCESSES),
         "--queues", QUEUE],
        cwd=here,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        probe = depth()
        # Wait for both worker processes' consumers before timing anything.
        deadline = time.time() + 60
        while True:
            d = next(probe)
            if d is not None and d[1] >= PROCESSES:
                break
            if worker.poll() is not None:
                raise SystemExit(f"dramatiq worker exited: {worker.returncode}")
            if time.time() > deadline:
                raise SystemExit("dramatiq worker did not start")
            time.sleep(0.2)
        # The publisher's connection and declarations, not timed.
        broker.declare_queue(QUEUE, ensure=True)
        send = noop.send if MODE == "noop" else (lambda: db_write.send("a spring campaign"))
        start = time.time()
        for _ in range(n):
            send()
        # Every message acknowledged (the ack count), and none ready.
        while os.stat(acks).st_size < n:
            if worker.poll() is not None:
                raise SystemExit(f"dramatiq worker exited: {worker.returncode}")
            time.sleep(0.005)
        elapsed = time.time() - start
        d = next(probe)
        assert d is not None and d[0] == 0, f"queue not empty after {n} acks: {d}"
        if dsn:
            import psycopg

            with psycopg.connect(dsn) as c:
                rows = c.execute("SELECT count(*) FROM bench_dramatiq").fetchone()[0]
            assert rows == n, f"{rows} rows written for {n} tasks"
        probe.close()
        print(f"dramatiq-{MODE} {n / elapsed:.0f}")
    finally:
        worker.terminate()
        worker.wait(timeout=60)
        try:
            conn = pika.BlockingConnection(pika.URLParameters(BROKER))
            ch = conn.channel()
            for q in (QUEUE, f"{QUEUE}.DQ", f"{QUEUE}.XQ"):
                ch.queue_delete(q)
            conn.close()
        except Exception:
            pass
        os.unlink(acks)
        if drop:
            drop()


if __name__ == "__main__":
    # The worker imports this module by name; keep its queue the same.
    main()
