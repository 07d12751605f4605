"""bench/e2e.sh's driver of the sendjobs Python package (installed into the bench's venv):
load N (enqueue_many), drain N (the Worker until N are finalized), steady RATE SECONDS.
One JSON line at the end; the handler does nothing."""

import asyncio
import datetime
import json
import os
import sys
import time

import psycopg
import sendjobs

URL = os.environ["DATABASE_URL"]


def worker(handler):
    return sendjobs.Worker(URL, handler, queue="bench", batch=100, lease=datetime.timedelta(seconds=30), poll=1.0)


async def noop(job):
    return sendjobs.SENT


async def drain(n):
    w = worker(noop)
    started = time.perf_counter()
    run = asyncio.create_task(w.run(handle_signals=False))
    while w.counters["sent"] < n:
        await asyncio.sleep(0.005)
    seconds = time.perf_counter() - started
    w.stop()
    await run
    return {"jobs": n, "seconds": seconds}


async def steady(rate, seconds):
    latencies = []

    async def record(job):
        latencies.append(time.time() * 1000 - job.payload["t"])
        return sendjobs.SENT

    w = worker(record)
    run = asyncio.create_task(w.run(handle_signals=False))
    await asyncio.sleep(1)
    total = int(rate * seconds)
    async with await psycopg.AsyncConnection.connect(URL, autocommit=True) as conn:
        started = time.perf_counter()
        for i in range(total):
            await asyncio.sleep(max(0.0, started + i / rate - time.perf_counter()))
            await sendjobs.enqueue_async(conn, {"t": time.time() * 1000}, queue="bench")
    while len(latencies) < total:
        await asyncio.sleep(0.01)
    w.stop()
    await run
    return {"jobs": total, "latencies_ms": latencies}


def main(command, *args):
    if command == "load":
        n = int(args[0])
        with psycopg.connect(URL, autocommit=True) as conn:
            for lo in range(0, n, 10_000):
                sendjobs.enqueue_many(conn, [{"n": i} for i in range(lo, min(n, lo + 10_000))], queue="bench")
        return {"loaded": n}
    if command == "drain":
        return asyncio.run(drain(int(args[0])))
    return asyncio.run(steady(float(args[0]), float(args[1])))


print(json.dumps(main(*sys.argv[1:])))
