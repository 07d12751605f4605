"""The sendjobs chaos soak: workers, faults, server crashes or a failover, then proof.

It makes its own PostgreSQL cluster(s) (SENDJOBS_PG, 18 by default) under --workdir with tests/cluster.py (fsync
and synchronous_commit on, so crash recovery is real), creates the extension there,
and runs:

  * W workers, each on its own connection (claim / send / heartbeat / finalize);
  * a producer that keeps enqueueing jobs linked to guarded business rows (a retried
    enqueue after a crash reuses its idempotency keys);
  * a stand-in partner on 127.0.0.1 that records every send (job, generation, time) in
    this process's memory, outside the database;
  * a late reconciler that keeps trying to flip finished business rows;
  * poison jobs (a small share, max_attempts 2 or 3): their worker sends them, then dies
    or hangs past the lease, every time -- sendjobs_claim must give them up as failed
    once their last lease has expired, so the partner never gets more than max_attempts
    sends of one job (invariant 8);
  * an operator (tests/soak/lifecycle.py) that cancels random pending and in-flight jobs,
    redrives failed ones, and calls sendjobs_purge('1 hour', 500) again and again, with
    a few thousand jobs that finished a day ago seeded before the run for it to delete;
  * a fault injector: terminates worker backends (pg_terminate_backend) during the claim,
    during the send and during the finalize; kills workers between claim and finalize;
    pauses workers beyond their lease and lets them finalize late; stops the server with
    `pg_ctl -m immediate` and restarts it while the workers reconnect -- or, with
    --failover, runs against a primary with a synchronous physical standby and promotes
    the standby mid-run.

When the chaos phase has met its targets it stops injecting faults (and the operator
stops), lets the workers drain every job, and checks the invariants of docs/contract.md
-- 1 to 8, what cancel, redrive and purge must and must not do (10 to 12), that
sendjobs_stats agrees with the rows (13), and durability (14) -- against the partner's
record, the harness's record of every call and the database (tests/soak/checker.py).

This module is the soak's main: its options, the run (clusters, threads, the failover,
the summary), the checker's self-test on the run's records (--self-test-checker) and
--prove-checker, which runs the self-test and every broken variant of
tests/soak/faults.py. The parts it runs are the other modules of this package.

Exit status: 0 every invariant held, 1 violations, 2 the run did not finish or missed
its targets. Use scripts/soak.sh, which builds the extension and manages the workdir;
by hand, from the repository root:

    PYTHONPATH=tests /usr/bin/python3 -B -m soak.soak --short
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the work tree

import psycopg2  # noqa: E402

from cluster import Cluster, Workdir  # noqa: E402  (tests/cluster.py)

from .checker import check_everything  # noqa: E402
from .checker_selftest import checker_self_test  # noqa: E402
from .failovers import KINDS, Failovers, make_cluster  # noqa: E402
from .failovers import summary as failover_summary  # noqa: E402
from .faults import BROKEN, EXPECTED, Crasher, Killer, detach_standby, run_sql_retrying  # noqa: E402
from .lifecycle import PURGE_OLDER_THAN, Operator, Relay, seed_finished_jobs  # noqa: E402
from .partner import Partner  # noqa: E402
from .records import SETUP_SQL, read_database  # noqa: E402
from .summary import print_table, summary_lines  # noqa: E402
from .workers import Context, Producer, Reconciler, Target, Worker, close_quietly, connect  # noqa: E402

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The soak's clusters: tests/cluster.py's BASE_SETTINGS (loopback only; fsync,
# synchronous_commit and full_page_writes on, so that crash recovery is real), plus
# these, as the soak has always run: WAL for a streaming standby (--failover), and a
# checkpoint at least every minute; and commit timestamps, so that the checker knows
# when each cancel committed (no claim may start after it).
SOAK_SETTINGS = (
    "max_connections=100",
    "wal_level=replica",
    "max_wal_senders=5",
    "checkpoint_timeout=60s",
    "max_wal_size=512MB",
    "wal_sender_timeout=10s",
    "track_commit_timestamp=on",
)


# ----------------------------------------------------------------------------------
# main
# ----------------------------------------------------------------------------------

PRESETS = {
    "short": dict(
        progress_every=5,
        jobs=2000,
        workers=8,
        min_duration=40,
        max_duration=100,
        crash_every=12,
        min_crashes=3,
        min_faults=150,
    ),
    "long": dict(
        progress_every=20,
        jobs=100_000,
        workers=10,
        min_duration=60,
        max_duration=5400,
        crash_every=25,
        min_crashes=10,
        min_faults=1000,
    ),
    "failover": dict(
        progress_every=5,
        jobs=1500,
        workers=8,
        min_duration=45,
        max_duration=100,
        crash_every=0,
        min_crashes=0,
        min_faults=100,
        failover_at=22,
    ),
    # Under Patroni (soak/failovers.py): one failover of each kind; the chaos lasts until
    # they all ran. "patroni-long": 20 of each (docs/operations.md records its result).
    "patroni": dict(
        progress_every=10,
        jobs=1000,
        workers=6,
        min_duration=20,
        max_duration=600,
        crash_every=0,
        min_crashes=0,
        min_faults=20,
        each=1,
    ),
    "patroni-long": dict(
        progress_every=30,
        jobs=20_000,
        workers=8,
        min_duration=60,
        max_duration=7200,
        crash_every=0,
        min_crashes=0,
        min_faults=500,
        each=20,
    ),
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--short", action="store_true", help="about a minute: crashes, every fault (default)")
    mode.add_argument("--long", action="store_true", help=">= 100,000 jobs, 1,000 faults, 10 server crashes")
    mode.add_argument("--failover", action="store_true", help="primary + synchronous standby, promoted mid-run")
    mode.add_argument("--patroni", action="store_true", help="a three-node Patroni cluster, each kind of failover")
    mode.add_argument(
        "--prove-checker",
        action="store_true",
        help="run every broken variant; pass only if the checker catches each one",
    )
    p.add_argument(
        "name",
        nargs="?",
        choices=sorted(PRESETS) + ["prove-checker"] + sorted(BROKEN),
        help="one soak by name: a preset (as its option), prove-checker, or a broken variant (as --break)",
    )
    p.add_argument("--break", dest="broken", choices=sorted(BROKEN), help="run a deliberately broken variant")
    p.add_argument("--workdir", help="where the clusters live (default: a new temporary folder, removed)")
    p.add_argument("--jobs", type=int, help="at least this many jobs")
    p.add_argument("--workers", type=int)
    p.add_argument("--batch", type=int, default=10)
    p.add_argument("--leases", default="1,1.5,2,3", help="lease seconds, one per worker in turn")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--min-duration", type=float, help="chaos phase lasts at least this many seconds")
    p.add_argument("--max-duration", type=float, help="the chaos phase ends by then, targets met or not")
    p.add_argument("--drain-timeout", type=float, default=120.0)
    p.add_argument("--crash-every", type=float, help="mean seconds between server crashes (0: none)")
    p.add_argument("--min-crashes", type=int)
    p.add_argument("--min-faults", type=int)
    p.add_argument("--failover-at", type=float, help="seconds into the chaos phase (--failover)")
    p.add_argument("--each", type=int, help="failovers of each kind (--patroni)")
    p.add_argument("--kinds", default=",".join(KINDS), help="the kinds of failover, in turn (--patroni)")
    p.add_argument("--fault-gap", type=float, default=3.0, help="seconds from a healthy cluster to the next failover")
    p.add_argument(
        "--async-replication", action="store_true", help="Patroni's synchronous_mode off: what acknowledgements lose"
    )
    p.add_argument("--backlog", type=int, default=1500, help="open jobs the producer keeps at most")
    p.add_argument("--chunk", type=int, default=250, help="jobs per enqueue statement")
    p.add_argument("--p-kill", type=float, default=0.02)
    p.add_argument("--p-pause", type=float, default=0.015)
    p.add_argument("--p-slow", type=float, default=0.01)
    p.add_argument("--p-term-claim", type=float, default=0.03)
    p.add_argument("--p-term-send", type=float, default=0.03)
    p.add_argument("--p-term-finalize", type=float, default=0.04)
    p.add_argument(
        "--finalize-batch-share",
        type=float,
        default=0.5,
        help="share of workers that finalize each batch with one sendjobs_finalize_batch call per outcome",
    )
    p.add_argument("--pause-extra", type=float, default=1.5, help="a pause lasts lease + up to this")
    p.add_argument(
        "--p-poison",
        type=float,
        default=0.005,
        help="share of jobs that are poison (their worker dies or hangs on every attempt)",
    )
    p.add_argument(
        "--old-jobs",
        type=int,
        default=3000,
        help="jobs seeded as finished a day ago, for the purge to delete while the workers run",
    )
    p.add_argument(
        "--recent-jobs",
        type=int,
        default=100,
        help="jobs seeded as created a day ago but finished 10 minutes ago: the purge must keep them",
    )
    p.add_argument("--backoff-ms", type=int, default=150, help="sendjobs.retry_backoff_base for the workers")
    p.add_argument(
        "--self-test-checker",
        action="store_true",
        help="after a clean run, mutate copies of its records once per check: each must fire",
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--progress-every", type=float, help="seconds between progress lines")
    a = p.parse_args(argv)
    preset = "long" if a.long else "failover" if a.failover else "patroni" if a.patroni else "short"
    if a.name:
        flags = [a.short, a.long, a.failover, a.patroni, a.prove_checker, a.broken is not None]
        if any(flags):
            p.error(f"a soak by name ({a.name}) takes no --short/--long/--failover/--patroni/--prove-checker/--break")
        if a.name == "prove-checker":
            a.prove_checker = True
        elif a.name in BROKEN:
            a.broken = a.name
        else:
            preset = a.name
    a.patroni = preset.startswith("patroni")
    a.failover = a.failover or preset == "failover"
    a.long = a.long or preset == "long"
    a.kind_list = [k for k in a.kinds.split(",") if k]
    if not set(a.kind_list) <= set(KINDS):
        p.error(f"--kinds: each of {', '.join(KINDS)}")
    if a.broken == "async-standby":
        preset, a.failover = "failover", True
    a.preset = preset
    for k, v in PRESETS[preset].items():
        if getattr(a, k, None) is None:
            setattr(a, k, v)
    if a.failover_at is None:
        a.failover_at = 0
    a.lease_list = [float(x) for x in a.leases.split(",")]
    return a


def main(argv=None):
    args = parse_args(argv)
    own_workdir = Workdir("sendjobs-soak") if args.workdir is None else None
    workdir = own_workdir.path if own_workdir else args.workdir
    if os.geteuid() == 0:
        shutil.chown(workdir, "postgres", "postgres")
        os.chmod(workdir, 0o755)
    clusters = []

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    try:
        if args.prove_checker:
            return prove_checker(args, workdir)
        return run(args, workdir, clusters)
    finally:
        for c in clusters:
            c.remove() if hasattr(c, "nodes") else c.shutdown_quietly()  # a Patroni cluster, or one server
        if own_workdir:
            own_workdir.remove()


def run(args, workdir, clusters):
    t_start = time.monotonic()
    broken = BROKEN.get(args.broken) if args.broken else None
    title = f"sendjobs soak ({args.preset}{', BROKEN: ' + args.broken if broken else ''})"
    print(
        f"== {title}: >= {args.jobs} jobs, {args.workers} workers, batch {args.batch}, leases "
        f"{args.leases} s, seed {args.seed}",
        flush=True,
    )
    if broken:
        print(f"   broken on purpose: {broken['doc']}")
        if broken.get("no_poison"):
            args.p_poison = 0.0  # its claim never gives up: a poison job would never finish

    # -- clusters ---------------------------------------------------------------------
    primary = standby = patroni = None
    if args.patroni:
        patroni = make_cluster(workdir, args, SOAK_SETTINGS)
        clusters.append(patroni)
        patroni.start()
        hosts = ",".join("127.0.0.1" for _ in patroni.nodes)
        ports = ",".join(str(n.port) for n in patroni.nodes)
        target = Target(hosts, ports, "postgres", "postgres", read_write=True)
        where = (
            f"Patroni: {len(patroni.nodes)} nodes over {len(patroni.etcd)} etcd members, synchronous_mode "
            f"{'OFF' if args.async_replication else 'on'}; workers connect to host={hosts} port={ports} "
            "target_session_attrs=read-write"
        )
    else:
        primary = Cluster(workdir, "primary", settings=SOAK_SETTINGS)
        clusters.append(primary)
        primary.initdb()
        if args.failover:
            if args.broken != "async-standby":
                primary.settings.append("synchronous_standby_names=*")
            primary.start()
            standby = Cluster(workdir, "standby", settings=SOAK_SETTINGS + ("hot_standby=on",))
            clusters.append(standby)
            standby.basebackup(primary)
            standby.start()
        else:
            primary.start()
        target = Target("127.0.0.1", primary.port, "postgres", "postgres")
        where = (
            f"primary on 127.0.0.1:{primary.port}, synchronous standby on 127.0.0.1:{standby.port}"
            if standby
            else f"server on 127.0.0.1:{primary.port}"
        )
    if args.broken == "async-standby":
        where = where.replace("synchronous standby", "ASYNCHRONOUS standby")
    print(f"-- setup: {where} (fsync on, synchronous_commit on)", flush=True)

    conn = connect(target, "soak setup")
    with conn.cursor() as cur:
        cur.execute(SETUP_SQL)
        if broken and broken.get("sql"):
            cur.execute(broken["sql"])
        cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'sendjobs'")
        print(f"   extension sendjobs {cur.fetchone()[0]}; transactions guarded and linked; witness tables")
    seeded_old, seeded_recent = seed_finished_jobs(conn, args.old_jobs, args.recent_jobs)
    print(
        f"   seeded {len(seeded_old)} jobs finished a day ago (to purge) and {len(seeded_recent)} finished"
        f" 10 minutes ago (to keep), each its own event"
    )
    Relay.create_consumer(conn)
    if standby:
        state = wait_for_standby(conn, args)
        print(f"   standby streaming, sync_state = {state}")

    partner = Partner(args.seed)
    partner.start()
    settings = [
        ("sendjobs.retry_backoff_base", f"'{args.backoff_ms}ms'"),
        ("sendjobs.retry_backoff_max", f"'{4 * args.backoff_ms}ms'"),
    ]
    if broken and broken.get("sql"):
        settings.append(("search_path", "soak_broken, public"))
    ctx = Context(args, target, partner.url, settings)
    ctx.killer = Killer(ctx)
    ctx.seeded_old, ctx.seeded_recent = seeded_old, seeded_recent
    ctx.relay = True  # the outbox's relay runs (check_relay)

    producer = Producer(ctx, 0)
    ctx.chaos.set()
    producer.conn = conn
    producer.enqueue_next(min(args.backlog, args.jobs))
    producer.conn = None
    conn.close()
    print(f"   partner on {partner.url}; {len(ctx.enqueued)} jobs enqueued to start with", flush=True)

    cluster_lock = threading.Lock()
    workers = [Worker(ctx, i, args.lease_list[i % len(args.lease_list)]) for i in range(args.workers)]
    reconciler = Reconciler(ctx)
    operator = Operator(ctx)
    relay = Relay(ctx)
    crasher = Crasher(ctx, primary, cluster_lock) if args.crash_every > 0 else None
    failovers = Failovers(ctx, patroni, args.kind_list, args.each, args.fault_gap) if patroni else None
    print("-- chaos", flush=True)
    t_run = time.monotonic()
    for t in workers + [reconciler, producer, operator, relay] + [x for x in (crasher, failovers) if x]:
        t.start()

    monitor = None
    phase = "chaos"
    finished = targets_met = False
    failover_done = midrun_done = detached = False
    last_print = -10.0
    open_ = None
    t_chaos_end = None
    while True:
        time.sleep(0.5)
        now = time.monotonic()
        elapsed = now - t_run
        c = ctx.record.counters
        faults = sum(v for k, v in c.items() if k.startswith("fault_") and not k.endswith("_missed"))
        crashes = c["fault_server_crash"]

        # broken variants that act mid-run
        if broken and broken.get("midrun") and not midrun_done and elapsed > 0.4 * args.min_duration:
            midrun_done = run_sql_retrying(ctx, broken["midrun"])
            if midrun_done:
                print(f"   t={elapsed:5.1f}s  BROKEN: {broken['midrun']}", flush=True)
        # failover: cut the standby off first when it is the async-standby variant
        if standby and args.broken == "async-standby" and not detached and elapsed > args.failover_at - 8:
            detach_standby(standby)
            detached = True
            print(f"   t={elapsed:5.1f}s  BROKEN: asynchronous standby cut off from the primary", flush=True)
        if standby and not failover_done and elapsed > args.failover_at:
            t0 = time.monotonic()
            primary.stop("immediate")
            standby.promote()
            target.set_port(standby.port)
            ctx.record.count("fault_failover")
            failover_done = True
            print(
                f"   t={elapsed:5.1f}s  FAILOVER: primary stopped (-m immediate), standby promoted in "
                f"{time.monotonic() - t0:.1f} s; workers now go to 127.0.0.1:{standby.port}",
                flush=True,
            )

        try:
            if monitor is None or monitor.closed:
                monitor = connect(target, "soak monitor", timeout=2)
            with monitor.cursor() as cur:
                cur.execute(
                    "SELECT (SELECT count(*) FROM public.send_jobs WHERE status = 'pending'),"
                    "       (SELECT count(*) FROM public.send_jobs WHERE status = 'in_flight')"
                )
                pending, in_flight = cur.fetchone()
                open_ = pending + in_flight
        except psycopg2.Error:
            close_quietly(monitor)
            monitor = None

        if phase == "chaos":
            enough = (
                elapsed >= args.min_duration
                and len(ctx.enqueued) >= args.jobs
                and faults >= args.min_faults
                and crashes >= args.min_crashes
                and (not standby or failover_done)
                and (not failovers or failovers.done.is_set())
            )
            if failovers and failovers.error:
                ctx.violations.add("a failover did not complete", failovers.error)
            stop = (crasher and crasher.error) or (failovers and failovers.error)
            if enough or elapsed >= args.max_duration or stop:
                targets_met = enough
                phase = "drain"
                t_chaos_end = now
                ctx.chaos.clear()
                if crasher:
                    crasher.halt.set()
                    with cluster_lock:  # a crash in progress finishes its restart
                        pass
                print(
                    f"   t={elapsed:5.1f}s  chaos over ({'targets met' if enough else 'TARGETS NOT MET'}); draining",
                    flush=True,
                )
        elif phase == "drain":
            if producer.done.is_set() and operator.done.is_set() and open_ == 0:
                finished = True
            elif now - t_chaos_end > args.drain_timeout:
                print(f"!! drain timeout: {open_} jobs still open", flush=True)
        if not args.quiet and (elapsed - last_print >= args.progress_every or finished):
            last_print = elapsed
            print(
                f"   t={elapsed:5.1f}s  jobs {len(ctx.enqueued)}, open {open_}, sends {len(partner.requests)},"
                f" faults {faults} (crashes {crashes}), finalizes applied {c['finalize_applied']}"
                f" stale {c['finalize_stale']} unknown {c['finalize_unknown']}",
                flush=True,
            )
        if finished or (phase == "drain" and now - t_chaos_end > args.drain_timeout):
            break
        if len(ctx.violations.unexpected) > 50:
            print("!! more than 50 unexpected errors: giving up", flush=True)
            break
    run_seconds = time.monotonic() - t_run
    close_quietly(monitor)

    ctx.stop.set()
    ctx.chaos.clear()
    if crasher:
        crasher.halt.set()
        crasher.join(timeout=60)
    for t in workers + [reconciler, producer, operator, relay]:
        t.join(timeout=max(args.lease_list) * 3 + args.pause_extra + 30)
    stuck = [t.name for t in workers + [reconciler, producer, operator, relay] if t.is_alive()]
    if stuck:
        print(f"!! threads still running: {stuck}")
    try:
        relay.drain()
    except Exception:
        ctx.violations.unexpected_error("relay drain")
    ctx.killer.close()
    partner.stop()

    print("-- checks", flush=True)
    stats = {}
    try:
        conn = connect(target, "soak checks")
        db = read_database(conn)
        conn.close()
        check_everything(ctx, db, list(partner.requests), stats, require_terminal=finished)
    except Exception:
        db = None
        ctx.violations.unexpected_error("checks")
    if args.self_test_checker and db is not None:
        self_test_checker(ctx, db, list(partner.requests), finished)
    lost_note = None
    if standby and failover_done:
        try:
            lost_note = audit_old_primary(primary, ctx, target)
        except Exception:
            ctx.violations.unexpected_error("old primary audit")
    ctx.violations.fold_unexpected()

    c = ctx.record.counters
    fault_kinds = [
        ("terminate during claim (statement/commit)", "fault_term_claim"),
        ("terminate inside claim transaction, before COMMIT", "fault_term_claim_precommit"),
        ("terminate during send", "fault_term_send"),
        ("terminate during finalize (statement/commit)", "fault_term_finalize"),
        ("terminate after finalize ran, before COMMIT", "fault_term_finalize_precommit"),
        ("worker killed between claim and finalize", "fault_kill"),
        ("worker paused past its lease, finalized late", "fault_pause"),
        ("server crash (pg_ctl -m immediate) + restart", "fault_server_crash"),
        ("failover (primary -m immediate, standby promoted)", "fault_failover"),
    ]
    faults = sum(c[k] for _, k in fault_kinds)
    lines = summary_lines(ctx, stats)
    lines += [
        (
            "faults",
            f"{faults} in all (terminations that found no backend, not counted: "
            f"{sum(v for k, v in c.items() if k.endswith('_missed'))})",
        ),
    ]
    lines += [
        (f"  {name}", f"{c[k]}")
        for name, k in fault_kinds
        if c[k] or not (k.endswith("failover") or (k.endswith("crash") and args.failover))
    ]
    lines += [
        (
            "connections lost",
            f"{c['connections_lost']}  (reconnect attempts refused while the server was down:"
            f" {c['connect_failures']}; enqueue chunks retried with the same keys:"
            f" {c['enqueue_unknown']}; finalizes retried after an unknown answer:"
            f" {c['finalize_retried_after_unknown']})",
        ),
        (
            "unknown answers",
            f"claims {stats.get('claim_unknown', 0)} (committed {stats.get('claim_unknown_committed', 0)}),"
            f" heartbeats {stats.get('heartbeat_unknown', 0)}"
            f" (committed {stats.get('heartbeat_unknown_committed', 0)}),"
            f" finalizes {stats.get('finalize_unknown', 0)}"
            f" (committed {stats.get('finalize_unknown_committed', 0)})",
        ),
    ]
    if failovers:
        lines.append(("failovers under Patroni", f"{len(failovers.results)} (each kind: {args.each})"))
        lines += failover_summary(failovers, ctx.record.calls)
    lines += lifecycle_lines(c, stats, args)
    if crasher:
        lines.append(("server downtime", f"{crasher.downtime:.1f} s over {c['fault_server_crash']} crashes"))
    if lost_note:
        lines.append(("old primary after failover", lost_note))
    lines += [
        (
            "run time",
            f"{run_seconds:.1f} s of work (chaos {(t_chaos_end or time.monotonic()) - t_run:.1f} s),"
            f" {time.monotonic() - t_start:.1f} s in all",
        ),
        ("invariant violations", f"{ctx.violations.total()}"),
    ]
    print("== summary")
    print_table(lines)
    if ctx.violations.total():
        print("== invariant violations")
        print("\n".join(ctx.violations.report()))
    if ctx.violations.total():
        print("== RESULT: FAILED, invariants violated")
        return 1
    if not finished:
        print("== RESULT: the run did not finish (jobs still open)")
        return 2
    if not targets_met:
        print("== RESULT: every invariant held, but the run missed its targets (jobs/faults/crashes)")
        return 2
    print("== RESULT: OK, every invariant held")
    return 0


def lifecycle_lines(c, stats, args):
    """The summary's lines about release 0.2.0's transitions: giving up, cancel,
    redrive, purge (counters from the run, stats from the checker)."""
    g = lambda k: stats.get(k, 0)  # noqa: E731
    outcomes = stats.get("redriven_outcomes", {})
    return [
        (
            "poison jobs (invariant 8)",
            f"{g('poison')}: gave up {g('poison_gave_up')}, cancelled"
            f" {g('poison_cancelled')}; sent {g('poison_sends')} times in all, at most"
            f" {g('poison_max_sends')} times each (max_attempts 2 or 3); their workers"
            f" died {c['poison_crash']} times, hung {c['poison_hang']} times",
        ),
        (
            "sends per job",
            f"checked <= max_attempts for every job ({g('sent_max_attempts_times')} jobs reached"
            f" it); {g('gave_up')} jobs gave up, the lease of their last attempt expired",
        ),
        (
            "cancels",
            f"{g('cancel_calls')} calls: applied {c['cancel_applied']}, stale {c['cancel_stale']},"
            f" unknown {g('cancel_unknown')} (committed {g('cancel_unknown_committed')}); jobs cancelled"
            f" {g('cancelled')}; sends that arrived after their job's cancel {g('sends_after_cancel')}"
            f" (claimed before it)",
        ),
        (
            "redrives",
            f"{c['redrive_new'] + c['redrive_again'] + c['redrive_not_failed']} calls: {g('redriven')}"
            f" new jobs (now sent {outcomes.get('sent', 0)}, failed {outcomes.get('failed', 0)},"
            f" cancelled {outcomes.get('cancelled', 0)}); again -> same new job {c['redrive_again']};"
            f" not failed -> 55000 {c['redrive_not_failed']}",
        ),
        (
            "purge",
            f"{g('purge_calls')} calls of sendjobs_purge('{PURGE_OLDER_THAN}', ...) while workers ran"
            f" ({g('purge_unknown')} unknown): deleted {g('purged')}, {g('purge_old_left')} of"
            f" {args.old_jobs} old jobs left; the {args.recent_jobs} that finished within the hour kept",
        ),
    ]


def self_test_checker(ctx, db, sends, finished):
    """Every check must be seen to fail: on copies of this (clean) run's records, one
    mutation per check, each the fact the check exists for; the check must report it."""
    print("-- checker self-test: one mutation of this run's records per check", flush=True)
    if ctx.violations.total() or ctx.violations.unexpected or not finished:
        print("   skipped: the run itself is not clean")
        return
    results = checker_self_test(ctx, db, sends)
    for check, doc, reported, caught in results:
        print(f"   {'caught ' if caught else 'MISSED '} {check}  <- {doc}")
        if not caught:
            print(f"            reported instead: {reported}")
            ctx.violations.add("checker self-test: a check did not fire", f"{check} ({doc})")
    print(f"   {sum(1 for r in results if r[3])} of {len(results)} checks seen to fail", flush=True)


def wait_for_standby(conn, args):
    deadline = time.monotonic() + 60
    while True:
        with conn.cursor() as cur:
            cur.execute("SELECT sync_state, state FROM pg_stat_replication")
            row = cur.fetchone()
        want = "async" if args.broken == "async-standby" else "sync"
        if row and row[0] == want and row[1] == "streaming":
            return row[0]
        if time.monotonic() > deadline:
            raise RuntimeError(f"the standby is not streaming as {want}: {row}")
        time.sleep(0.2)


def audit_old_primary(primary, ctx, target):
    """Starts the old primary on its own after the run (it recovers to its own timeline, no
    worker reaches it) and compares its witness rows with the new primary's: rows it has and
    the new primary lacks were committed there but never acknowledged -- every one of them
    must be a call whose answer did not come back."""
    primary.start()
    try:
        old = connect(Target("127.0.0.1", primary.port, "postgres", "postgres"), "soak audit")
        new = connect(target, "soak audit")
        ids = {}
        for name, conn in (("old", old), ("new", new)):
            with conn.cursor() as cur:
                cur.execute(
                    "SELECT call_id FROM harness.claims UNION SELECT call_id FROM harness.heartbeats"
                    " UNION SELECT call_id FROM harness.finalizes UNION SELECT call_id FROM harness.cancels"
                )
                ids[name] = {r[0] for r in cur.fetchall()}
            conn.close()
    finally:
        primary.stop("fast")
    only_old = ids["old"] - ids["new"]
    calls = {c["id"]: c for c in ctx.record.calls}
    acked = [cid for cid in only_old if calls.get(cid, {}).get("known")]
    for cid in acked:
        c = calls[cid]
        ctx.violations.add(
            "an acknowledged call is on the old primary only (lost in the failover)",
            f"call {cid} {c['kind']} job {c.get('job')} -> {c['result']!r}",
        )
    return (
        f"{len(only_old)} calls committed there but not on the new primary"
        f" ({len(acked)} of them acknowledged to their worker)"
    )


# ----------------------------------------------------------------------------------
# the checker's own test: every broken variant must be caught
# ----------------------------------------------------------------------------------


def prove_checker(args, workdir):
    """Runs each broken variant (a short soak each, in a subfolder of the workdir) and
    checks that the checker reports at least one of the expected checks. Exit 0 when
    every variant was caught."""
    me = [sys.executable, "-B", "-m", "soak.soak"]  # this soak again, as a child process
    env = dict(os.environ, PYTHONPATH=TESTS_DIR)
    results = []
    sub = os.path.join(workdir, "self-test")
    os.mkdir(sub)
    if os.geteuid() == 0:
        shutil.chown(sub, "postgres", "postgres")
    print("== every check, on a clean run's records mutated once per check", flush=True)
    t0 = time.monotonic()
    cmd = me + [
        "--quiet",
        "--self-test-checker",
        "--seed",
        str(args.seed),
        "--min-duration",
        "20",
        "--max-duration",
        "60",
        "--min-crashes",
        "1",
        "--crash-every",
        "8",
        "--min-faults",
        "0",
        "--jobs",
        "800",
        "--workdir",
        sub,
    ]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    finally:
        shutil.rmtree(sub, ignore_errors=True)
    tested = [
        line for line in p.stdout.splitlines() if line.startswith(("   caught", "   MISSED", "            reported"))
    ]
    print("\n".join(tested))
    ok = p.returncode == 0 and tested and not any(line.startswith("   MISSED") for line in tested)
    results.append(("checker self-test", ok))
    print(
        f"   exit {p.returncode} after {time.monotonic() - t0:.0f} s: {'every check fired' if ok else 'NOT every check fired'}",
        flush=True,
    )
    if p.returncode != 0 and not tested:
        print(p.stdout[-3000:])
    for name in sorted(BROKEN):
        sub = os.path.join(workdir, name)
        os.mkdir(sub)
        if os.geteuid() == 0:
            shutil.chown(sub, "postgres", "postgres")
        cmd = me + [
            "--break",
            name,
            "--quiet",
            "--seed",
            str(args.seed),
            "--min-duration",
            "25",
            "--max-duration",
            "60",
            "--min-crashes",
            "1",
            "--crash-every",
            "10",
            "--min-faults",
            "0",
            "--jobs",
            "800",
            "--drain-timeout",
            "40",
        ]
        if name == "async-standby":
            cmd = me + [
                "--break",
                name,
                "--quiet",
                "--seed",
                str(args.seed),
                "--min-duration",
                "30",
                "--max-duration",
                "60",
                "--failover-at",
                "18",
                "--min-faults",
                "0",
                "--jobs",
                "800",
                "--drain-timeout",
                "40",
            ]
        print(f"== broken variant {name}: {BROKEN[name]['doc']}", flush=True)
        t0 = time.monotonic()
        if name.startswith("finalize-"):
            # the broken function stands in for sendjobs_finalize; more late finalizes to race
            cmd += ["--finalize-batch-share", "0", "--p-pause", "0.05"]
        cmd += ["--workdir", sub]
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        finally:
            shutil.rmtree(sub, ignore_errors=True)
        out = p.stdout
        found = []
        in_v = False
        for line in out.splitlines():
            if line.startswith("== invariant violations"):
                in_v = True
                continue
            if in_v and line.startswith("== "):
                in_v = False
            if in_v and line.startswith("   ") and not line.startswith("      "):
                found.append(line.strip())
        caught = p.returncode == 1 and any(any(f.startswith(e + ":") for f in found) for e in EXPECTED[name])
        results.append((name, caught))
        print(f"   exit {p.returncode} after {time.monotonic() - t0:.0f} s; the checker reported:")
        for f in found:
            print(f"     {f}")
        print(f"   {'CAUGHT' if caught else 'NOT CAUGHT'} (expected: {'; '.join(EXPECTED[name])})", flush=True)
    missed = [n for n, ok in results if not ok]
    print(
        f"== prove-checker: {len(results) - len(missed)} of {len(results)} passed (self-test + broken variants)"
        + (f"; NOT caught: {missed}" if missed else "")
    )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
