#!/usr/bin/python3
"""The sendjobs benchmark grid: E (the extension) against F (the floor: two single-row
UPDATE transactions) and M (a minimal SQL queue on the same table).

Run it through bench/run.sh, which starts it inside a throwaway cluster (tests/cluster.py);
this script connects to that server (the environment cluster.py sets), loads the tables,
runs pgbench over the grid, and appends one CSV row per run to bench/results/<name>/runs.csv
(plus meta.json, sustained.csv and the SQL that ran in sql/). bench/report.py turns those
into the run's report.md and plots, in the same folder.
"""

import argparse
import csv
import datetime
import functools
import os
import re
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import common  # noqa: E402  (bench/common.py)
from common import Db, fmt_dur, log, parse_list, psycopg2  # noqa: E402

# Arm -> schema of its tables. M is a minimal SQL queue on its own copy of the table
# (bench/README.md, "M, a yardstick").
SCHEMA = {"E": "bench_e", "F": "bench_f", "M": "bench_m"}
# Arms that only run the retry cycle (no terminal 'sent' variant).
RETRY_ONLY = {"F", "M"}
MAX_ATTEMPTS = 2147483647  # retries never exhaust: the backlog never drains
LEASE = "5 minutes"
PAYLOAD = (
    '{"to": "partner-0001", "ref": "tx-requeued0", "kind": "payment.notify", "currency": "EUR", "amount_cents": 100}'
)
# Per-run fixed cost (VACUUM, CHECKPOINT, stats, connections), for the estimate only.
OVERHEAD_S = {10_000: 0.6, 1_000_000: 2.0}

RUN_FIELDS = [
    "phase",
    "variant",
    "backlog",
    "rep",
    "clients",
    "batch",
    "arm",
    "duration_s",
    "cycles",
    "jobs",
    "failed",
    "tps",
    "jobs_per_s",
    "lat_avg_ms",
    "claim_ms",
    "finalize_ms",
    "wal_bytes",
    "wal_per_cycle",
    "wal_per_job",
    "n_tup_upd",
    "n_tup_hot_upd",
    "hot_pct",
    "n_dead_tup",
    "n_live_tup",
    "table_bytes",
    "indexes_bytes",
    "total_bytes",
    "autovacuums",
    "autovacuums_any",
    "leftover_in_flight",
    "error",
    "started_at",
]


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="bench/run.sh", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    common.add_grid_arguments(ap)
    ap.add_argument("--arms", default="E,F,M", help="arms, in interleaving order: E,F,M (M a minimal SQL queue)")
    ap.add_argument("--sent-clients", help="clients of the terminal 'sent' variant (full 4, quick 4)")
    ap.add_argument("--sent-batches", help="batches of the 'sent' variant (full 1,10,100; quick 10)")
    ap.add_argument("--no-sent", action="store_true", help="skip the terminal 'sent' variant")
    ap.add_argument(
        "--no-vacuum",
        action="store_true",
        help="do not VACUUM the arm's table before and after each run (autovacuum only)",
    )
    ap.add_argument(
        "--sustained",
        type=float,
        help=f"seconds of each sustained run (E, {SUSTAINED_CLIENTS} clients, batch "
        f"{SUSTAINED_BATCH}, {SUSTAINED_BACKLOG} jobs, no VACUUM between intervals) per "
        "autovacuum_naptime; 0 skips them (full 120, quick 20)",
    )
    ap.add_argument("--naptimes", default="60,10", help="autovacuum_naptime values (seconds) of the sustained runs")
    common.add_name_argument(ap, "<full|quick>")
    ap.add_argument("--command", default="", help=argparse.SUPPRESS)
    ap.add_argument("--settings", default="", help=argparse.SUPPRESS)
    ap.add_argument("--dry-run", action="store_true", help="print the plan and the estimate only")
    a = common.resolve_grid(ap.parse_args(argv))
    d = {
        "quick": dict(sent_clients="4", sent_batches="10", sustained=20.0),
        "full": dict(sent_clients="4", sent_batches="1,10,100", sustained=120.0),
    }[a.mode]
    a.sent_clients = parse_list(a.sent_clients or d["sent_clients"])
    a.sent_batches = parse_list(a.sent_batches or d["sent_batches"])
    a.sustained = d["sustained"] if a.sustained is None else a.sustained
    a.naptimes = parse_list(a.naptimes)
    a.arms = [x.strip() for x in a.arms.split(",") if x.strip()]
    for arm in a.arms:
        if arm not in SCHEMA:
            ap.error(f"unknown arm {arm!r} (E, F, M)")
    return a


# --------------------------------------------------------------------------------------
# The database


@functools.lru_cache(maxsize=None)
def tables_of(dbname, arm, variant):
    """The tables a run writes: send_jobs, and in the terminal variant where finished jobs
    and their events go (common.QUEUE_TABLES, as the installed version lays them out)."""
    if variant == "sent":
        return tuple(common.queue_tables(dbname, SCHEMA[arm]))
    return (f"{SCHEMA[arm]}.send_jobs",)


def create_database(dbname, backlog, arms, sql_dir):
    drop_database(dbname)
    admin = Db("postgres")
    admin.exec(f"CREATE DATABASE {dbname}")
    admin.close()
    db = Db(dbname)
    t0 = time.time()
    db.exec("CREATE SCHEMA bench_e")
    db.exec("CREATE EXTENSION sendjobs SCHEMA bench_e")
    copies = sorted({SCHEMA[a] for a in arms} - {"bench_e"})
    for schema in copies:
        with db.conn.cursor() as cur:
            ddl, triggers = copy_tables_sql(cur, "bench_e", schema)
        if triggers:
            log(f"== bench: WARNING: the extension's tables have triggers that the copies lack: {triggers}")
        (sql_dir / f"schema_{schema}.sql").write_text(ddl)
        db.exec(ddl)
    # The backlog: all due, in id order, about 100 bytes of JSON each, retries unlimited.
    db.exec(
        f"""
        INSERT INTO bench_e.send_jobs (queue, payload, max_attempts, next_attempt_at, created_at)
        SELECT 'default',
               jsonb_build_object('to', 'partner-' || lpad(mod(i, 500)::text, 4, '0'),
                                  'ref', 'tx-' || lpad(i::text, 10, '0'),
                                  'kind', 'payment.notify', 'currency', 'EUR',
                                  'amount_cents', mod(i * 37, 100000)),
               {MAX_ATTEMPTS},
               now() - interval '1 day' + i * interval '1 millisecond',
               now() - interval '1 day'
          FROM generate_series(1, %s) AS i""",
        (backlog,),
    )
    for schema in copies:
        db.exec(f"INSERT INTO {schema}.send_jobs OVERRIDING SYSTEM VALUE SELECT * FROM bench_e.send_jobs")
        db.exec(f"SELECT setval(pg_get_serial_sequence('{schema}.send_jobs', 'id'), %s)", (backlog,))
    # A fresh backend from here on: (1) the exiting one flushes its table statistics (the
    # inserts) now - flushed after the VACUUM below, they would make autovacuum and
    # autoanalyze run over the million-row tables during the first measured runs, and an
    # ANALYZE's snapshot holds back the xmin horizon, so dead index entries at the head of
    # the queue could not be removed or killed; (2) CREATE EXTENSION loaded sendjobs.so
    # into that backend, and a reinstalled .so crashes the backends that mapped it.
    db.close()
    time.sleep(0.5)
    db = Db(dbname)
    for schema in ["bench_e"] + copies:
        db.exec(f"VACUUM (FREEZE, ANALYZE) {schema}.send_jobs")
    db.exec("CHECKPOINT")
    payload_bytes = db.one(
        "SELECT avg(octet_length(payload::text))::int, avg(pg_column_size(payload))::int FROM bench_e.send_jobs"
    )
    return db, time.time() - t0, payload_bytes


def drop_database(dbname):
    admin = Db("postgres")
    admin.exec(f"DROP DATABASE IF EXISTS {dbname}")  # free the disk and the cache
    admin.close()


# The tables of F and M are copies of the tables the extension created for E (so they
# are the DDL of sql/schema.sql as installed, whatever the source tree holds now): every
# table of the extension in its schema (not its views); LIKE ... INCLUDING ALL copies
# columns, defaults, identity, CHECK constraints, indexes (partial ones too), storage and
# comments; reloptions (fillfactor) and foreign keys are copied from the catalog; the
# child tables (send_jobs_finished) inherit their parent again.


def copy_tables_sql(cur, src, dst):
    cur.execute(
        "SELECT c.relname FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid "
        "JOIN pg_class c ON c.oid = d.objid AND d.classid = 'pg_class'::regclass "
        "WHERE e.extname = 'sendjobs' AND d.deptype = 'e' AND c.relkind = 'r' "
        "AND c.relnamespace = %s::regnamespace ORDER BY c.relname",
        (src,),
    )
    ext_tables = [name for (name,) in cur.fetchall()]
    out = [f"CREATE SCHEMA {dst};"]
    for t in ext_tables:
        out.append(f"CREATE TABLE {dst}.{t} (LIKE {src}.{t} INCLUDING ALL);")
        cur.execute("SELECT array_to_string(reloptions, ', ') FROM pg_class WHERE oid = %s::regclass", (f"{src}.{t}",))
        opts = cur.fetchone()[0]
        if opts:
            out.append(f"ALTER TABLE {dst}.{t} SET ({opts});")
    for t in ext_tables:
        cur.execute("SELECT inhparent::regclass::text FROM pg_inherits WHERE inhrelid = %s::regclass", (f"{src}.{t}",))
        for (parent,) in cur.fetchall():
            out.append(f"ALTER TABLE {dst}.{t} INHERIT {dst}.{parent.split('.')[-1]};")
    for t in ext_tables:
        cur.execute(
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE conrelid = %s::regclass AND contype = 'f' ORDER BY conname",
            (f"{src}.{t}",),
        )
        for name, definition in cur.fetchall():
            definition = re.sub(r"REFERENCES (\w+\.)?", f"REFERENCES {dst}.", definition)
            out.append(f"ALTER TABLE {dst}.{t} ADD CONSTRAINT {name} {definition};")
    cur.execute(
        "SELECT tgrelid::regclass::text, tgname FROM pg_trigger WHERE NOT tgisinternal "
        "AND tgrelid = ANY (%s::regclass[])",
        ([f"{src}.{t}" for t in ext_tables],),
    )
    triggers = cur.fetchall()
    return "\n".join(out) + "\n", triggers


def wait_for_autovacuum(db, limit_s=60):
    """Waits (bounded) until no autovacuum worker runs in this database: an autoanalyze
    started by the previous arm's churn would hold back the xmin horizon during the next
    arm's run. Returns the seconds waited."""
    t0 = time.time()
    while time.time() - t0 < limit_s:
        if (
            db.one(
                "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker' "
                "AND datname = current_database()"
            )[0]
            == 0
        ):
            break
        time.sleep(0.2)
    return time.time() - t0


def table_stats(db, dbname, arm, variant):
    s = SCHEMA[arm]
    t = f"{s}.send_jobs"
    gen_col = "attempts" if arm == "F" else "claim_generation"
    st = db.one(f"""
        SELECT pg_current_wal_lsn()::text, n_tup_upd, n_tup_hot_upd, n_dead_tup, n_live_tup,
               autovacuum_count, pg_relation_size(relid), pg_indexes_size(relid),
               pg_total_relation_size(relid)
          FROM pg_stat_user_tables WHERE relid = '{t}'::regclass""")
    agg = db.one(f"SELECT coalesce(sum({gen_col}), 0)::bigint, count(*) FILTER (WHERE status = 'in_flight') FROM {t}")
    keys = [
        "lsn",
        "n_tup_upd",
        "n_tup_hot_upd",
        "n_dead_tup",
        "n_live_tup",
        "autovacuums",
        "table_bytes",
        "indexes_bytes",
        "total_bytes",
    ]
    out = dict(zip(keys, st))
    # Autovacuum and autoanalyze runs of any table here, whichever arm's: a worker takes
    # CPU from the arm that is running, so it is recorded with that arm's run.
    out["autovacuums_any"] = db.one(
        "SELECT coalesce(sum(autovacuum_count + autoanalyze_count), 0)::bigint FROM pg_stat_user_tables"
    )[0]
    out["gen_sum"], out["in_flight"] = agg
    for other in tables_of(dbname, arm, variant)[1:]:  # where finished jobs and events went
        out["total_bytes"] += db.one(f"SELECT pg_total_relation_size('{other}'::regclass)")[0]
    return out


# --------------------------------------------------------------------------------------
# pgbench scripts. One script iteration = one claim transaction + one finalize
# transaction (the sent variant re-enqueues inside the finalize transaction).


def _reenqueue(schema):
    return (
        f"INSERT INTO {schema}.send_jobs (payload, max_attempts) "
        f"SELECT :payload::jsonb, 2147483647 FROM generate_series(1, cardinality(:ids::int8[]));\n"
    )


def script_e(schema, variant):
    """E: the extension's functions; the finalize's rows come back to the client."""
    claim = (
        f"SELECT coalesce(array_agg(id), '{{}}') AS ids, "
        f"coalesce(array_agg(claim_generation), '{{}}') AS gens "
        f"FROM {schema}.sendjobs_claim(:batch, :lease) \\gset\n"
    )
    retry_at = ", NULL, now()" if variant == "retry" else ""
    fin = f"SELECT id, result FROM {schema}.sendjobs_finalize_batch(:ids, :gens, :outcome{retry_at});\n"
    if variant == "retry":
        return claim + fin
    return claim + "BEGIN;\n" + fin + _reenqueue(schema) + "COMMIT;\n"


def script_m(schema, batch):
    """M, a minimal SQL queue on the same table: the claim's pending branch alone (no
    expired-lease recovery), a generation-fenced `retry` back to pending (no results per
    claim, no events, no attempt budget or backoff). Not the contract; a yardstick for
    what the contract's extras cost. The batch is a literal, as a worker with a fixed batch
    would write it: with `LIMIT $n` the server re-plans the claim on every call (its
    generic plan, costed for a LIMIT it cannot see, is a bad one), which M should not pay."""
    claim = (
        f"WITH picked AS MATERIALIZED (SELECT id FROM {schema}.send_jobs WHERE status = 'pending' "
        f"AND next_attempt_at <= now() ORDER BY next_attempt_at, id LIMIT {int(batch)} FOR UPDATE SKIP LOCKED), "
        f"claimed AS (UPDATE {schema}.send_jobs AS job SET status = 'in_flight', "
        "attempts = job.attempts + 1, claimed_at = now(), "
        "lease_expires_at = now() + :lease::interval, claim_generation = job.claim_generation + 1 "
        "FROM picked WHERE job.id = picked.id RETURNING job.id, job.claim_generation) "
        "SELECT coalesce(array_agg(id), '{}') AS ids, coalesce(array_agg(claim_generation), '{}') AS gens "
        "FROM claimed \\gset\n"
    )
    # The claims: one pair for a batch of one (the finalize then plans once, as the claim
    # does), the arrays joined for more.
    fence = (
        "WHERE job.id = (:ids::int8[])[1] AND job.claim_generation = (:gens::int8[])[1]"
        if batch == 1
        else "FROM unnest(:ids::int8[], :gens::int8[]) AS c(id, generation) "
        "WHERE job.id = c.id AND job.claim_generation = c.generation"
    )
    fin = (
        f"UPDATE {schema}.send_jobs AS job SET status = 'pending', next_attempt_at = now(), "
        f"lease_expires_at = NULL {fence} AND job.status = 'in_flight';\n"
    )
    return claim + fin


def script_f(schema):
    """F, the floor: two single-row UPDATE transactions (two commits, two round trips)."""
    return (
        "\\set id1 random(1, :backlog)\n"
        "\\set id2 random(1, :backlog)\n"
        f"UPDATE {schema}.send_jobs SET attempts = attempts + 1 WHERE id = :id1;\n"
        f"UPDATE {schema}.send_jobs SET attempts = attempts + 1 WHERE id = :id2;\n"
    )


def run_pgbench(dbname, script_path, clients, batch, backlog, variant, duration, progress=0):
    return common.pgbench(
        dbname,
        script_path,
        clients,
        duration,
        latencies=True,
        progress=progress,
        variables={
            "batch": batch,
            "lease": LEASE,
            "backlog": backlog,
            "payload": PAYLOAD,
            "outcome": "retry" if variant == "retry" else "sent",
        },
    )


# --------------------------------------------------------------------------------------
# The plan


def build_plan(args):
    """[(phase, variant, backlog, rep, clients, batch, arm)], in execution order."""
    plan = []
    main_arms = args.arms
    for backlog in args.backlogs:
        for rep in range(args.reps):
            k = rep % len(main_arms)
            arms = main_arms[k:] + main_arms[:k]  # rotate the order every rep
            for clients in args.clients:
                for bi, batch in enumerate(args.batches):
                    for arm in arms:
                        if arm == "F":
                            if bi == 0:  # F does not depend on the batch: once per clients
                                plan.append(("main", "retry", backlog, rep, clients, 1, "F"))
                            continue
                        plan.append(("main", "retry", backlog, rep, clients, batch, arm))
    if not args.no_sent:
        backlog = args.backlogs[0]
        sent_arms = [a for a in main_arms if a not in RETRY_ONLY]
        for rep in range(args.reps):
            k = rep % len(sent_arms)
            arms = sent_arms[k:] + sent_arms[:k]
            for clients in args.sent_clients:
                for batch in args.sent_batches:
                    for arm in arms:
                        plan.append(("sent", "sent", backlog, rep, clients, batch, arm))
    return plan


def estimate_seconds(args, plan):
    # about 12 s per million-row table copy on the development machine
    load = sum(1 + b / 1_000_000 * 12 * (1 + len({SCHEMA[a] for a in args.arms} - {"bench_e"})) for b in args.backlogs)
    if not args.no_sent:
        load += 1 + args.backlogs[0] / 1_000_000 * 12 * len({SCHEMA[a] for a in args.arms} - RETRY_ONLY)
    arms_fn = len(args.arms)
    load += (len(args.backlogs) * arms_fn + (0 if args.no_sent else arms_fn)) * (args.warmup + 0.5)
    per = sum(args.duration + 0.3 + OVERHEAD_S.get(p[2], 0.6 + p[2] / 1_000_000 * 1.4) for p in plan)
    sustained = len(args.naptimes) * (args.sustained + 5) + 3 if args.sustained > 0 else 0
    return load + per + sustained


# --------------------------------------------------------------------------------------
# Metadata for the report


def machine_meta(args):
    meta = common.run_meta(args.command)
    db = Db("postgres")
    names = [
        "shared_buffers",
        "max_connections",
        "fsync",
        "synchronous_commit",
        "full_page_writes",
        "wal_level",
        "max_wal_size",
        "checkpoint_timeout",
        "autovacuum",
        "jit",
        "work_mem",
        "effective_io_concurrency",
        "huge_pages",
        "wal_compression",
    ]
    settings = db.rows(
        "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY(%s) ORDER BY name", (names,)
    )
    db.close()
    meta.update(
        {
            "mode": args.mode,
            "free_h": common.sh("free -h"),
            "settings": [f"{n} = {s}" for n, s in settings],
            "settings_cli": args.settings,
            "grid": {
                "duration_s": args.duration,
                "reps": args.reps,
                "clients": args.clients,
                "batches": args.batches,
                "backlogs": args.backlogs,
                "arms": args.arms,
                "sent": None
                if args.no_sent
                else {"clients": args.sent_clients, "batches": args.sent_batches, "backlog": args.backlogs[0]},
                "vacuum_before_each_run": not args.no_vacuum,
                "lease": LEASE,
                "warmup_s": args.warmup,
            },
        }
    )
    return meta


# --------------------------------------------------------------------------------------


def main(argv):
    args = parse_args(argv)
    plan = build_plan(args)
    est = estimate_seconds(args, plan)
    log(
        f"== bench: mode {args.mode}: {len(plan)} runs of {args.duration:g} s, "
        f"{args.reps} rep(s); estimated {fmt_dur(est)}"
    )
    if args.dry_run:
        for p in plan:
            log("   " + " ".join(map(str, p)))
        return 0
    if psycopg2 is None:
        Db("postgres")  # says what is missing

    results = common.results_dir(args.mode, args.name)
    sql_dir = results / "sql"
    sql_dir.mkdir(exist_ok=True)
    meta = machine_meta(args)
    meta["estimate_s"] = round(est)
    meta["runs_planned"] = len(plan)
    common.write_meta(results, meta)
    so_path = meta["library"]["path"]
    so_stamp = so_fingerprint(so_path)
    log(f"== bench: measuring {so_path}; results in {results}")

    csv_path = results / "runs.csv"
    with open(csv_path, "w", newline="") as f:
        csv.DictWriter(f, RUN_FIELDS).writeheader()

    # Scripts: one file per (arm, variant), the batch a -D variable; M one per batch.
    scripts = {}
    for variant in ("retry", "sent"):
        for arm in args.arms:
            if arm in RETRY_ONLY and variant == "sent":
                continue
            if arm == "M":  # one script per batch (a literal LIMIT), 10 for the warm-up
                for batch in sorted(set(args.batches) | {10}):
                    scripts[(arm, variant, batch)] = common.write_script(
                        results, f"pgbench_M_{variant}_b{batch}.sql", script_m(SCHEMA[arm], batch)
                    )
                continue
            text = script_f(SCHEMA[arm]) if arm == "F" else script_e(SCHEMA[arm], variant)
            scripts[(arm, variant)] = common.write_script(results, f"pgbench_{arm}_{variant}.sql", text)

    try:
        current, db = run_plan(args, plan, scripts, sql_dir, csv_path, meta, so_path, so_stamp)
    except psycopg2.OperationalError as e:
        log(
            f"== bench: ABORTED: lost the connection to the server ({str(e).strip()}). "
            "Did someone reinstall sendjobs.so while the benchmark ran? (That crashes the backends "
            "that loaded it.) Partial results are in " + str(results)
        )
        return 3
    except SoChanged as e:
        log(f"== bench: ABORTED: {e}. Partial results are in {results}")
        return 3
    if db:
        db.close()
        drop_database(current)
    if args.sustained > 0 and "E" in args.arms:
        meta["sustained"] = run_sustained(args, results, scripts, sql_dir)
    meta["elapsed_s"] = round(time.time() - meta["_t_start"])
    del meta["_t_start"]
    meta["loadavg_end"] = common.sh("cat /proc/loadavg")
    common.write_meta(results, meta)
    log(f"== bench: {len(plan)} runs in {fmt_dur(meta['elapsed_s'])}; results in {results}")
    return 0


SUSTAINED_CLIENTS, SUSTAINED_BATCH, SUSTAINED_BACKLOG = 4, 10, 10_000


def run_sustained(args, results, scripts, sql_dir):
    """E for args.sustained seconds without a VACUUM in between, once per autovacuum_naptime:
    how throughput holds up while dead index entries pile up at the head of the claim order
    until autovacuum removes them. Writes sustained.csv (one row per pgbench -P interval)."""
    dbname = "bench_sustained"
    db, _secs, _payload = create_database(dbname, SUSTAINED_BACKLOG, ["E"], sql_dir)
    summary = []
    path = results / "sustained.csv"
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["naptime_s", "t_s", "cycles_per_s"])
        for naptime in args.naptimes:
            db.exec(f"ALTER SYSTEM SET autovacuum_naptime = '{int(naptime)}s'")
            db.exec("SELECT pg_reload_conf()")
            wait_for_autovacuum(db)
            db.exec(f"VACUUM (ANALYZE) {SCHEMA['E']}.send_jobs")
            db.exec("CHECKPOINT")
            before = table_stats(db, dbname, "E", "retry")
            r = run_pgbench(
                dbname,
                script_for(scripts, "E", "retry", SUSTAINED_BATCH),
                SUSTAINED_CLIENTS,
                SUSTAINED_BATCH,
                SUSTAINED_BACKLOG,
                "retry",
                args.sustained,
                progress=10 if args.sustained >= 40 else 2,
            )
            common.wait_quiet(db, autovacuum=False)
            after = table_stats(db, dbname, "E", "retry")
            db.exec(
                f"UPDATE {SCHEMA['E']}.send_jobs SET status = 'pending', lease_expires_at = NULL "
                "WHERE status = 'in_flight'"
            )
            for t, tps in r["progress"]:
                out.writerow([naptime, t, tps])
            jobs = after["gen_sum"] - before["gen_sum"]
            row = {
                "naptime_s": naptime,
                "seconds": args.sustained,
                "clients": SUSTAINED_CLIENTS,
                "batch": SUSTAINED_BATCH,
                "backlog": SUSTAINED_BACKLOG,
                "cycles_per_s": round(r["tps"], 1),
                "jobs_per_s": round(r["tps"] * jobs / r["cycles"], 1) if r["cycles"] else 0.0,
                "first_interval": r["progress"][0][1] if r["progress"] else None,
                "min_interval": min((tps for _t, tps in r["progress"]), default=None),
                "autovacuums": after["autovacuums"] - before["autovacuums"],
                "error": r["error"],
                "interval_s": r["progress"][0][0] if r["progress"] else None,
                "intervals": [round(tps) for _t, tps in r["progress"]],
            }
            summary.append(row)
            log(
                f"== bench: sustained, autovacuum_naptime {naptime} s: {row['cycles_per_s']:.0f} cycles/s "
                f"(intervals: {' '.join(f'{tps:.0f}' for _t, tps in r['progress'])}), "
                f"{row['autovacuums']} autovacuums"
            )
    db.exec("ALTER SYSTEM RESET autovacuum_naptime")
    db.exec("SELECT pg_reload_conf()")
    db.close()
    drop_database(dbname)
    return summary


def script_for(scripts, arm, variant, batch):
    """The pgbench script of an arm: one per variant, or one per batch (M)."""
    return scripts.get((arm, variant, batch)) or scripts[(arm, variant)]


class SoChanged(Exception):
    pass


def so_fingerprint(path):
    try:
        st = os.stat(path)
        return (st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        return None


def run_plan(args, plan, scripts, sql_dir, csv_path, meta, so_path, so_stamp):
    t_start = meta["_t_start"] = time.time()
    db = None
    current = None
    meta["load"] = []
    done = 0
    for phase, variant, backlog, rep, clients, batch, arm in plan:
        if so_fingerprint(so_path) != so_stamp:
            raise SoChanged(
                f"{so_path} was replaced during the benchmark: E would not be the extension measured so far"
            )
        dbname = f"bench_{'sent_' if phase == 'sent' else ''}{backlog}"
        if current != dbname:
            if db:
                db.close()
                drop_database(current)
            arms_here = [a for a in args.arms if not (phase == "sent" and a in RETRY_ONLY)]
            log(f"== bench: loading {dbname}: {backlog} jobs x {len({SCHEMA[a] for a in arms_here})} tables")
            db, secs, payload = create_database(dbname, backlog, arms_here, sql_dir)
            meta["load"].append({"db": dbname, "seconds": round(secs, 1)})
            meta["payload_text_bytes"], meta["payload_jsonb_bytes"] = payload
            log(f"   loaded in {secs:.1f} s (payload {payload[0]} bytes as text, {payload[1]} as jsonb)")
            current = dbname
            # Warm-up, not recorded: caches, the .so, the write-back of the load settle.
            if args.warmup > 0:
                for warm_arm in arms_here:
                    r = run_pgbench(
                        dbname, script_for(scripts, warm_arm, variant, 10), 1, 10, backlog, variant, args.warmup
                    )
                    if r["error"]:
                        log(f"   warm-up of {warm_arm} failed: {r['error']}")
                    common.wait_quiet(db, autovacuum=False)
                    db.exec(
                        f"UPDATE {SCHEMA[warm_arm]}.send_jobs SET status = 'pending', "
                        "lease_expires_at = NULL WHERE status = 'in_flight'"
                    )
        waited = wait_for_autovacuum(db)
        if waited > 1:
            log(f"   (waited {waited:.0f} s for autovacuum to finish before the run)")
        if not args.no_vacuum:
            for t in tables_of(dbname, arm, variant):
                db.exec(f"VACUUM (ANALYZE) {t}")
        db.exec("CHECKPOINT")
        before = table_stats(db, dbname, arm, variant)
        started = datetime.datetime.now().strftime("%H:%M:%S")
        r = run_pgbench(
            dbname, script_for(scripts, arm, variant, batch), clients, batch, backlog, variant, args.duration
        )
        common.wait_quiet(db, autovacuum=False)
        after = table_stats(db, dbname, arm, variant)
        left = after["in_flight"]
        if left:  # pgbench stopped between a claim and its finalize: put them back
            db.exec(
                f"UPDATE {SCHEMA[arm]}.send_jobs SET status = 'pending', lease_expires_at = NULL "
                "WHERE status = 'in_flight'"
            )
        if not args.no_vacuum:
            # Tidy up now, outside the timed window: otherwise the dead tuples this run left
            # wake autovacuum during a later run, which then shares the CPU with it.
            for t in tables_of(dbname, arm, variant):
                db.exec(f"VACUUM (ANALYZE) {t}")
        wal = int(db.one("SELECT pg_wal_lsn_diff(%s, %s)", (after["lsn"], before["lsn"]))[0])
        cycles = r["cycles"]
        jobs = cycles if arm == "F" else after["gen_sum"] - before["gen_sum"]
        jobs_per_s = r["tps"] * (jobs / cycles) if cycles else 0.0
        sql_lat = [lat for lat, text in r["statements"] if not text.startswith("\\")]
        claim_ms = None if arm == "F" or not sql_lat else sql_lat[0]
        fin_ms = None if arm == "F" or not sql_lat else round(sum(sql_lat[1:]), 3)
        upd = after["n_tup_upd"] - before["n_tup_upd"]
        hot = after["n_tup_hot_upd"] - before["n_tup_hot_upd"]
        row = {
            "phase": phase,
            "variant": variant,
            "backlog": backlog,
            "rep": rep,
            "clients": clients,
            "batch": batch,
            "arm": arm,
            "duration_s": args.duration,
            "cycles": cycles,
            "jobs": jobs,
            "failed": r["failed"],
            "tps": round(r["tps"], 2),
            "jobs_per_s": round(jobs_per_s, 1),
            "lat_avg_ms": r["lat_avg_ms"],
            "claim_ms": claim_ms,
            "finalize_ms": fin_ms,
            "wal_bytes": wal,
            "wal_per_cycle": round(wal / cycles) if cycles else None,
            "wal_per_job": round(wal / jobs) if jobs else None,
            "n_tup_upd": upd,
            "n_tup_hot_upd": hot,
            "hot_pct": round(100.0 * hot / upd, 1) if upd else None,
            "n_dead_tup": after["n_dead_tup"],
            "n_live_tup": after["n_live_tup"],
            "table_bytes": after["table_bytes"],
            "indexes_bytes": after["indexes_bytes"],
            "total_bytes": after["total_bytes"],
            "autovacuums": after["autovacuums"] - before["autovacuums"],
            "autovacuums_any": after["autovacuums_any"] - before["autovacuums_any"],
            "leftover_in_flight": left,
            "error": r["error"],
            "started_at": started,
        }
        with open(csv_path, "a", newline="") as f:
            csv.DictWriter(f, RUN_FIELDS).writerow(row)
        done += 1
        elapsed = time.time() - t_start
        eta = elapsed / done * (len(plan) - done)
        extra = f" claim {claim_ms:.3f} ms" if claim_ms is not None else ""
        err = f"  ERROR: {r['error']}" if r["error"] else ""
        log(
            f"[{done:3d}/{len(plan)}] {variant:5s} backlog {backlog:>7d} rep {rep} c={clients} "
            f"b={batch:<3d} {arm:2s} {jobs_per_s:9.0f} jobs/s  {r['tps']:8.0f} cycles/s{extra}"
            f"  (eta {fmt_dur(eta)}){err}"
        )
    return current, db


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
