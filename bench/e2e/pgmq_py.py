"""bench/e2e.sh's driver of pgmq's Python client (`pgmq` on PyPI, pinned in bench/e2e.sh):
setup (the client's own SQL-only install of pgmq, then the queue), load N (send_batch),
drain N, steady RATE SECONDS (send per job). pgmq has no worker: the loop is the one its
README shows, read a batch of 100 with a visibility timeout, handle it, delete it; when
idle, read_with_poll (the server polls every 100 ms for up to a second). One JSON line at
the end; the handling does nothing."""

import json
import os
import sys
import threading
import time

from pgmq import SyncPGMQueue
from pgmq.install import get_embedded_install_sql, install_pgmq_sql
from psycopg_pool import ConnectionPool

URL = os.environ["DATABASE_URL"]
Q = "bench"


def work(queue, until, seen):
    while len(seen) < until:
        messages = queue.read_with_poll(Q, vt=30, qty=100, max_poll_seconds=1, poll_interval_ms=100)
        if not messages:
            continue
        now = time.time() * 1000
        seen.extend(now - m.message["t"] if "t" in m.message else 0.0 for m in messages)
        queue.delete_batch(Q, [m.msg_id for m in messages])


def main(command, *args):
    if command == "setup":
        install_pgmq_sql(get_embedded_install_sql(), dsn=URL)
    pool = ConnectionPool(URL, min_size=1, max_size=4, open=True)
    queue = SyncPGMQueue(pool=pool, init_extension=False)
    if command == "setup":
        queue.create_queue(Q)
        return {"setup": True}
    if command == "load":
        n = int(args[0])
        for lo in range(0, n, 10_000):
            queue.send_batch(Q, [{"n": i} for i in range(lo, min(n, lo + 10_000))])
        return {"loaded": n}
    seen = []
    if command == "drain":
        n = int(args[0])
        started = time.perf_counter()
        work(queue, n, seen)
        return {"jobs": n, "seconds": time.perf_counter() - started}
    rate, seconds = float(args[0]), float(args[1])
    total = int(rate * seconds)
    worker = threading.Thread(target=work, args=(queue, total, seen))
    worker.start()
    time.sleep(1)
    started = time.perf_counter()
    for i in range(total):
        time.sleep(max(0.0, started + i / rate - time.perf_counter()))
        queue.send(Q, {"t": time.time() * 1000})
    worker.join()
    return {"jobs": total, "latencies_ms": seen}


print(json.dumps(main(*sys.argv[1:])))
