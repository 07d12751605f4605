"""A fence across an asynchronous promotion (docs/contract.md, invariant 2; decision 0025).

A primary and an asynchronous standby. Replication is cut (the standby's
primary_conninfo emptied), so what the primary commits next is certain not to reach the
standby: a claim of job A (a worker now holds generation N) and a claim and `sent`
finalize of job B (acknowledged to its worker). The primary is stopped as by a crash and
the standby promoted, as a failover manager does with an asynchronous standby. On the new
primary:

- A is pending again; claimed again, it must get a generation other than N, and the
  first worker's `finalize(A, N)` must answer `stale` (with a per-row `+ 1`, the new
  claim is N again and that finalize applies: two workers held one generation);
- B's acknowledged `sent` is gone (B is pending again): what asynchronous replication
  loses, counted here and documented in docs/operations.md.

Run inside nothing: it starts its own two clusters and removes them, pass or fail.
    python3 tests/failover/async_promotion.py
"""

import os
import sys
import time

import psycopg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from cluster import Cluster, Workdir  # noqa: E402

DB = "failover"


def connect(cluster, dbname=DB):
    return psycopg.connect(host=cluster.workdir, port=cluster.port, user="postgres", dbname=dbname, autocommit=True)


def wait_for(conn, query, what, within=60):
    deadline = time.monotonic() + within
    while not conn.execute(query).fetchone()[0]:
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.05)


def claim(conn, queue):
    row = conn.execute("SELECT id, claim_generation FROM sendjobs_claim(1, '60 s', %s)", (queue,)).fetchone()
    assert row is not None, f"nothing to claim in {queue}"
    return row


def main():
    workdir = Workdir("sendjobs-async-promotion")
    primary = Cluster(workdir.path, "primary", settings=("wal_level=replica", "max_wal_senders=4"))
    standby = Cluster(workdir.path, "standby")
    try:
        primary.initdb()
        primary.start()
        with connect(primary, "postgres") as db:
            db.execute(f"CREATE DATABASE {DB}")
        with connect(primary) as db:
            db.execute("CREATE EXTENSION sendjobs")
            a = db.execute("SELECT sendjobs_enqueue('{}', 'a')").fetchone()[0]
            b = db.execute("SELECT sendjobs_enqueue('{}', 'b')").fetchone()[0]
        standby.basebackup(primary)
        standby.start()
        with connect(primary) as db, connect(standby) as replica:
            wait_for(db, "SELECT count(*) = 1 FROM pg_stat_replication WHERE state = 'streaming'", "streaming")
            lsn = db.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
            wait_for(replica, f"SELECT pg_last_wal_replay_lsn() >= '{lsn}'", "the standby to replay the jobs")
            # Cut: the standby's WAL receiver stops and does not start again.
            replica.execute("ALTER SYSTEM SET primary_conninfo = ''")
            replica.execute("SELECT pg_reload_conf()")
            wait_for(db, "SELECT count(*) = 0 FROM pg_stat_replication", "the standby to disconnect")
            lost_a, held = claim(db, "a")
            lost_b, acked = claim(db, "b")
            answer = db.execute("SELECT sendjobs_finalize(%s, %s, 'sent')", (lost_b, acked)).fetchone()[0]
            assert (lost_a, lost_b, answer) == (a, b, "applied"), (lost_a, lost_b, answer)
        primary.stop("immediate")
        standby.promote()
        with connect(standby) as db:
            wait_for(db, "SELECT NOT pg_is_in_recovery()", "the promotion")
            # The WAL being written now names its timeline (the checkpoint may not have yet).
            timeline = int(db.execute("SELECT pg_walfile_name(pg_current_wal_lsn())").fetchone()[0][:8], 16)
            status_b = db.execute("SELECT status FROM send_jobs WHERE id = %s", (b,)).fetchone()[0]
            _, again = claim(db, "a")
            stale = db.execute("SELECT sendjobs_finalize(%s, %s, 'sent')", (a, held)).fetchone()[0]
            current = db.execute("SELECT sendjobs_finalize(%s, %s, 'failed', 'x')", (a, again)).fetchone()[0]
        reused = int(again == held)
        lost_acks = int(status_b != "sent")
        print(
            f"async promotion to timeline {timeline}: the lost claim held generation {held}, the new "
            f"primary's claim {again}; generations reused: {reused}; the old holder's finalize: {stale}; "
            f"acknowledged finalizes lost: {lost_acks} (job {b} is {status_b} again)"
        )
        assert reused == 0, "the new primary handed out a generation a lost claim holds"
        assert stale == "stale", f"a finalize with the lost claim's generation answered {stale}"
        assert current == "applied", f"the new claim's finalize answered {current}"
        assert lost_acks == 1, "replication was cut, yet the acknowledged finalize reached the standby"
    except Exception:
        for c in (primary, standby):
            print("\n".join(c.last_errors()), file=sys.stderr)
        raise
    finally:
        primary.shutdown_quietly("immediate")
        standby.shutdown_quietly("immediate")
        workdir.remove()


if __name__ == "__main__":
    main()
