"""A finalize whose answer was lost, made again on a new connection
(docs/decisions/0012-answers-that-say-what-happened.md; the answers one by one:
tests/pg_regress/sql/answers.sql).

Runs inside a throwaway cluster (scripts/test.sh: `tests/cluster.py run -- python3
tests/answers/lost_answer.py`). For each outcome (sent, failed, retry, and retry on the
last attempt), a worker's connection sends its finalize and is closed before it reads
the reply, once the server has committed it (the job's row says so, read from another
connection, and the old backend has gone). The worker then finalizes again on a new
connection, as a worker that cannot tell whether its call committed does.

Asserted: the repeat answers applied (sendjobs_finalize) and applied, repeated, with
what the job became (sendjobs_finalize_batch); nothing changed a second time (one event,
one stamp of the business row, the row itself untouched); and a finalize of a claim
whose lease was lost to a new claim still answers stale (the control: a repeat is told
from a stale call, not every call made applied).

    python3 tests/answers/lost_answer.py
"""

import socket
import sys
import time

import psycopg


def wait_for(what, check, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"lost_answer: timed out waiting for {what}")
        time.sleep(0.02)


def finalize_and_lose_the_answer(db, job, generation, outcome):
    """Sends the finalize on a connection of its own and closes it unread, once the
    server has committed the call and its backend has ended."""
    worker = psycopg.connect(autocommit=True)
    pid = worker.info.backend_pid
    worker.pgconn.send_query_params(
        b"SELECT sendjobs_finalize($1::int8, $2::int8, $3::text)",
        [str(job).encode(), str(generation).encode(), outcome.encode()],
    )
    worker.pgconn.flush()
    # Committed: its xmin is no longer running (the row moved or changed).
    wait_for(
        "the finalize to commit",
        lambda: db.execute("SELECT status <> 'in_flight' FROM send_jobs WHERE id = %s", [job]).fetchone()[0],
    )
    # The reply is never read: the socket closes under it, as a network cut would.
    sock = socket.socket(fileno=worker.pgconn.socket)
    sock.shutdown(socket.SHUT_RDWR)
    sock.detach()
    worker.pgconn.finish()
    wait_for(
        "the old backend to end",
        lambda: db.execute("SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone()[0],
    )


def main():
    db = psycopg.connect(autocommit=True)
    db.execute("CREATE EXTENSION sendjobs")
    db.execute("CREATE TABLE payments (id text PRIMARY KEY, status text NOT NULL DEFAULT 'pending')")
    db.execute("CREATE TABLE stamps (payment text, status text)")
    db.execute("""CREATE FUNCTION count_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
                  BEGIN INSERT INTO stamps VALUES (NEW.id, NEW.status); RETURN NEW; END $$""")
    db.execute("CREATE TRIGGER count_stamp AFTER UPDATE ON payments FOR EACH ROW EXECUTE FUNCTION count_stamp()")
    db.execute("INSERT INTO payments SELECT 'p' || g FROM generate_series(1, 5) g")
    db.execute("SELECT sendjobs_guard_terminal('payments'), sendjobs_link_transactions('payments')")
    # Jobs 1-4, one per outcome; job 4 has one attempt, so its retry fails it.
    cases = [("sent", 3, "sent"), ("failed", 3, "failed"), ("retry", 3, "pending"), ("retry", 1, "failed")]
    for n, (_, max_attempts, _) in enumerate(cases, start=1):
        db.execute("SELECT sendjobs_enqueue('{}', transaction_id => %s, max_attempts => %s)", [f"p{n}", max_attempts])
    claimed = dict(db.execute("SELECT id, claim_generation FROM sendjobs_claim(4)").fetchall())
    failures = []

    for job, (outcome, _, became) in enumerate(cases, start=1):
        generation = claimed[job]
        finalize_and_lose_the_answer(db, job, generation, outcome)
        before = db.execute("SELECT xmin::text FROM send_jobs WHERE id = %s", [job]).fetchone()[0]
        again = psycopg.connect(autocommit=True)
        [(answer,)] = again.execute("SELECT sendjobs_finalize(%s, %s, %s)", [job, generation, outcome]).fetchall()
        [rich] = again.execute(
            "SELECT result, status, attempts, repeated FROM sendjobs_finalize_batch("
            "ARRAY[%s]::int8[], ARRAY[%s]::int8[], %s)",
            [job, generation, outcome],
        ).fetchall()
        again.close()
        after = db.execute("SELECT xmin::text FROM send_jobs WHERE id = %s", [job]).fetchone()[0]
        events = db.execute("SELECT count(*) FROM send_job_events WHERE job_id = %s", [job]).fetchone()[0]
        stamps = db.execute("SELECT count(*) FROM stamps WHERE payment = %s", [f"p{job}"]).fetchone()[0]
        expected = ("applied", became, 1, True)
        where = f"job {job} ({outcome}, became {became})"
        print(
            f"   {where}: repeat answered {answer!r} and {rich}, row {'untouched' if before == after else 'CHANGED'}, "
            f"{events} event(s), {stamps} stamp(s)"
        )
        if answer != "applied" or rich != expected:
            failures.append(f"{where}: answered {answer!r} and {rich}, expected 'applied' and {expected}")
        if before != after:
            failures.append(f"{where}: the repeat wrote the row")
        terminal = became != "pending"
        if (events, stamps) != ((1, 1) if terminal else (0, 0)):
            failures.append(f"{where}: {events} events and {stamps} stamps after the repeat")

    # The control: job 3 was retried; claimed again, its earlier claim is stale.
    db.execute("UPDATE send_jobs SET next_attempt_at = now() - interval '1 second' WHERE id = 3")
    [(job, generation)] = db.execute("SELECT id, claim_generation FROM sendjobs_claim(1)").fetchall()
    [(answer,)] = db.execute("SELECT sendjobs_finalize(3, %s, 'retry')", [generation - 1]).fetchall()
    print(f"   job 3 claimed again (generation {generation}): its earlier claim's retry answered {answer!r}")
    if (job, answer) != (3, "stale"):
        failures.append(f"a finalize of a claim that lost its job answered {answer!r} (job {job})")

    if failures:
        print("lost_answer: FAILED\n  " + "\n  ".join(failures))
        sys.exit(1)
    print(f"lost_answer: {len(cases) + 1} cases passed")


if __name__ == "__main__":
    main()
