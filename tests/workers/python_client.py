"""The Python package's producer against the real extension, run by tests/workers/check.py
with the interpreter of a venv where `pip install ./workers/python` put the package (so
that `import sendjobs` is the installed one). DATABASE_URL names a fresh database with
the extension and a table payments (id text, amount int).

A job enqueued in a transaction that rolls back is gone with the business row; one that
commits is there with it (psycopg's Connection, Cursor and AsyncConnection); many jobs
keep their order, values per job or for all, due times (a time, a delay on the database's
clock); bad input adds none, with its SQLSTATE; a naive time is refused before the call;
the schema is named when asked. And the worker finalizes results that end together in one
call: 200 jobs of a handler that returns at once, batch 100, a window of a second (long,
so that no machine is too slow for it) take at most 10 calls of sendjobs_finalize_batch
(the database tracks function calls: check.py sets track_functions), not 200.
"""

import asyncio
import datetime
import os
import time

import psycopg
import sendjobs

DSN = os.environ["DATABASE_URL"]
checks = 0


def check(condition, what):
    global checks
    assert condition, what
    checks += 1


def jobs(conn, where="true"):
    return conn.execute(
        f"SELECT id, queue, payload, transaction_id, idempotency_key, max_attempts, "
        f"ordering_key, priority, next_attempt_at - now() FROM send_jobs WHERE {where} "
        "ORDER BY id"
    ).fetchall()


with psycopg.connect(DSN, autocommit=True) as db:
    assert sendjobs.__file__.find("/workers/python/") < 0, f"not the installed package: {sendjobs.__file__}"

    # Sync, in a transaction: rolled back, then committed.
    with psycopg.connect(DSN) as conn:
        conn.execute("INSERT INTO payments VALUES ('p-1', 10)")
        sendjobs.enqueue(conn, {"to": "acme"}, queue="acme", transaction_id="p-1")
        conn.rollback()
        check(
            jobs(db) == [] and db.execute("SELECT count(*) FROM payments").fetchone()[0] == 0,
            "a rolled-back transaction leaves no job and no payment",
        )
        conn.execute("INSERT INTO payments VALUES ('p-1', 10)")
        with conn.cursor() as cur:
            first = sendjobs.enqueue(
                cur,
                {"to": "acme"},
                queue="acme",
                transaction_id="p-1",
                idempotency_key="p-1/notify",
                max_attempts=3,
                ordering_key="acct-1",
                priority=5,
            )
        again = sendjobs.enqueue(conn, {"to": "other"}, idempotency_key="p-1/notify")
        check(again == first, "a repeated key gives the first job")
    [(id_, queue, payload, tx, key, attempts, ordering, priority, _)] = jobs(db)
    check(
        (id_, queue, payload, tx, key, attempts, ordering, priority)
        == (first, "acme", {"to": "acme"}, "p-1", "p-1/notify", 3, "acct-1", 5),
        "every column as given",
    )

    # Many: order, one value for all or one per job, due times.
    soon = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
    with psycopg.connect(DSN) as conn:
        ids = sendjobs.enqueue_many(
            conn,
            [{"n": 1}, {"n": 2}, {"n": 3}],
            queue=["a", "a", "b"],
            run_at=[None, soon, datetime.timedelta(minutes=10)],
            ordering_key="line",
            max_attempts=[None, 2, None],
        )
    check(ids == sorted(ids) and len(ids) == 3, "ids in order")
    rows = jobs(db, f"id = ANY(ARRAY{ids})")
    check([r[1] for r in rows] == ["a", "a", "b"] and [r[2]["n"] for r in rows] == [1, 2, 3], "queues and payloads")
    check([r[6] for r in rows] == ["line"] * 3 and [r[5] for r in rows] == [5, 2, 5], "keys and budgets")
    late = [r[8] for r in rows]
    check(
        late[0] <= datetime.timedelta(0)
        and datetime.timedelta(minutes=59) < late[1] <= datetime.timedelta(hours=1)
        and datetime.timedelta(minutes=9) < late[2] <= datetime.timedelta(minutes=10),
        f"due times {late}",
    )
    check(sendjobs.enqueue_many(db, []) == [], "none: nothing")

    # Bad input: its SQLSTATE, nothing added; a naive time refused here.
    before = len(jobs(db))
    try:
        sendjobs.enqueue_many(db, [{}, {}], priority=[0, 61])
        check(False, "priority 61 refused")
    except psycopg.errors.InvalidParameterValue:
        check(len(jobs(db)) == before, "a bad job adds none")
    try:
        sendjobs.enqueue(db, {}, run_at=datetime.datetime(2030, 1, 1))
        check(False, "a naive time refused")
    except ValueError:
        check(len(jobs(db)) == before, "a naive time adds nothing")

    # The schema named.
    db.execute('CREATE SCHEMA "job queue"')
    try:
        sendjobs.enqueue(db, {}, schema="job queue")
        check(False, "no extension in that schema")
    except psycopg.errors.UndefinedFunction:
        check(True, "the schema is the one named")


async def async_checks():
    async with await psycopg.AsyncConnection.connect(DSN) as conn:
        await conn.execute("INSERT INTO payments VALUES ('p-2', 20)")
        await sendjobs.enqueue_async(conn, {"to": "zeta"}, queue="zeta", transaction_id="p-2")
        await conn.rollback()
        await conn.execute("INSERT INTO payments VALUES ('p-2', 20)")
        one = await sendjobs.enqueue_async(conn, {"to": "zeta"}, queue="zeta", transaction_id="p-2")
        many = await sendjobs.enqueue_many_async(conn, [{"n": 1}, {"n": 2}], queue="zeta")
    return one, many


one, many = asyncio.run(async_checks())
with psycopg.connect(DSN, autocommit=True) as db:
    check(
        len(jobs(db, "queue = 'zeta'")) == 3 and one < many[0] < many[1],
        "async: the committed transaction's three jobs, not the rolled-back one's",
    )


async def batched_finalizes():
    async with await psycopg.AsyncConnection.connect(DSN, autocommit=True) as conn:
        await sendjobs.enqueue_many_async(conn, [{"n": i} for i in range(200)], queue="batched")

    async def at_once(job):
        return sendjobs.SENT

    worker = sendjobs.Worker(DSN, at_once, queue="batched", batch=100, poll=0.2, listen=False, finish_window=1.0)
    run = asyncio.create_task(worker.run(handle_signals=False))
    while worker.counters["sent"] < 200:
        await asyncio.sleep(0.05)
    worker.stop()
    return await run


counters = asyncio.run(batched_finalizes())
with psycopg.connect(DSN, autocommit=True) as db:
    calls = None
    for _ in range(100):  # the worker's backends report their calls as they exit
        calls = db.execute(
            "SELECT sum(calls) FROM pg_stat_user_functions WHERE funcname = 'sendjobs_finalize_batch'"
        ).fetchone()[0]
        if calls:
            break
        time.sleep(0.1)
    check(
        counters["sent"] == 200 and calls is not None and calls <= 10,
        f"200 results finalized in {calls} calls ({counters})",
    )

print(f"   python client: {checks} checks of the installed package's producer and worker passed", flush=True)
