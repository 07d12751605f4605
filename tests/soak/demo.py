"""The sendjobs demo: many workers, a flaky partner, faults on purpose, then proof.

Against a database where the extension can be created (scripts/demo.sh makes a
throwaway cluster with tests/cluster.py; the connection defaults come from PGHOST,
PGPORT, PGUSER and PGDATABASE, which that sets), this module:

  * creates the extension, a business table `transactions` guarded by
    sendjobs_guard_terminal and linked with sendjobs_link_transactions, and a history
    table filled by a plain PL/pgSQL AFTER UPDATE trigger;
  * enqueues --jobs send jobs (one per business row, each with an idempotency key;
    some overdue, some scheduled a little later, some with a small max_attempts);
  * starts a stand-in partner (an HTTP server on 127.0.0.1) that records every request
    and fails some on purpose (500 = try again, 422 = rejected for good);
  * runs --workers concurrent workers (sendjobs_claim / sendjobs_heartbeat /
    sendjobs_finalize), some of which die between claim and finalize, stall past their
    lease, or send slowly while heartbeating;
  * runs a "late reconciler" that keeps trying to flip finished business rows between
    success and failed (the guard must refuse);
  * stops when every job is terminal and checks the invariants of docs/contract.md against
    the partner's record, the workers' record of every call and the database.

The workers, the partner, the record and the checker are the other modules of this
package (tests/soak/), shared with the chaos soak (tests/soak/soak.py), which adds
backend terminations, server crashes and a failover.

Exit status: 0 all invariants held, 1 invariant violations, 2 the run did not finish
(timeout or crash). Only psycopg2 and the standard library are used. By hand, from the
repository root:

    PYTHONPATH=tests python3 tests/cluster.py run --name sendjobs-demo -c fsync=off \
        -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 \
        -c track_commit_timestamp=on -- /usr/bin/python3 -B -m soak.demo
"""

import argparse
import json
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the work tree

import psycopg2  # noqa: E402

from .checker import check_everything  # noqa: E402
from .partner import Partner  # noqa: E402
from .records import SETUP_SQL, read_database  # noqa: E402
from .summary import print_table, summary_lines  # noqa: E402
from .workers import Context, Reconciler, Target, Worker, connect, enqueue_chunk, plan_job  # noqa: E402

MAX_UNEXPECTED = 25  # more than this and the run is abandoned


def setup_and_enqueue(ctx, conn):
    args = ctx.args
    with conn.cursor() as cur:
        cur.execute(SETUP_SQL)
        cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'sendjobs'")
        version = cur.fetchone()[0]
    print(f"   extension sendjobs {version} created; transactions guarded and linked")
    now = time.time()
    plans = [plan_job(args.seed, i, now) for i in range(args.jobs)]
    for p in plans:
        ctx.plans[p["key"]] = p
    t0 = time.monotonic()
    for k in range(0, len(plans), 1000):
        ctx.note_enqueued(enqueue_chunk(conn, plans[k : k + 1000]))
    print(f"   enqueued {len(ctx.enqueued)} jobs in {time.monotonic() - t0:.2f} s")

    # Idempotency: enqueueing the same keys again (with another payload) creates nothing.
    again = plans[: min(50, len(plans))]
    with conn.cursor() as cur:
        for p in again:
            cur.execute(
                "SELECT sendjobs_enqueue(%s::jsonb, %s, NULL, %s, %s)",
                (json.dumps({"duplicate": True}), p["queue"], p["txn"], p["key"]),
            )
            jid = cur.fetchone()[0]
            if jid != ctx.enqueued[p["key"]]:
                ctx.violations.add(
                    "idempotency key created a second job", f"{p['key']}: first {ctx.enqueued[p['key']]}, again {jid}"
                )
        cur.execute("SELECT count(*), count(*) FILTER (WHERE payload ? 'duplicate') FROM send_jobs")
        n, dup = cur.fetchone()
    if n != len(plans) or dup:
        ctx.violations.add(
            "idempotency key created a second job", f"{n} jobs for {len(plans)} keys, {dup} with the duplicate payload"
        )
    print(f"   re-enqueued {len(again)} idempotency keys: still {n} jobs")


# ----------------------------------------------------------------------------------
# guard demonstrations (after the run)
# ----------------------------------------------------------------------------------


def guard_demo(ctx, notes):
    V = ctx.violations
    conn = connect(ctx.target, "sendjobs-demo guard")
    cur = conn.cursor()
    try:
        cur.execute("SELECT id FROM transactions WHERE status = 'success' AND id LIKE 'txn-%' ORDER BY id LIMIT 1")
        row = cur.fetchone()
        if row:
            txn = row[0]
            # Same-value updates pass.
            del conn.notices[:]
            cur.execute("UPDATE transactions SET status = 'success', updated_at = now() WHERE id = %s", (txn,))
            ok = cur.rowcount == 1 and not [n for n in conn.notices if "WARNING" in n]
            notes.append(
                f"same-value update success -> success on {txn}: "
                f"{'passes' if ok else 'NOT passed'} (rowcount {cur.rowcount})"
            )
            if not ok:
                V.add("guard refused a same-value update", f"{txn}: rowcount {cur.rowcount}")
            # guard_action = error: the statement fails.
            cur.execute("SET sendjobs.guard_action = 'error'")
            try:
                cur.execute("UPDATE transactions SET status = 'failed' WHERE id = %s", (txn,))
                V.add("guard_action=error did not raise", f"{txn}: rowcount {cur.rowcount}")
                notes.append("guard_action=error: NO error raised")
            except psycopg2.Error as e:
                notes.append(
                    f"guard_action=error: success -> failed fails with SQLSTATE {e.pgcode}: "
                    f"{(e.pgerror or '').strip().splitlines()[0]}"
                )
            cur.execute("RESET sendjobs.guard_action")
            cur.execute("SELECT status FROM transactions WHERE id = %s", (txn,))
            if cur.fetchone()[0] != "success":
                V.add("guard let a terminal business row flip", f"{txn} (guard_action=error)")

        # The declared exit failed -> pending is allowed (on a row that no job points at).
        cur.execute("INSERT INTO transactions (id, amount_cents, status) VALUES ('exit-demo', 1, 'failed')")
        steps = []
        for target in ("pending", "success", "failed"):
            del conn.notices[:]
            cur.execute("UPDATE transactions SET status = %s WHERE id = 'exit-demo'", (target,))
            cur.execute("SELECT status FROM transactions WHERE id = 'exit-demo'")
            steps.append((target, cur.fetchone()[0]))
        expect = [("pending", "pending"), ("success", "success"), ("failed", "success")]
        notes.append(
            "exit demo on 'exit-demo': failed -> pending (allowed), pending -> success (allowed),"
            " success -> failed (refused): " + ("as expected" if steps == expect else f"GOT {steps}")
        )
        if steps != expect:
            V.add("guard exits not honoured", f"exit-demo steps {steps}, expected {expect}")
    finally:
        cur.close()
        conn.close()


# ----------------------------------------------------------------------------------
# main
# ----------------------------------------------------------------------------------


def parse_args():
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument(
        "--host",
        default=os.environ.get("PGHOST") or "127.0.0.1",
        help="host, or the folder of the server's socket (PGHOST)",
    )
    p.add_argument("--port", type=int, default=int(os.environ.get("PGPORT") or 5432), help="(PGPORT)")
    p.add_argument("--user", default=os.environ.get("PGUSER") or "postgres", help="(PGUSER)")
    p.add_argument("--password", default=os.environ.get("PGPASSWORD"), help="(PGPASSWORD)")
    p.add_argument("--dbname", default=os.environ.get("PGDATABASE") or "postgres", help="(PGDATABASE)")
    p.add_argument("--jobs", type=int, default=3000, help="send jobs to enqueue")
    p.add_argument("--workers", type=int, default=8, help="concurrent workers")
    p.add_argument("--batch", type=int, default=10, help="jobs per sendjobs_claim call")
    p.add_argument("--lease-seconds", type=float, default=2.0, help="lease each claim asks for")
    p.add_argument("--seed", type=int, default=42, help="seed of every random choice")
    p.add_argument("--timeout", type=float, default=150.0, help="give up after this many seconds of work")
    p.add_argument("--p-die", type=float, default=0.05, help="share of batches whose worker dies")
    p.add_argument("--p-stall", type=float, default=0.05, help="share of batches whose worker stalls past the lease")
    p.add_argument("--p-slow", type=float, default=0.03, help="share of batches with a slow, heartbeated send")
    p.add_argument("--stall-extra", type=float, default=1.0, help="a stall lasts lease + up to this many seconds")
    p.add_argument("--backoff-ms", type=int, default=150, help="sendjobs.retry_backoff_base for the workers")
    a = p.parse_args()
    if a.jobs < 1 or a.workers < 1 or a.batch < 1 or a.lease_seconds <= 0:
        p.error("--jobs, --workers, --batch must be >= 1 and --lease-seconds > 0")
    # the names the shared workers use; the demo terminates no backends
    a.p_kill, a.p_pause, a.pause_extra = a.p_die, a.p_stall, max(a.stall_extra, 0.31)
    a.p_term_claim = a.p_term_send = a.p_term_finalize = 0.0
    return a


def main():
    args = parse_args()
    t_start = time.monotonic()
    print(
        f"== sendjobs demo: {args.jobs} jobs, {args.workers} workers, batch {args.batch}, "
        f"lease {args.lease_seconds:g} s, seed {args.seed}",
        flush=True,
    )
    print(f"   faults per batch: die {args.p_die:.0%}, stall {args.p_stall:.0%}, slow send {args.p_slow:.0%}")

    target = Target(args.host, args.port, args.user, args.dbname, args.password)
    partner = Partner(args.seed)
    ctx = Context(
        args,
        target,
        partner.url,
        [
            ("sendjobs.retry_backoff_base", f"'{args.backoff_ms}ms'"),
            ("sendjobs.retry_backoff_max", f"'{4 * args.backoff_ms}ms'"),
        ],
    )
    conn = connect(target, "sendjobs-demo main")
    print("-- setup")
    setup_and_enqueue(ctx, conn)
    partner.start()
    print(f"   partner listening on {partner.url}")

    workers = [Worker(ctx, i, args.lease_seconds) for i in range(args.workers)]
    reconciler = Reconciler(ctx)
    print("-- run")
    ctx.chaos.set()
    t_run = time.monotonic()
    for w in workers + [reconciler]:
        w.start()

    finished = False
    last_print = 0.0
    # On a terminal, one live line, rewritten four times a second; elsewhere (CI, a pipe)
    # a line every 3 s.
    live = sys.stdout.isatty()
    while True:
        time.sleep(0.25)
        elapsed = time.monotonic() - t_run
        try:
            with conn.cursor() as cur:
                cur.execute(
                    "SELECT count(*) FILTER (WHERE status NOT IN ('sent', 'failed')),"
                    "       count(*) FILTER (WHERE status = 'sent'),"
                    "       count(*) FILTER (WHERE status = 'failed'),"
                    "       count(*) FILTER (WHERE status = 'in_flight') FROM send_jobs"
                )
                open_, sent, failed, in_flight = cur.fetchone()
        except psycopg2.Error:
            ctx.violations.unexpected_error("progress poll")
            print(("\n" if live else "") + "!! lost the database connection: giving up", flush=True)
            break
        if open_ == 0:
            finished = True
        if live or finished or elapsed - last_print >= 3.0:
            last_print = elapsed
            c = ctx.record.counters
            line = (
                f"   t={elapsed:5.1f}s  terminal {sent + failed}/{args.jobs} (sent {sent}, failed {failed}),"
                f" in_flight {in_flight}; deaths {c['fault_kill']}, stalls {c['fault_pause']},"
                f" stale finalizes {c['finalize_stale']}, guard refusals {c['guard_refusals']}"
            )
            print(f"\r{line}\x1b[K" if live else line, end="\n" if finished or not live else "", flush=True)
        if finished:
            break
        if elapsed > args.timeout:
            print(
                ("\n" if live else "") + f"!! timeout: {open_} jobs still not terminal after {args.timeout:g} s",
                flush=True,
            )
            break
        if not any(w.is_alive() for w in workers):
            print(("\n" if live else "") + "!! every worker has exited", flush=True)
            break
        if len(ctx.violations.unexpected) > MAX_UNEXPECTED:
            print(("\n" if live else "") + f"!! more than {MAX_UNEXPECTED} unexpected errors: giving up", flush=True)
            break
    run_seconds = time.monotonic() - t_run

    ctx.stop.set()
    ctx.chaos.clear()
    for w in workers + [reconciler]:
        w.join(timeout=args.lease_seconds * 3 + args.pause_extra + 35)
    stuck = [w.name for w in workers + [reconciler] if w.is_alive()]
    if stuck:
        print(f"!! threads still running: {stuck}")
    partner.stop()

    print("-- guard demonstrations")
    notes = []
    try:
        guard_demo(ctx, notes)
    except Exception:
        ctx.violations.unexpected_error("guard demo")
    for n in notes:
        print(f"   {n}")

    print("-- checks")
    stats = {}
    try:
        conn.close()
        conn = connect(target, "sendjobs-demo checks")
        db = read_database(conn)
        conn.close()
        check_everything(ctx, db, list(partner.requests), stats, require_terminal=True)
    except Exception:
        ctx.violations.unexpected_error("checks")
    ctx.violations.fold_unexpected()

    c = ctx.record.counters
    lines = summary_lines(ctx, stats) + [
        ("worker deaths", f"{c['fault_kill']}  (claimed jobs dropped: {c['jobs_dropped_by_kill']})"),
        ("stalls", f"{c['fault_pause']}"),
        ("run time", f"{run_seconds:.1f} s of work, {time.monotonic() - t_start:.1f} s in all"),
        ("invariant violations", f"{ctx.violations.total()}"),
    ]
    if reconciler.sample_warning:
        print(f"   a guard WARNING: {reconciler.sample_warning}")
    print("== summary")
    print_table(lines)
    if ctx.violations.total():
        print("== invariant violations")
        print("\n".join(ctx.violations.report()))
    if not finished:
        print("== RESULT: the run did not finish")
        return 2
    if ctx.violations.total():
        print("== RESULT: FAILED, invariants violated")
        return 1
    print("== RESULT: OK, every invariant held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
