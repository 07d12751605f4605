"""The soak under a failover manager (--patroni): the kinds of failover a Patroni cluster
meets, made one after another while the workers run, and what each one cost.

Each kind (tests/failover/patroni.py does the fault; Patroni does the rest):
  * switchover -- a planned switchover (patronictl switchover) to the synchronous standby;
  * kill       -- the primary's postmaster killed with SIGKILL mid-load (its backends die);
  * freeze     -- the primary's postmaster and backends stopped with SIGSTOP past the
                  leader's TTL, a new leader elected, then resumed: nothing the old one
                  accepts after it resumes may be acknowledged (the checker's durability
                  checks: an acknowledged call must be on the final leader);
  * etcd       -- one etcd member that is not etcd's leader killed, then etcd's leader,
                  each started again: no failover should follow (two of three members keep
                  the quorum).

Between two faults the cluster must be healthy again (a leader, every replica streaming,
a synchronous standby). For each failover: the time from the fault to a new writable
leader (Patroni's own health check), and from that promotion to each worker's first
answered call (the workers connect with libpq's multi-host string and
target_session_attrs=read-write, as users do).
"""

import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "failover"))
from patroni import PatroniCluster  # noqa: E402  (tests/failover/patroni.py)

KINDS = ("switchover", "kill", "freeze", "etcd")


class Failovers(threading.Thread):
    """Runs `each` failovers of every kind of `kinds`, in turn, `gap` seconds after the
    cluster is healthy again; `done` is set when all ran (or one failed: `error`)."""

    def __init__(self, ctx, cluster, kinds, each, gap):
        super().__init__(name="failovers", daemon=True)
        self.ctx, self.cluster, self.kinds, self.each, self.gap = ctx, cluster, kinds, each, gap
        self.done = threading.Event()
        self.error = None
        self.results = []  # one dict per fault: kind, t0, promoted (None for etcd), old, new

    def run(self):
        try:
            for _ in range(self.each):
                for kind in self.kinds:
                    if self.ctx.stop.is_set():
                        return
                    time.sleep(self.gap)  # the workers at full speed again before the next fault
                    result = getattr(self, kind)()
                    result["kind"] = kind
                    self.cluster.wait_healthy(timeout=120)
                    result["healthy"] = time.time()
                    self.results.append(result)
                    self.ctx.record.count(f"fault_patroni_{kind}")
                    took = (
                        f"{result['old']} -> {result['new']}, new leader after {result['promoted'] - result['t0']:.1f} s"
                        if result.get("promoted")
                        else f"no failover, {result['old']} kept its key"
                    )
                    print(f"   {kind}: {took}", flush=True)
        except Exception as e:  # reported by the soak, which then fails
            self.error = f"{type(e).__name__}: {e}"
        finally:
            self.done.set()

    def switchover(self):
        return self.cluster.switchover()

    def kill(self):
        return self.cluster.kill_leader()

    def freeze(self):
        return self.cluster.freeze_leader()

    def etcd(self):
        c = self.cluster
        t0 = time.time()
        leader = c.leader()
        for pick in ("follower", "leader"):
            etcd_leader = c.etcd_leader()
            i = etcd_leader if pick == "leader" else next(i for i in range(len(c.etcd)) if i != etcd_leader)
            c.stop_etcd_member(i)
            time.sleep(c.timings["ttl"])  # a TTL without that member: the leader key must hold
            c.start_etcd_member(i)
        after = c.leader()
        return {"old": leader, "new": after, "t0": t0, "promoted": None if after == leader else time.time()}


def after_promotion(results, calls):
    """For each failover with a promotion: (result, the seconds from it to the first call
    that came back, to the first that wrote: a finalize applied or a claim that took a
    job). A call that takes no row commits nothing, so it answers without waiting for a
    synchronous standby; a write waits until Patroni has one again."""
    out = []
    for r in results:
        if not r.get("promoted"):
            continue
        answered = [c for c in calls if c.get("known") and c.get("t1", 0) >= r["promoted"]]
        wrote = [
            c
            for c in answered
            if (c["kind"] == "finalize" and c.get("result") == "applied")
            or (c["kind"] == "claim" and isinstance(c.get("result"), list) and c["result"])
        ]
        firsts = [min((c["t1"] for c in cs), default=None) for cs in (answered, wrote)]
        out.append((r, *(None if t is None else t - r["promoted"] for t in firsts)))
    return out


def summary(failovers, calls):
    """The summary's lines: per kind, how many, and (median and worst over its failovers)
    the time to a new leader, then from it to the workers' first answer and first write."""
    lines = []
    delays = after_promotion(failovers.results, calls)

    def spread(xs):
        return f"{statistics.median(xs):.2f} s (worst {max(xs):.2f})"

    for kind in failovers.kinds:
        rs = [r for r in failovers.results if r["kind"] == kind]
        promoted = [r["promoted"] - r["t0"] for r in rs if r.get("promoted")]
        answered = [a for r, a, _ in delays if r["kind"] == kind and a is not None]
        wrote = [w for r, _, w in delays if r["kind"] == kind and w is not None]
        text = f"{len(rs)}"
        if promoted:
            text += f"; new leader after {spread(promoted)}"
        elif rs:
            text += "; no failover (the leader kept its key)"
        if answered:
            text += f"; then a worker's first answer after {spread(answered)}"
        if wrote:
            text += f", its first write after {spread(wrote)}"
        healthy = [r["healthy"] - (r.get("promoted") or r["t0"]) for r in rs]
        if healthy:
            text += f"; every replica streaming, one synchronous, after {spread(healthy)}"
        lines.append((f"  {kind}", text))
    return lines


def make_cluster(workdir, args, settings):
    """The soak's Patroni cluster, not started yet: synchronous unless --async-replication."""
    return PatroniCluster(
        workdir=workdir, synchronous_mode=not args.async_replication, pg_settings=settings, dbname="probe"
    )
