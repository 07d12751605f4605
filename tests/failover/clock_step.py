"""What leases and rates do when a failover moves the primary's clock (decision 0026).

For each offset (+30 s and -30 s by default): a three-node Patroni cluster
(tests/failover/patroni.py) whose synchronous standby's server runs with its clock off by
the offset (libfaketime). On the primary, with the right clock, a worker claims jobs with
a 10-second lease and dies (never finalizes); a second later Patroni switches over to the
standby. Then, on the new primary, a worker claims every 0.1 s and the test records, on
its own (right) clock:

  * when each dead worker's job was claimed again: before its lease really ended (sent
    again early) or after it (held past its lease; past twice its lease?);
  * the jobs a second of a queue limited to 20 a second (burst 20);
  * what sendjobs_stats says of the dead jobs just after the switchover (in flight or
    expired).

It asserts what the contract promises (docs/contract.md, "Time"): no generation is
handed out twice, a lease ends at most |offset| early or late, once, and the limited
queue goes on at its rate (at least half of it, a second at a time).

    python3 tests/failover/clock_step.py [--offsets 30,-30] [--jobs 20]
"""

import argparse
import collections
import os
import sys
import threading
import time

try:
    import psycopg2
except ImportError:  # the pyenv python3 of a developer's shell: Debian's has psycopg2
    if __name__ == "__main__" and sys.executable != "/usr/bin/python3":
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    raise

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from patroni import PatroniCluster  # noqa: E402

LEASE = 10.0
RATE = 20  # jobs a second of the limited queue
WATCH = 60.0  # seconds watched after the switchover


def connect(dsn):
    conn = psycopg2.connect(dsn, connect_timeout=2)
    conn.autocommit = True
    return conn


def one_offset(offset, jobs):
    with PatroniCluster(dbname="clock") as pc:
        primary = pc.leader()
        standby = next(m["name"] for m in pc.members() if m["name"] != primary)
        shown = pc.start_node_with_clock_offset(standby, offset)
        pc.make_sync_standby(standby)
        db = connect(pc.dsn())
        cur = db.cursor()
        cur.execute("SELECT sendjobs_limit('limited', rate => %s, burst => %s)", (RATE, RATE))
        cur.execute("SELECT sendjobs_enqueue_many(array_fill('{}'::jsonb, ARRAY[%s]), '{work}')", (jobs,))
        # Due long before either clock's now, so that only the rate holds them back.
        cur.execute(
            "SELECT sendjobs_enqueue_many(array_fill('{}'::jsonb, ARRAY[5000]), '{limited}',"
            " ARRAY[now() - interval '1 hour'])"
        )
        # The dead worker: its claims' leases run on the old primary's (right) clock.
        cur.execute("SELECT id, claim_generation FROM sendjobs_claim(%s, %s, 'work')", (jobs, f"{LEASE} s"))
        dead = {jid: gen for jid, gen in cur.fetchall()}
        t_claim = time.time()
        pc.wait_replayed()
        db.close()

        stop = threading.Event()
        reclaimed, generations, per_second, errors = {}, collections.defaultdict(list), collections.Counter(), []

        def claimer(queue, lease):
            conn = None
            while not stop.is_set():
                try:
                    conn = conn or connect(pc.dsn())
                    with conn.cursor() as c:
                        c.execute("SELECT id, claim_generation FROM sendjobs_claim(10, %s, %s)", (f"{lease} s", queue))
                        rows = c.fetchall()
                        now = time.time()
                        for jid, gen in rows:
                            generations[jid].append(gen)
                            if queue == "work":
                                reclaimed.setdefault(jid, now)
                            c.execute("SELECT sendjobs_finalize(%s, %s, 'sent')", (jid, gen))
                        if queue == "limited":
                            per_second[int(now)] += len(rows)
                except psycopg2.Error as e:
                    errors.append(str(e).splitlines()[0])
                    conn = None
                time.sleep(0.1)

        threads = [threading.Thread(target=claimer, args=a, daemon=True) for a in (("work", 60), ("limited", 60))]
        for t in threads:
            t.start()
        time.sleep(max(0.0, t_claim + 1.0 - time.time()))
        switch = pc.switchover(candidate=standby)
        stats = pc.sql(switch["new"], "SELECT in_flight, expired FROM sendjobs_stats() WHERE queue = 'work'")
        deadline = switch["promoted"] + WATCH
        while time.time() < deadline and len(reclaimed) < len(dead):
            time.sleep(0.1)
        time.sleep(max(0.0, min(deadline, switch["promoted"] + 20) - time.time()))  # the rate, 20 s
        stop.set()
        for t in threads:
            t.join(10)

    held = sorted(reclaimed[j] - t_claim for j in dead if j in reclaimed)
    after = [per_second[s] for s in range(int(switch["promoted"]) + 1, int(switch["promoted"]) + 20)]
    before = [per_second[s] for s in range(int(t_claim), int(switch["t0"]))]
    reused = [j for j, gens in generations.items() if j in dead and dead[j] in gens]
    return {
        "offset": offset,
        "shown": shown,
        "switchover": switch["promoted"] - switch["t0"],
        "stats": stats[0] if stats else None,
        "dead": len(dead),
        "reclaimed": len(held),
        "held": held,
        "early": [LEASE - h for h in held if h < LEASE],
        "late": [h - LEASE for h in held if h > LEASE],
        "rate_before": before,
        "rate_after": after,
        "reused": reused,
        "errors": collections.Counter(errors).most_common(3),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--offsets", default="30,-30", help="seconds the new primary's clock is off, each a run")
    p.add_argument("--jobs", type=int, default=20, help="jobs the dead worker holds at the switchover")
    args = p.parse_args()
    failures = []
    for offset in (int(x) for x in args.offsets.split(",")):
        r = one_offset(offset, args.jobs)
        held = r["held"] or [float("nan")]
        print(
            f"clock {offset:+d} s (now() on the new primary off by {r['shown']:+.2f} s); switchover "
            f"{r['switchover']:.1f} s; sendjobs_stats just after: in_flight, expired = {r['stats']}\n"
            f"  the dead worker's {r['dead']} jobs (lease {LEASE:.0f} s) claimed again: {r['reclaimed']}, "
            f"{held[0]:.1f}-{held[-1]:.1f} s after their claim; early {len(r['early'])} (by up to "
            f"{max(r['early'], default=0):.1f} s), late {len(r['late'])} (by up to {max(r['late'], default=0):.1f} s), "
            f"held past twice the lease {sum(1 for h in held if h > 2 * LEASE)}\n"
            f"  the queue limited to {RATE}/s: {r['rate_after']} jobs a second after the switchover "
            f"(before: {r['rate_before']}); generations handed out twice: {len(r['reused'])}"
            + (f"\n  errors seen: {r['errors']}" if r["errors"] else "")
        )
        if r["reused"]:
            failures.append(f"{offset:+d}: generations handed out twice: {r['reused']}")
        if r["reclaimed"] < r["dead"]:
            failures.append(f"{offset:+d}: {r['dead'] - r['reclaimed']} jobs never claimed again")
        if sum(r["rate_after"]) < RATE * len(r["rate_after"]) / 2:
            failures.append(f"{offset:+d}: the limited queue slowed down after the switchover: {r['rate_after']}")
        # No faster than the rate either: a second's claims at most its rate and a burst (the
        # test's seconds and the claims' instants differ by the claim's own time).
        if max(r["rate_after"], default=0) > 2 * RATE:
            failures.append(f"{offset:+d}: the limited queue went faster than its rate: {r['rate_after']}")
        slack = 2.0  # the claimer's 0.1 s poll, the switchover's own seconds
        if held and (held[0] < LEASE - abs(offset) - slack or held[-1] > LEASE + abs(offset) + slack):
            failures.append(f"{offset:+d}: a lease ended more than |offset| early or late: {held}")
    if failures:
        print("clock_step: FAILED\n  " + "\n  ".join(failures))
        sys.exit(1)
    print("clock_step: every lease ended within |offset| of its time; the rate went on; no generation twice")


if __name__ == "__main__":
    main()
