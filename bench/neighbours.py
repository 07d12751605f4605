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

A scenario ends when every job of b was claimed (or after --timeout seconds: the jobs
still waiting then count with their age, and the report says how many). The report
gives b's p50 and p99 in ms, median (min-max) over the repetitions, and each
repetition's ratio to `alone` measured beside it.
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
                "  FROM sendjobs_claim(%s, '1 minute')", (a.batch,))
            for _, _, queue, waited_ms in rows:
                if queue == "b":
                    self.waits.append(float(waited_ms))
            if rows:
                time.sleep(a.send_ms / 1000)
                self.db.exec("SELECT count(*) FROM sendjobs_finalize_batch(%s, %s, 'sent')",
                             ([r[0] for r in rows], [r[1] for r in rows]))
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
    if name in ("burst", "capped"):
        db.exec("SELECT count(sendjobs_enqueue(jsonb_build_object('n', g), 'a'))"
                "  FROM generate_series(1, %s) AS g", (args.burst,))
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
    left = [float(ms) for (ms,) in db.rows(
        "SELECT extract(epoch FROM clock_timestamp() - created_at) * 1000"
        "  FROM ONLY send_jobs WHERE queue = 'b' AND status = 'pending'")]
    db.close()
    admin = common.Db("postgres")
    admin.exec(f"DROP DATABASE {dbname}")
    admin.close()
    return waits + left, len(left)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--burst", type=int, default=100_000, help="queue a's pending jobs (default 100000)")
    p.add_argument("--workers", type=int, default=4, help="workers claiming from any queue (default 4)")
    p.add_argument("--batch", type=int, default=10, help="each claim's batch (default 10)")
    p.add_argument("--send-ms", type=float, default=20.0, help="each batch's send, in ms (default 20)")
    p.add_argument("--rate", type=float, default=50.0, help="queue b's enqueues a second (default 50)")
    p.add_argument("--duration", type=float, default=10.0, help="seconds b is enqueued into (default 10)")
    p.add_argument("--timeout", type=float, default=180.0,
                   help="seconds after that to wait for b's last job (default 180)")
    p.add_argument("--poll", type=float, default=1.0, help="a short claim's wait, in seconds (default 1)")
    p.add_argument("--cap", type=int, default=20, help="queue a's max_in_flight in `capped` (default 20)")
    p.add_argument("--reps", type=int, default=3, help="repetitions of every scenario (default 3)")
    p.add_argument("--scenarios", default="alone,burst,capped", help="which, in this order")
    p.add_argument("--analyze", action="store_true", help="ANALYZE after the burst is enqueued")
    common.add_name_argument(p, "neighbours")
    args = p.parse_args()
    names = [n.strip() for n in args.scenarios.split(",") if n.strip()]
    folder = common.results_dir("neighbours", args.name)
    meta = common.run_meta("bash bench/neighbours.sh " + " ".join(
        f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if v not in (None, False)))

    admin = common.Db("postgres")
    admin.exec(f"DROP DATABASE IF EXISTS {TEMPLATE}")
    admin.exec(f"CREATE DATABASE {TEMPLATE}")
    admin.close()
    template = common.Db(TEMPLATE)
    template.exec("CREATE EXTENSION sendjobs")
    template.exec("SELECT sendjobs_notify('a', true), sendjobs_notify('b', true)")
    template.close()

    results = {name: [] for name in names}
    started = time.monotonic()
    for rep in range(args.reps):
        for name in names:
            waits, left = scenario(name, args, rep)
            p50, p99 = percentile(waits, 0.50), percentile(waits, 0.99)
            results[name].append((p50, p99, left, len(waits)))
            common.log(f"rep {rep + 1} {name}: b's wait p50 {p50:,.1f} ms, p99 {p99:,.1f} ms"
                       f" ({len(waits)} jobs, {left} unclaimed at the end)")
    meta["elapsed_s"] = time.monotonic() - started
    common.write_meta(folder, meta)

    def spread(values, fmt="{:,.1f}"):
        return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})"

    lines = ["# Noisy neighbours: queue b's wait while queue a has a burst", ""] + common.header_lines(meta)
    lines += ["", f"{args.workers} workers claiming {args.batch} from any queue, {args.send_ms:g} ms a send, "
              f"wake-ups on, a {args.poll:g}-s poll; b enqueued at {args.rate:g}/s for {args.duration:g} s; "
              f"a's burst {args.burst:,} jobs" + (", ANALYZE after it" if args.analyze else ", no ANALYZE")
              + f"; capped: max_in_flight {args.cap}. {args.reps} repetitions, scenarios interleaved.", "",
              "| scenario | b's p50 (ms) | b's p99 (ms) | p99 / alone's, each repetition | unclaimed at the end |",
              "|---|---|---|---|---|"]
    for name in names:
        rows = results[name]
        ratios = ""
        if "alone" in results and name != "alone":
            ratios = ", ".join(f"{r[1] / a[1]:,.1f}" for r, a in zip(rows, results["alone"]) if a[1])
        lines.append(f"| {name} | {spread([r[0] for r in rows])} | {spread([r[1] for r in rows])} | {ratios} "
                     f"| {sum(r[2] for r in rows)} of {sum(r[3] for r in rows)} |")
    lines.append("")
    return common.write_report(folder, "\n".join(lines) + "\n", "neighbours")


if __name__ == "__main__":
    raise SystemExit(main())
