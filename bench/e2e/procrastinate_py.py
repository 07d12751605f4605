"""bench/e2e.sh's driver of procrastinate (PyPI, pinned in bench/e2e.sh): setup (its
schema), load N (batch_defer_async), drain N (a worker, concurrency 10, until its task ran
N), steady RATE SECONDS (a worker listening for NOTIFY; defer_async per job). One JSON line
at the end; the task does nothing."""

import asyncio
import json
import os
import sys
import time

import procrastinate

app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=os.environ["DATABASE_URL"]))
done = []


@app.task(queue="bench", name="noop")
async def noop(n=None, t=None):
    done.append(time.time() * 1000 - t if t is not None else 0.0)


async def until(count, worker):
    while len(done) < count:
        await asyncio.sleep(0.005)
    worker.cancel()
    try:
        await worker
    except asyncio.CancelledError:
        pass


async def main(command, *args):
    async with app.open_async():
        if command == "setup":
            await app.schema_manager.apply_schema_async()
            return {"setup": True}
        if command == "load":
            n = int(args[0])
            for lo in range(0, n, 10_000):
                await noop.batch_defer_async(*({"n": i} for i in range(lo, min(n, lo + 10_000))))
            return {"loaded": n}
        options = dict(queues=["bench"], concurrency=10, install_signal_handlers=False, delete_jobs="never")
        if command == "drain":
            n = int(args[0])
            started = time.perf_counter()
            worker = asyncio.create_task(app.run_worker_async(**options))
            while len(done) < n:
                await asyncio.sleep(0.005)
            seconds = time.perf_counter() - started
            await until(n, worker)
            return {"jobs": n, "seconds": seconds}
        rate, seconds = float(args[0]), float(args[1])
        worker = asyncio.create_task(app.run_worker_async(**options))
        await asyncio.sleep(1)
        total = int(rate * seconds)
        started = time.perf_counter()
        for i in range(total):
            await asyncio.sleep(max(0.0, started + i / rate - time.perf_counter()))
            await noop.defer_async(t=time.time() * 1000)
        await until(total, worker)
        return {"jobs": total, "latencies_ms": done}


print(json.dumps(asyncio.run(main(*sys.argv[1:]))))
