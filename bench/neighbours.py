"""Noisy neighbours: how long a partner's jobs wait while another partner has a burst
(issue "One partner's burst never delays another's"). Run by bench/neighbours.sh inside
a throwaway cluster.

Workers claim from any queue, as the workers do by default: each claims --batch jobs,
"sends" them for --send-ms, finalizes them in one sendjobs_finalize_batch, and when a
claim comes back short waits for a wake-up (LISTEN sendjobs_wakeup) or --poll seconds.
A producer enqueues into queue b at --rate jobs a second for --duration seconds. What
is measured is b's wait: from its enqueue (created_at) to the claim that took it, on the
database clock. Scenarios, interleaved within each repetition, each in a fresh database:

  alone    queue b and nothing else
  burst    queue a holds --burst pending jobs when the producer starts
  capped   the same burst, a capped at --cap jobs in flight
  ordered  the same burst, b's jobs each with an ordering key of its own (decision 0020)

A scenario ends when every job of b was claimed (or after --timeout seconds: the jobs
still waiting then count with their age, and the report says how many). The report
gives b's p50 and p99 in ms, median (min-max) over the repetitions, and each
repetition's ratio to `alone` measured beside it.

With --costs, the claim's own latency instead (invariant 21's cost, decision 0019): one
client claims --batches from any queue and finalizes them as retries due at once (the
backlog stays as it was), with pgbench, --cost-seconds a run, in three databases made
once, the runs interleaved:

  one       one queue holding --cost-backlog due jobs
  many      100 queues: one holding --cost-backlog less 9,900, 99 holding 100 each
  limited   the same 100 queues, the 99 small ones capped at 1 job in flight and full
  ordered   100 queues of 100 ordered jobs each, every job a key of its own
  line      the same, and ahead of them in the claim order a line of --line jobs under
            one key in queue q00, its first in flight (decision 0020)

The report gives the claim statement's latency (pgbench -r), median (min-max) over the
repetitions, and each repetition's ratio to `one` (for `limited`: to `many`; for
`line`: to `ordered`). --cost-scenarios picks them.
"""

import argparse
import select
import statistics
import threading
import time

import common

TEMPLATE = "neighbours_template"


def percentile(values, q):
    values = sorted(values)
    if not values:
        return None
    k = max(0, min(len(values) - 1, int(round(q * (len(values) - 1)))))
    return values[k]


class Worker(threading.Thread):
    """One worker: claim from any queue, send, finalize in one batch, wait when short."""

    def __init__(self, dbname, args, stop, waits):
        super().__init__(daemon=True)
        self.db = common.Db(dbname, application_name="neighbours-worker")
        self.db.exec("LISTEN sendjobs_wakeup")
        self.args, self.stop, self.waits = args, stop, waits

    def run(self):
        a = self.args
        while not self.stop.is_set():
            rows = self.db.rows(
                "SELECT id, claim_generation, queue,"
                "       extract(epoch FROM clock_timestamp() - created_at) * 1000"
                "  FROM sendjobs_claim(%s, '1 minute')",
                (a.batch,),
            )
            for _, _, queue, waited_ms in rows:
                if queue == "b":
                    self.waits.append(float(waited_ms))
            if rows:
                time.sleep(a.send_ms / 1000)
                self.db.exec(
                    "SELECT count(*) FROM sendjobs_finalize_batch(%s, %s, 'sent')",
                    ([r[0] for r in rows], [r[1] for r in rows]),
                )
            if len(rows) < a.batch:
                conn = self.db.conn
                if not conn.notifies:
                    select.select([conn], [], [], a.poll)
                conn.poll()
                conn.notifies.clear()
        self.db.close()


def scenario(name, args, rep):
    """Runs one scenario in a fresh database; b's waits in ms and how many never came."""
    dbname = f"neighbours_{name}_{rep}"
    admin = common.Db("postgres")
    admin.exec(f"DROP DATABASE IF EXISTS {dbname}")
    admin.exec(f"CREATE DATABASE {dbname} TEMPLATE {TEMPLATE}")
    admin.close()
    db = common.Db(dbname)
    if name in ("burst", "capped", "ordered"):
        db.exec(
            "SELECT count(sendjobs_enqueue(jsonb_build_object('n', g), 'a'))  FROM generate_series(1, %s) AS g",
            (args.burst,),
        )
        if args.analyze:
            db.exec("ANALYZE send_jobs")
    if name == "capped":
        db.exec("SELECT sendjobs_limit('a', max_in_flight => %s)", (args.cap,))
    stop, waits = threading.Event(), []
    workers = [Worker(dbname, args, stop, waits) for _ in range(args.workers)]
    for w in workers:
        w.start()
    interval = 1.0 / args.rate
    started = time.monotonic()
    enqueued = 0
    while time.monotonic() - started < args.duration:
        if name == "ordered":
            db.exec("SELECT sendjobs_enqueue('{}', 'b', ordering_key => %s)", (f"b-{enqueued}",))
        else:
            db.exec("SELECT sendjobs_enqueue('{}', 'b')")
        enqueued += 1
        time.sleep(max(0.0, started + enqueued * interval - time.monotonic()))
    deadline = time.monotonic() + args.timeout
    while len(waits) < enqueued and time.monotonic() < deadline:
        time.sleep(0.2)
    stop.set()
    for w in workers:
        w.join()
    # The jobs of b still unclaimed count with their age now: a lower bound.
    left = [
        float(ms)
        for (ms,) in db.rows(
            "SELECT extract(epoch FROM clock_timestamp() - created_at) * 1000"
            "  FROM ONLY send_jobs WHERE queue = 'b' AND status = 'pending'"
        )
    ]
    db.close()
    admin = common.Db("postgres")
    admin.exec(f"DROP DATABASE {dbname}")
    admin.close()
    return waits + left, len(left)


COST_SCENARIOS = ("one", "many", "limited", "ordered", "line")
# What each scenario's ratio is taken against.
COST_BASE = {"many": "one", "limited": "many", "line": "ordered"}

COST_SCRIPT = """\\set batch {batch}
SELECT array_agg(id) AS ids, array_agg(claim_generation) AS gens FROM sendjobs_claim(:batch, '1 minute') \\gset
SELECT count(*) FROM sendjobs_finalize_batch(:ids::int8[], :gens::int8[], 'retry', NULL, now());
"""


def cost_database(name, args):
    """Creates database neighbours_cost_<name> with its backlog (max_attempts high: the
    retries never use up a job)."""
    dbname = f"neighbours_cost_{name}"
    admin = common.Db("postgres")
    admin.exec(f"DROP DATABASE IF EXISTS {dbname}")
    admin.exec(f"CREATE DATABASE {dbname} TEMPLATE {TEMPLATE}")
    admin.close()
    db = common.Db(dbname)
    if name in ("ordered", "line"):
        if name == "line":
            db.exec(
                "SELECT count(sendjobs_enqueue(jsonb_build_object(), 'q00', ordering_key => 'line',"
                "                              run_at => now() - interval '1 hour', max_attempts => 1000000))"
                "  FROM generate_series(1, %s)",
                (args.line,),
            )
            db.exec("SELECT count(*) FROM sendjobs_claim(1, '1 hour', 'q00')")
        db.exec(
            "SELECT count(sendjobs_enqueue(jsonb_build_object(), 'q' || lpad((g % 100)::text, 2, '0'),"
            "                              ordering_key => 'key-' || g, max_attempts => 1000000))"
            "  FROM generate_series(1, 10000) AS g"
        )
        db.exec("VACUUM ANALYZE send_jobs")
        db.close()
        return dbname
    big = args.cost_backlog if name == "one" else args.cost_backlog - 9_900
    db.exec(
        "SELECT count(sendjobs_enqueue(jsonb_build_object(), 'a', max_attempts => 1000000))"
        "  FROM generate_series(1, %s)",
        (big,),
    )
    if name != "one":
        db.exec(
            "SELECT count(sendjobs_enqueue(jsonb_build_object(), 'q' || lpad((g % 99)::text, 2, '0'),"
            "                              max_attempts => 1000000))"
            "  FROM generate_series(1, 9900) AS g"
        )
    if name == "limited":
        db.exec(
            "SELECT sendjobs_limit('q' || lpad(g::text, 2, '0'), max_in_flight => 1) FROM generate_series(0, 98) AS g"
        )
        db.exec(
            "SELECT count(*) FROM generate_series(0, 98) AS g,"
            "       LATERAL sendjobs_claim(1, '1 hour', 'q' || lpad(g::text, 2, '0'))"
        )
    db.exec("VACUUM ANALYZE send_jobs")
    db.close()
    return dbname


def costs(args, folder, meta):
    """The claim's latency from any queue in the three databases (module docstring)."""
    batches = [int(b) for b in common.parse_list(args.batches)]
    names = [n.strip() for n in args.cost_scenarios.split(",") if n.strip()]
    for name in names:
        if name not in COST_SCENARIOS or (name in COST_BASE and COST_BASE[name] not in names):
            raise SystemExit(
                f"--cost-scenarios: {name} is not one of {COST_SCENARIOS}, or comes without "
                f"the scenario it is compared with"
            )
    dbs = {name: cost_database(name, args) for name in names}
    scripts = {b: common.write_script(folder, f"claim_{b}.sql", COST_SCRIPT.format(batch=b)) for b in batches}
    results = {(n, b): [] for n in names for b in batches}
    started = time.monotonic()
    for rep in range(args.reps):
        for b in batches:
            for name in names:
                r = common.pgbench(dbs[name], scripts[b], 1, args.cost_seconds, latencies=True, check=True)
                claim_ms = r["statements"][1][0] if len(r["statements"]) > 1 else r["statements"][0][0]
                results[(name, b)].append(claim_ms)
                common.log(f"rep {rep + 1} batch {b} {name}: claim {claim_ms:.3f} ms ({r['tps']:,.0f} cycles/s)")
    meta["elapsed_s"] = time.monotonic() - started
    common.write_meta(folder, meta)
    lines = ["# Noisy neighbours: a claim's cost from any queue", ""] + common.header_lines(meta)
    lines += [
        "",
        f"1 client claiming from any queue, each batch finalized as retries due at once; "
        f"{args.cost_backlog:,} due jobs: in one queue (one), or in 100 queues, 99 of them with 100 "
        f"(many), and with those 99 capped at 1 and full (limited); 100 queues of 100 ordered jobs "
        f"(ordered), and with a line of {args.line:,} under one key ahead of them (line); "
        f"{args.cost_seconds:g} s a run, {args.reps} repetitions, interleaved.",
        "",
        "| batch | scenario | claim latency (ms) | ratio, each repetition |",
        "|---|---|---|---|",
    ]
    for b in batches:
        for name in names:
            values = results[(name, b)]
            base = results[(COST_BASE.get(name, name), b)]
            ratios = "" if name not in COST_BASE else ", ".join(f"{v / a:.2f}" for v, a in zip(values, base))
            lines.append(
                f"| {b} | {name} | {statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f}) | {ratios} |"
            )
    lines.append("")
    return common.write_report(folder, "\n".join(lines) + "\n", "neighbours")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--burst", type=int, default=100_000, help="queue a's pending jobs (default 100000)")
    p.add_argument("--workers", type=int, default=4, help="workers claiming from any queue (default 4)")
    p.add_argument("--batch", type=int, default=10, help="each claim's batch (default 10)")
    p.add_argument("--send-ms", type=float, default=20.0, help="each batch's send, in ms (default 20)")
    p.add_argument("--rate", type=float, default=50.0, help="queue b's enqueues a second (default 50)")
    p.add_argument("--duration", type=float, default=10.0, help="seconds b is enqueued into (default 10)")
    p.add_argument(
        "--timeout", type=float, default=180.0, help="seconds after that to wait for b's last job (default 180)"
    )
    p.add_argument("--poll", type=float, default=1.0, help="a short claim's wait, in seconds (default 1)")
    p.add_argument("--cap", type=int, default=20, help="queue a's max_in_flight in `capped` (default 20)")
    p.add_argument("--reps", type=int, default=3, help="repetitions of every scenario (default 3)")
    p.add_argument("--scenarios", default="alone,burst,capped,ordered", help="which, in this order")
    p.add_argument("--analyze", action="store_true", help="ANALYZE after the burst is enqueued")
    p.add_argument("--costs", action="store_true", help="measure the claim's latency instead (see above)")
    p.add_argument("--cost-backlog", type=int, default=1_000_000, help="--costs: due jobs in all (default 1000000)")
    p.add_argument("--batches", default="1,10,100", help="--costs: the claims' batches (default 1,10,100)")
    p.add_argument("--cost-seconds", type=float, default=5.0, help="--costs: seconds a run (default 5)")
    p.add_argument(
        "--cost-scenarios", default="one,many,limited,ordered,line", help="--costs: which, in this order (default all)"
    )
    p.add_argument("--line", type=int, default=20_000, help="--costs: the line's jobs in `line` (default 20000)")
    common.add_name_argument(p, "neighbours")
    args = p.parse_args()
    names = [n.strip() for n in args.scenarios.split(",") if n.strip()]
    folder = common.results_dir("neighbours", args.name)
    meta = common.run_meta(
        "bash bench/neighbours.sh "
        + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if v not in (None, False))
    )

    admin = common.Db("postgres")
    admin.exec(f"DROP DATABASE IF EXISTS {TEMPLATE}")
    admin.exec(f"CREATE DATABASE {TEMPLATE}")
    admin.close()
    template = common.Db(TEMPLATE)
    template.exec("CREATE EXTENSION sendjobs")
    template.exec("SELECT sendjobs_notify('a', true), sendjobs_notify('b', true)")
    template.close()
    if args.costs:
        return costs(args, folder, meta)

    results = {name: [] for name in names}
    started = time.monotonic()
    for rep in range(args.reps):
        for name in names:
            waits, left = scenario(name, args, rep)
            p50, p99 = percentile(waits, 0.50), percentile(waits, 0.99)
            results[name].append((p50, p99, left, len(waits)))
            common.log(
                f"rep {rep + 1} {name}: b's wait p50 {p50:,.1f} ms, p99 {p99:,.1f} ms"
                f" ({len(waits)} jobs, {left} unclaimed at the end)"
            )
    meta["elapsed_s"] = time.monotonic() - started
    common.write_meta(folder, meta)

    def spread(values, fmt="{:,.1f}"):
        return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})"

    lines = ["# Noisy neighbours: queue b's wait while queue a has a burst", ""] + common.header_lines(meta)
    lines += [
        "",
        f"{args.workers} workers claiming {args.batch} from any queue, {args.send_ms:g} ms a send, "
        f"wake-ups on, a {args.poll:g}-s poll; b enqueued at {args.rate:g}/s for {args.duration:g} s; "
        f"a's burst {args.burst:,} jobs"
        + (", ANALYZE after it" if args.analyze else ", no ANALYZE")
        + f"; capped: max_in_flight {args.cap}. {args.reps} repetitions, scenarios interleaved.",
        "",
        "| scenario | b's p50 (ms) | b's p99 (ms) | p99 / alone's, each repetition | unclaimed at the end |",
        "|---|---|---|---|---|",
    ]
    for name in names:
        rows = results[name]
        ratios = ""
        if "alone" in results and name != "alone":
            ratios = ", ".join(f"{r[1] / a[1]:,.1f}" for r, a in zip(rows, results["alone"]) if a[1])
        lines.append(
            f"| {name} | {spread([r[0] for r in rows])} | {spread([r[1] for r in rows])} | {ratios} "
            f"| {sum(r[2] for r in rows)} of {sum(r[3] for r in rows)} |"
        )
    lines.append("")
    return common.write_report(folder, "\n".join(lines) + "\n", "neighbours")


if __name__ == "__main__":
    raise SystemExit(main())
