"""The invariant checker: one function per invariant of docs/contract.md (durability,
14, first; then 1 to 8; then those of the lifecycle functions of 0.2.0: cancel 10,
redrive 11, purge 12, stats 13; then the relay's 15, flow control's 16 to 19 and the fair share's 21), each comparing the three records of a run -- the
partner's record of every send, the harness's record of every call and the database with
its witness rows (how they are kept, and why they stay true across crashes and failovers:
tests/soak/records.py) -- and adding what it finds to the run's `Violations` under a
fixed check name. `check_everything` runs them all in order; the demo and the soak call
it once at the end of a run, the self-test (tests/soak/checker_selftest.py) once per
mutation of a clean run's records.

A lease end is always the one the database recorded (at claim time, and at each applied
heartbeat), never a worker's idea of it; an answer counts as evidence only when it came
back to its worker. The finished jobs seeded before the run (for the purge) are left
out of every check but the purge's.
"""

import bisect
import collections
import math
import datetime as dt

from .records import (
    BUSINESS_OF,
    FINALIZED,
    GAVE_UP,
    GAVE_UP_PREFIX,
    LIMITED_QUEUE,
    LIMITS,
    QUEUES,
    REDRIVE_STAMP,
    STATS_COLUMNS,
    TERMINAL,
    TERMINAL_BUSINESS,
    fmt_ts,
    ts,
)

WITNESSED = ("claim", "heartbeat", "finalize", "cancel")  # the calls that write a witness row


def gave_up(job):
    """The claim finished this job as failed, its last lease having expired (invariant 8)."""
    return job["status"] == "failed" and (job.get("last_error") or "").startswith(GAVE_UP_PREFIX)


def business_expected(chain):
    """What a transaction's jobs -- the original, then each redrive of it, in id order --
    must have left in its business row: (history moves, final value). A finished job
    stamps its outcome, a redrive stamps pending again, a cancel stamps nothing."""
    value, moves = "pending", []
    for j, nxt in zip(chain, chain[1:] + [None]):
        stamp = BUSINESS_OF.get(j["status"])
        if stamp:
            moves.append((value, stamp))
            value = stamp
        if nxt is not None and nxt["redrive_of"] == j["id"]:
            moves.append((value, REDRIVE_STAMP))
            value = REDRIVE_STAMP
    return moves, value


class Evidence:
    """A run's three records, indexed the ways the checks look them up."""

    def __init__(self, ctx, db, partner_requests):
        self.ctx = ctx
        self.calls = ctx.record.calls
        self.db = db
        seeded = ctx.seeded_old | ctx.seeded_recent
        self.jobs = {jid: j for jid, j in db["jobs"].items() if jid not in seeded}
        self.events = {jid: e for jid, e in db["events"].items() if jid not in seeded}
        self.partner_requests = partner_requests
        self.sends = collections.defaultdict(list)
        for r in partner_requests:
            self.sends[r["job"]].append(r)
        # each transaction's jobs: the original, then its redrives (ids grow)
        self.chains = collections.defaultdict(list)
        for jid in sorted(self.jobs):
            if self.jobs[jid]["txn"] is not None:
                self.chains[self.jobs[jid]["txn"]].append(self.jobs[jid])
        # witness history per job: claims per job, heartbeats and finalizes per claim
        self.claims = collections.defaultdict(list)
        for c in db["claims"]:
            self.claims[c["job"]].append(c)
        self.hbs = collections.defaultdict(list)
        for h in db["heartbeats"]:
            self.hbs[(h["job"], h["gen"])].append(h)
        self.fins = collections.defaultdict(list)
        for f in db["finalizes"]:
            self.fins[(f["job"], f["gen"])].append(f)
        # A claim's applied finalizes after its first, with the first's outcome, are
        # repeats of it (made again after an answer was lost: decision 0012), not
        # finalizes of their own; witness order is call order within a claim.
        for fs in self.fins.values():
            first = next((f for f in fs if f["result"] == "applied"), None)
            for f in fs:
                if (
                    f is not first
                    and first is not None
                    and f["result"] == "applied"
                    and f["outcome"] == first["outcome"]
                ):
                    f["repeat_of"] = first
        # every finalize and heartbeat of a job, whatever the generation
        self.fenced_calls = collections.defaultdict(list)
        for x in db["finalizes"] + db["heartbeats"]:
            self.fenced_calls[x["job"]].append(x)
        self.claim_of = {(c["job"], c["gen"]): c for c in db["claims"]}
        self.next_claim = {}
        for jid, cs in self.claims.items():
            for c in cs:
                g = c["gen"]
                if (jid, g + 1) in self.claim_of:
                    self.next_claim[(jid, g)] = self.claim_of[(jid, g + 1)]
        # each job -> when the first answer naming it came back (its enqueue, or the
        # redrive that made it); and whether a producer enqueued while the run went on (the
        # demo enqueues every job before its workers start)
        self.made_by = {}
        for c in self.calls:
            if c["kind"] in ("enqueue", "redrive") and c["known"] and isinstance(c.get("result"), dict):
                for new_id in c["result"].values():
                    self.made_by[new_id] = min(self.made_by.get(new_id, c["t1"]), c["t1"])
        self.enqueued_by_producer = any(c["kind"] == "enqueue" for c in self.calls)
        # the applied finalizes that made each job terminal, in witness order
        self.terminal_finalizes = collections.defaultdict(list)
        for f in db["finalizes"]:
            if f["result"] == "applied" and f["status"] in FINALIZED and "repeat_of" not in f:
                self.terminal_finalizes[f["job"]].append(f)

    def claims_in_order(self, job_id):
        """The witnessed claims of a job, by generation."""
        return sorted(self.claims.get(job_id, []), key=lambda c: (c["gen"], c["claimed_at"]))

    def poison_jobs(self):
        """The ids of the poison jobs: planned as poison, or redriving a poison job."""
        keys = {k for k, p in self.ctx.plans.items() if p.get("poison")}
        poison = set()
        for jid in sorted(self.jobs):
            j = self.jobs[jid]
            if j["key"] in keys or j["redrive_of"] in poison:
                poison.add(jid)
        return poison

    def released(self, job_id, gen):
        """The applied finalize that released claim (job, gen), if any."""
        ap = [f for f in self.fins.get((job_id, gen), []) if f["result"] == "applied"]
        return ap[0] if ap else None

    def held_until(self, job_id, gen, claim):
        """When the claim stopped holding the job: the retry time if its holder released it
        with an applied retry; else its lease end (heartbeats included) as the DB recorded it."""
        f = self.released(job_id, gen)
        if f and f["outcome"] == "retry" and f["status"] == "pending":
            return "retry", ts(f["next_at"])
        end = ts(claim["lease_end"]) if claim and claim["lease_end"] else 0.0
        for h in self.hbs.get((job_id, gen), []):
            if h["result"] == "applied" and h["lease_end"] is not None:
                end = max(end, ts(h["lease_end"]))
        return "expiry", end


# ----------------------------------------------------------------------------------
# 14. durability: every answer that came back is in the database
# ----------------------------------------------------------------------------------


def check_durability(ev, V, stats):
    """Every claim, heartbeat, finalize and cancel answer that came back to its caller is in
    the database (its witness row survived crashes and failover, with the same answer); no
    witness row without a call; a finalize that returned `applied` left its job terminal
    with its event. Counts the calls, known and unknown, in `stats`. (After a failover the
    soak also audits the old primary: tests/soak/soak.py, audit_old_primary.)"""
    db = ev.db
    w_claims_by_call = collections.defaultdict(list)
    for c in db["claims"]:
        w_claims_by_call[c["call"]].append(c)
    witness_by_call = {
        kind: {w["call"]: w for w in db[table]}
        for kind, table in (("heartbeat", "heartbeats"), ("finalize", "finalizes"), ("cancel", "cancels"))
    }
    calls = {c["id"]: c for c in ev.calls}
    stats.update(
        {
            f"{k}_{w}": 0
            for k in WITNESSED
            for w in ("calls", "known", "unknown", "unknown_committed", "unknown_not_committed")
        }
    )
    stats["finalize_stale"] = stats["finalize_applied"] = stats["claims_invisible"] = 0
    stats["finalize_batched"] = sum(1 for c in ev.calls if c["kind"] == "finalize" and c.get("batch"))
    for call in ev.calls:
        kind = call["kind"]
        if kind not in WITNESSED:
            continue  # redrive and purge: their effects are checked below (check_redrives, check_purge)
        stats[f"{kind}_calls"] += 1
        if kind == "claim":
            got = w_claims_by_call.get(call["id"], [])
            if call["known"] and call["result"] != "error":
                stats["claim_known"] += 1
                seen = sorted((j, g, le) for j, g, le in call["result"])
                have = sorted((c["job"], c["gen"], c["lease_end"]) for c in got)
                if seen != have:
                    V.add(
                        "a claim that came back is not in the database (lost commit)",
                        f"call {call['id']} ({call['worker']}): returned {[(j, g) for j, g, _ in seen]}, "
                        f"database has {[(j, g) for j, g, _ in have]}",
                    )
            elif not call["known"]:
                stats["claim_unknown"] += 1
                stats["claim_unknown_committed" if got else "claim_unknown_not_committed"] += 1
                stats["claims_invisible"] += len(got)
        else:
            w = witness_by_call[kind].get(call["id"])
            if call["known"] and call["result"] != "error":
                stats[f"{kind}_known"] += 1
                if kind == "finalize":
                    stats[f"finalize_{call['result']}"] += 1
                if w is None or w["result"] != call["result"]:
                    gen = f" gen {call['gen']}" if "gen" in call else ""  # a cancel names no claim
                    V.add(
                        f"a {kind} answer that came back is not in the database (lost commit)",
                        f"call {call['id']} job {call['job']}{gen}: "
                        f"returned {call['result']!r}, database has {w and w['result']!r}",
                    )
            elif not call["known"]:
                stats[f"{kind}_unknown"] += 1
                stats[f"{kind}_unknown_committed" if w else f"{kind}_unknown_not_committed"] += 1
    for table, by_call in (
        ("claims", w_claims_by_call),
        ("heartbeats", witness_by_call["heartbeat"]),
        ("finalizes", witness_by_call["finalize"]),
        ("cancels", witness_by_call["cancel"]),
    ):
        for cid in by_call:
            if cid not in calls:
                V.add("a witness row for a call nobody made", f"harness.{table} call {cid}")

    # every applied terminal finalize that came back is reflected in its job and its event
    jobs, events = ev.jobs, ev.events
    for call in ev.calls:
        if call["kind"] == "finalize" and call["known"] and call["result"] == "applied":
            post = call.get("post")
            if post and post[0] in FINALIZED:
                j = jobs.get(call["job"])
                evs = events.get(call["job"], [])
                if (
                    not j
                    or j["status"] != post[0]
                    or j["gen"] != call["gen"]
                    or [e["gen"] for e in evs] != [call["gen"]]
                ):
                    V.add(
                        "a finalize that returned applied is lost",
                        f"job {call['job']} gen {call['gen']} -> {post[0]}: now "
                        f"{j and (j['status'], j['gen'])}, events {[(e['kind'], e['gen']) for e in evs]}",
                    )


# ----------------------------------------------------------------------------------
# 1. one live claim
# ----------------------------------------------------------------------------------


def check_one_live_claim(ev, V, stats):
    """Consecutive claims of a job: the next one only at/after the previous one's lease end
    (heartbeats included) or its applied retry's next_attempt_at; never after a terminal
    finalize; never before the job was due; claimed_at grows with the generation. Counts
    the re-claims (after an expiry, after a retry) and the longest wait past an expired
    lease in `stats`."""
    stats["reclaims_after_expiry"] = stats["reclaims_after_retry"] = 0
    reclaim_delays = []
    due = {p["key"]: p["run_at"] for p in ev.ctx.plans.values()}
    for jid, j in ev.jobs.items():
        cs = ev.claims_in_order(jid)
        run_at = due.get(j["key"])
        if cs and run_at is not None and cs[0]["claimed_at"] < run_at:
            V.add(
                "claimed before it was due", f"job {jid}: claimed {fmt_ts(cs[0]['claimed_at'])}, due {fmt_ts(run_at)}"
            )
        for prev, nxt in zip(cs, cs[1:]):
            if nxt["claimed_at"] < prev["claimed_at"]:
                V.add(
                    "generation grew while claimed_at went back",
                    f"job {jid}: gen {prev['gen']} at {fmt_ts(prev['claimed_at'])}, "
                    f"gen {nxt['gen']} at {fmt_ts(nxt['claimed_at'])}",
                )
            f = ev.released(jid, prev["gen"])
            if f and f["status"] in FINALIZED:
                V.add("claimed again after a terminal finalize", f"job {jid}: gen {prev['gen']} -> {nxt['gen']}")
                continue
            how, until = ev.held_until(jid, prev["gen"], prev)
            if ts(nxt["claimed_at"]) < until and how == "retry":
                V.add(
                    "claimed before it was due",
                    f"job {jid}: gen {prev['gen']} released by a retry due {fmt_ts(until)}, "
                    f"gen {nxt['gen']} ({nxt['worker']}) claimed at {fmt_ts(nxt['claimed_at'])}",
                )
            elif ts(nxt["claimed_at"]) < until:
                V.add(
                    "two claims with overlapping unexpired leases",
                    f"job {jid}: gen {prev['gen']} ({prev['worker']}) held until {fmt_ts(until)} ({how}), "
                    f"gen {nxt['gen']} ({nxt['worker']}) claimed at {fmt_ts(nxt['claimed_at'])}",
                )
            if how == "expiry":
                stats["reclaims_after_expiry"] += 1
                reclaim_delays.append(ts(nxt["claimed_at"]) - until)
            else:
                stats["reclaims_after_retry"] += 1
    stats["max_reclaim_delay"] = max(reclaim_delays) if reclaim_delays else 0.0


# ----------------------------------------------------------------------------------
# 2. generations
# ----------------------------------------------------------------------------------


TIMELINE_STEP = 1 << 32  # a claim on timeline T hands out at least (T - 1) * 2^32


def generations_in_order(gens):
    """Each claim raises the generation once: by one, or to a later timeline's floor (a
    multiple of 2^32 above the last), as after a failover (invariant 2)."""
    last = 0
    for gen in gens:
        if gen != last + 1 and not (gen > last and gen % TIMELINE_STEP == 0):
            return False
        last = gen
    return True


def check_generations(ev, V, stats):
    """Every claim raises the generation once (invariant 2): the witnessed generations of
    each job are 1, 2, 3, ..., but for a step to a later timeline's floor; the final
    claim_generation is the last claim's, and attempts the number of claims."""
    stats["claims"] = len(ev.db["claims"])
    for jid, j in ev.jobs.items():
        cs = ev.claims_in_order(jid)
        gens = [c["gen"] for c in cs]
        if not generations_in_order(gens):
            V.add("claim generations not raised once per claim", f"job {jid}: {gens[:12]}")
        if j["gen"] != (gens[-1] if gens else 0) or j["attempts"] != len(cs):
            V.add(
                "final claim_generation/attempts differ from the number of claims",
                f"job {jid}: gen {j['gen']}, attempts {j['attempts']}, claims witnessed {len(cs)}",
            )
    # A generation held by two claims: the second claim's call came back with a (job,
    # generation) an earlier call had come back with, whether or not the database still
    # has the first (a claim lost in a failover, then handed out again: decision 0025).
    holders = collections.defaultdict(list)
    for call in ev.calls:
        if call["kind"] == "claim" and call["known"] and call["result"] != "error":
            for jid, gen, _ in call["result"]:
                holders[(jid, gen)].append(call["id"])
    for (jid, gen), calls in sorted(holders.items()):
        if len(calls) > 1:
            V.add("a generation handed out to two claims", f"job {jid} gen {gen}: claim calls {calls}")


# ----------------------------------------------------------------------------------
# 3. fencing
# ----------------------------------------------------------------------------------


def check_fencing(ev, V):
    """A finalize or heartbeat applies only with the current generation of an in_flight
    row: an applied one left the row at its own generation (and in_flight, for a
    heartbeat) with no newer claim before it, and left the status its outcome asks for;
    one applied finalize per claim, and any other applied answer for it a repeat (the
    same outcome) that found the row as the first left it; a `stale` answer only when
    the row was no longer in_flight at that generation, and never for a repeat made
    after the first call committed while the row was still as it left it (decision
    0012); no answer but applied or stale."""
    for f in ev.db["finalizes"]:
        where = f"job {f['job']} gen {f['gen']} {f['outcome']} (call {f['call']})"
        if f["result"] == "applied":
            if f["post_gen"] != f["gen"]:
                V.add("finalize applied with an old generation", f"{where}: the row is at gen {f['post_gen']}")
            nc = ev.next_claim.get((f["job"], f["gen"]))
            # The next claim's commit, not its instant: a claim reads its instant when the
            # call starts, and may then find the job a finalize freed after that instant
            # (the long Patroni soak: claimed 7 µs before the retry that freed the job).
            if nc is not None and ts(nc.get("committed_at") or nc["claimed_at"]) <= ts(f["at"]):
                V.add(
                    "finalize applied after its claim was superseded",
                    f"{where}: applied at {fmt_ts(f['at'])}, gen {nc['gen']} claimed at {fmt_ts(nc['claimed_at'])}",
                )
            expected = {
                "sent": ("sent",),
                "failed": ("failed",),
                "retry": ("failed",) if (f["attempts"] or 0) >= (f["max_attempts"] or 0) else ("pending",),
            }
            if f["status"] not in expected.get(f["outcome"], ()):
                V.add(
                    "finalize applied but the row says otherwise",
                    f"{where}: status {f['status']}, attempts {f['attempts']}/{f['max_attempts']}",
                )
            firsts = [x for x in ev.fins[(f["job"], f["gen"])] if x["result"] == "applied" and "repeat_of" not in x]
            if len(firsts) > 1 and f is firsts[-1]:
                V.add("two applied finalizes for one claim", where)
            first = f.get("repeat_of")
            if first is not None and (f["status"], f["post_gen"], f["attempts"]) != (
                first["status"],
                first["post_gen"],
                first["attempts"],
            ):
                V.add(
                    "a repeated finalize changed the job",
                    f"{where}: {first['status']}, attempts {first['attempts']} after the first call, "
                    f"{f['status']}, attempts {f['attempts']} after the repeat",
                )
        elif f["result"] == "stale":
            if f["status"] == "in_flight" and f["post_gen"] == f["gen"]:
                V.add("finalize refused while holding the job", f"{where}: row still in_flight at that generation")
            first = next(
                (
                    x
                    for x in ev.fins[(f["job"], f["gen"])]
                    if x["result"] == "applied" and x["outcome"] == f["outcome"] and "repeat_of" not in x
                ),
                None,
            )
            if (
                first is not None
                and ts(first["at"]) < ts(f["txn_start"])
                and (f["status"], f["post_gen"]) == (first["status"], first["post_gen"])
            ):
                V.add(
                    "a repeated finalize answered stale",
                    f"{where}: the claim's {first['outcome']} applied at {fmt_ts(first['at'])} "
                    f"(call {first['call']}), the row still {first['status']} at that generation",
                )
        else:
            V.add("finalize returned an unknown value", f"{where}: {f['result']!r}")
    for h in ev.db["heartbeats"]:
        where = f"job {h['job']} gen {h['gen']} (call {h['call']})"
        if h["result"] == "applied":
            if h["post_gen"] != h["gen"] or h["status"] != "in_flight":
                V.add(
                    "heartbeat applied with an old generation",
                    f"{where}: the row is {h['status']} at gen {h['post_gen']}",
                )
        elif h["result"] == "stale":
            if h["status"] == "in_flight" and h["post_gen"] == h["gen"] and not expired_in_capped_queue(ev, h):
                V.add("heartbeat refused while holding the job", f"{where}: row still in_flight at that generation")
        else:
            V.add("heartbeat returned an unknown value", f"{where}: {h['result']!r}")


def expired_in_capped_queue(ev, h):
    """A heartbeat of the capped partner's job whose lease had ended when its witness was
    written (the lease as the claim and the applied heartbeats before this one left it):
    refused by design, since the cap's count left the job out (invariant 17)."""
    j = ev.jobs.get(h["job"])
    claim = ev.claim_of.get((h["job"], h["gen"]))
    if j is None or j["queue"] != LIMITED_QUEUE or claim is None or not claim["lease_end"]:
        return False
    end = ts(claim["lease_end"])
    for x in ev.hbs.get((h["job"], h["gen"]), []):
        if x is not h and x["result"] == "applied" and x["lease_end"] is not None and ts(x["at"]) < ts(h["at"]):
            end = max(end, ts(x["lease_end"]))
    return ts(h["at"]) >= end


# ----------------------------------------------------------------------------------
# 4. one event
# ----------------------------------------------------------------------------------


def check_one_event(ev, V):
    """A terminal job never changes again: it has exactly one event, of its kind, its final
    generation and its business row, dated at the job's finished_at (what the purge goes
    by); a sent or failed job was finished by the one applied terminal finalize of its
    last claim, unless it gave up (check_give_up) -- a cancelled one by its cancel
    (check_cancels); a job that is not terminal has no event and no applied terminal
    finalize."""
    for jid, j in ev.jobs.items():
        evs = ev.events.get(jid, [])
        tf = ev.terminal_finalizes.get(jid, [])
        if len(tf) > 1:
            V.add(
                "job finalized to a terminal state twice",
                f"job {jid}: {[(f['gen'], f['outcome'], f['status']) for f in tf]}",
            )
        if j["status"] in TERMINAL:
            if len(evs) != 1:
                V.add("terminal job without exactly one event", f"job {jid} ({j['status']}): {len(evs)} events")
            else:
                e = evs[0]
                if e["kind"] != j["status"]:
                    V.add("event kind differs from job status", f"job {jid}: status {j['status']}, event {e['kind']}")
                if e["gen"] != j["gen"]:
                    V.add(
                        "event generation differs from the final claim_generation",
                        f"job {jid}: job gen {j['gen']}, event gen {e['gen']}",
                    )
                if e["txn"] != j["txn"]:
                    V.add("event transaction_id differs", f"job {jid}: {j['txn']} vs {e['txn']}")
                if e["at"] != j["finished_at"]:
                    V.add(
                        "event time differs from the job's finished_at",
                        f"job {jid}: event {fmt_ts(e['at'])}, finished_at {fmt_ts(j['finished_at'])}",
                    )
            if (
                j["status"] in FINALIZED
                and not gave_up(j)
                and (not tf or tf[-1]["gen"] != j["gen"] or tf[-1]["status"] != j["status"])
            ):
                V.add(
                    "terminal job not finished by an applied finalize of its last claim",
                    f"job {jid} ({j['status']}, gen {j['gen']}): applied terminal finalizes "
                    f"{[(f['gen'], f['status']) for f in tf]}",
                )
        else:
            if evs:
                V.add("event for a job that is not terminal", f"job {jid} ({j['status']}): {len(evs)} events")
            if tf:
                V.add(
                    "terminal finalize applied but the job is not terminal",
                    f"job {jid} is {j['status']}: {[(f['gen'], f['status']) for f in tf]}",
                )


# ----------------------------------------------------------------------------------
# 5. guard
# ----------------------------------------------------------------------------------


def check_guard(ev, V):
    """A guarded business row never moves between terminal values: it matches its jobs
    (the original, then each redrive), its history is exactly their stamps -- pending ->
    final for each finished job (a job that gave up included), final -> pending for each
    redrive, nothing for a cancel -- and no history row moves between success and
    failed. (That every reconciler flip was refused is checked as it happens: the
    Reconciler in tests/soak/workers.py.)"""
    business, history = ev.db["business"], ev.db["history"]
    for txn, chain in ev.chains.items():
        if chain[-1]["status"] not in TERMINAL:
            continue
        moves, value = business_expected(chain)
        if business.get(txn) != value:
            V.add(
                "business row does not match its job",
                f"{txn}: jobs {[(j['id'], j['status']) for j in chain]}, row {business.get(txn)}, expected {value}",
            )
        h = history.get(txn, [])
        if h != moves:
            V.add("business row history is not its jobs' stamps", f"{txn}: {h}, expected {moves}")
    for txn, moves in history.items():
        for old, new in moves:
            if old in TERMINAL_BUSINESS and new in TERMINAL_BUSINESS and old != new:
                V.add("history shows a move between success and failed", f"{txn}: {old} -> {new}")


# ----------------------------------------------------------------------------------
# 6. re-sends
# ----------------------------------------------------------------------------------


def check_resends(ev, V, stats):
    """The partner's record: each re-send (and its claim) came at/after the previous
    sender's lease end or retry time; no two sends under one generation; no send for a
    claim the database does not have, or before its claim; no older generation arriving
    while its lease still ran; a `sent` job had a 200 under its final claim. Counts the
    re-sends, duplicate deliveries, zombie sends and sends after their own lease."""
    jobs, claim_of, sends = ev.jobs, ev.claim_of, ev.sends
    stats.update(
        resent_jobs=0,
        resends=0,
        resends_after_retry=0,
        resends_after_expiry=0,
        duplicate_deliveries=0,
        sends_after_own_lease=0,
    )
    for jid, rs in sends.items():
        # Generations arrive in increasing order, unless a worker sends after its own lease
        # ended (a zombie: the extension cannot stop the send, only fence its finalize).
        by_time = sorted(rs, key=lambda r: r["t"])
        top = None
        for b in by_time:
            if top is not None and b["gen"] < top["gen"]:
                cb = claim_of.get((jid, b["gen"]))
                _, until_b = ev.held_until(jid, b["gen"], cb) if cb else ("expiry", 0.0)
                if b["t"] <= until_b:
                    V.add(
                        "partner saw a generation go backwards while its lease was running",
                        f"job {jid}: gen {top['gen']} sent at {fmt_ts(top['t'])}, then gen {b['gen']} "
                        f"at {fmt_ts(b['t'])} (its lease ran until {fmt_ts(until_b)})",
                    )
                else:
                    stats["zombie_sends"] = stats.get("zombie_sends", 0) + 1
            if top is None or b["gen"] > top["gen"]:
                top = b
        rs = sorted(rs, key=lambda r: (r["gen"], r["t"]))
        for r in rs:
            c = claim_of.get((jid, r["gen"]))
            if c is None:
                V.add(
                    "partner got a send for a claim the database does not have",
                    f"job {jid} gen {r['gen']} sent at {fmt_ts(r['t'])}",
                )
                continue
            if r["t"] + 0.001 < ts(c["claimed_at"]):
                V.add("send before its claim", f"job {jid} gen {r['gen']}")
            how, until = ev.held_until(jid, r["gen"], c)
            if how == "expiry" and r["t"] > until:
                stats["sends_after_own_lease"] += 1  # worker behaviour, shown for information
        for a, b in zip(rs, rs[1:]):
            if a["gen"] == b["gen"]:
                V.add("two sends under one generation", f"job {jid} gen {a['gen']} ({a['worker']}, {b['worker']})")
        if len(rs) > 1:
            stats["resent_jobs"] += 1
        oks = [r for r in rs if r["code"] == 200]
        if len(oks) > 1:
            stats["duplicate_deliveries"] += len(oks) - 1
        for prev, nxt in zip(rs, rs[1:]):
            stats["resends"] += 1
            cp = claim_of.get((jid, prev["gen"]))
            cn = claim_of.get((jid, nxt["gen"]))
            if not cp or not cn or prev["gen"] == nxt["gen"]:
                continue
            how, until = ev.held_until(jid, prev["gen"], cp)
            stats[f"resends_after_{how}"] += 1
            # The new holder's claim, and the re-send itself, come only after the previous
            # sender lost the job (lease ended) or gave it back (applied retry).
            if ts(cn["claimed_at"]) < until or nxt["t"] < until:
                V.add(
                    "re-send before the previous holder's lease expired (or its retry was due)",
                    f"job {jid}: gen {prev['gen']} held until {fmt_ts(until)} ({how}); gen {nxt['gen']} "
                    f"claimed {fmt_ts(cn['claimed_at'])}, sent at {fmt_ts(nxt['t'])}",
                )
        j = jobs.get(jid)
        if j and j["status"] == "sent" and not any(r["gen"] == j["gen"] and r["code"] == 200 for r in rs):
            V.add("job sent without a successful send under its final claim", f"job {jid} gen {j['gen']}")
    for jid, j in jobs.items():
        if j["status"] == "sent" and jid not in sends:
            V.add("job sent but the partner never heard of it", f"job {jid}")


# ----------------------------------------------------------------------------------
# 7. nothing lost
# ----------------------------------------------------------------------------------


def check_nothing_lost(ev, V, stats, require_terminal=True):
    """Every enqueued id (and idempotency key) is still there, one job per key, and every
    job ends terminal (when `require_terminal`: a run that did not finish is reported as
    such by its main, not as lost jobs); a job that is not terminal is at least claimable."""
    jobs, ctx = ev.jobs, ev.ctx
    by_key = collections.defaultdict(list)
    for j in jobs.values():
        by_key[j["key"]].append(j["id"])
    for key, jid in ctx.enqueued.items():
        if jid not in jobs:
            V.add("job lost", f"job {jid} ({key}) was enqueued (the id came back) and is gone")
        elif jobs[jid]["key"] != key:
            V.add("job lost", f"job {jid} has key {jobs[jid]['key']}, enqueued as {key}")
    for key, ids in by_key.items():
        if key is not None and len(ids) > 1:
            V.add("idempotency key created a second job", f"{key}: jobs {ids}")
    stats["enqueued_unknown_found"] = sum(1 for k in ctx.plans if k not in ctx.enqueued and k in by_key)
    not_terminal = [j for j in jobs.values() if j["status"] not in TERMINAL]
    stats["not_terminal"] = len(not_terminal)
    if require_terminal:
        for j in not_terminal[:10]:
            V.add("job not terminal at the end", f"job {j['id']} is {j['status']}")
        if len(not_terminal) > 10:
            V.add("job not terminal at the end", f"... and {len(not_terminal) - 10} more")
    for j in not_terminal:
        if j["status"] not in ("pending", "in_flight"):
            V.add("job neither terminal nor claimable", f"job {j['id']} is {j['status']}")


# ----------------------------------------------------------------------------------
# 8. at most max_attempts sends (giving up)
# ----------------------------------------------------------------------------------


def check_give_up(ev, V, stats):
    """No job is claimed, nor sent to the partner, more than max_attempts times, whatever
    failed. A job that gave up did so on its last attempt, once that claim's lease had
    ended (heartbeats included), with the claim's last_error; no finalize of that claim
    applied, nor a heartbeat after it. Every poison job gave up (or was cancelled)."""
    for jid, j in ev.jobs.items():
        claims, sends = len(ev.claims.get(jid, [])), len(ev.sends.get(jid, []))
        if claims > j["max_attempts"]:
            V.add(
                "claimed more than max_attempts times", f"job {jid}: {claims} claims, max_attempts {j['max_attempts']}"
            )
        if sends > j["max_attempts"]:
            V.add(
                "partner got more sends of a job than its max_attempts",
                f"job {jid}: {sends} sends, max_attempts {j['max_attempts']}",
            )
        if gave_up(j):
            check_one_give_up(ev, V, j)
    poison = ev.poison_jobs()
    for jid in sorted(poison):
        j = ev.jobs[jid]
        if j["status"] in TERMINAL and j["status"] != "cancelled" and not gave_up(j):
            V.add("poison job did not give up", f"job {jid}: {j['status']}, last_error {j['last_error']!r}")
    stats["gave_up"] = sum(1 for j in ev.jobs.values() if gave_up(j))
    stats["poison"] = len(poison)
    stats["poison_gave_up"] = sum(1 for jid in poison if gave_up(ev.jobs[jid]))
    stats["poison_cancelled"] = sum(1 for jid in poison if ev.jobs[jid]["status"] == "cancelled")
    stats["poison_max_sends"] = max((len(ev.sends.get(jid, [])) for jid in poison), default=0)
    stats["poison_sends"] = sum(len(ev.sends.get(jid, [])) for jid in poison)
    stats["sent_max_attempts_times"] = sum(
        1 for jid, rs in ev.sends.items() if jid in ev.jobs and len(rs) == ev.jobs[jid]["max_attempts"]
    )


def check_one_give_up(ev, V, j):
    jid, n = j["id"], j["max_attempts"]
    if j["attempts"] != n:
        V.add("gave up before its last attempt", f"job {jid}: attempts {j['attempts']} of {n}")
    if not j["last_error"].startswith(GAVE_UP.format(n=n)):
        V.add("gave-up job's last_error does not name its last attempt", f"job {jid}: {j['last_error']!r}")
    if ev.terminal_finalizes.get(jid):
        V.add(
            "job both finalized and gave up",
            f"job {jid}: {[(f['gen'], f['outcome']) for f in ev.terminal_finalizes[jid]]}",
        )
    cs = ev.claims_in_order(jid)
    if not cs:
        return
    last = cs[-1]
    t = ts(j["finished_at"])  # the giving-up claim's instant (its event's created_at too)
    _, until = ev.held_until(jid, last["gen"], last)
    if t < until:
        V.add(
            "gave up while its last lease was running",
            f"job {jid} gen {last['gen']}: gave up at {fmt_ts(t)}, lease ran until {fmt_ts(until)}",
        )
    # A finalize of that claim never applies (the job would not have been in_flight to give
    # up); a heartbeat of it applies only before the give-up.
    late = [f for f in ev.fins.get((jid, last["gen"]), []) if f["result"] == "applied"]
    late += [h for h in ev.hbs.get((jid, last["gen"]), []) if h["result"] == "applied" and ts(h["at"]) > t]
    for x in late:
        V.add(
            "finalize or heartbeat applied after the job gave up",
            f"job {jid} gen {last['gen']} (call {x['call']}) at {fmt_ts(x['at'])}, gave up at {fmt_ts(t)}",
        )


# ----------------------------------------------------------------------------------
# 10. cancel
# ----------------------------------------------------------------------------------


def check_cancels(ev, V, stats):
    """sendjobs_cancel: an applied cancel left its job cancelled, and it stays so; a
    `stale` one found the job finished. A cancelled job has exactly one applied cancel
    (its one event is checked with the others: kind cancelled, its generation), no
    terminal finalize; after the cancel committed no claim of it started and no
    finalize or heartbeat of it applied; its business row was not stamped (it is as
    the job before it left it: pending). Counts the sends of a cancelled job that
    arrived after the cancel (claimed before it: allowed)."""
    applied = collections.defaultdict(list)
    for w in ev.db["cancels"]:
        where = f"job {w['job']} (call {w['call']})"
        if w["result"] == "applied":
            applied[w["job"]].append(w)
            if w["status"] != "cancelled":
                V.add("cancel applied but the row says otherwise", f"{where}: {w['status']}")
        elif w["result"] == "stale":
            if w["status"] not in TERMINAL:
                V.add("cancel refused an open job", f"{where}: the row is {w['status']}")
        else:
            V.add("cancel returned an unknown value", f"{where}: {w['result']!r}")
    stats["sends_after_cancel"] = 0
    for jid, j in ev.jobs.items():
        ws = applied.get(jid, [])
        if j["status"] != "cancelled":
            if ws:
                V.add("cancel applied but the job is not cancelled at the end", f"job {jid}: {j['status']}")
            continue
        if len(ws) != 1:
            V.add("job cancelled without exactly one applied cancel", f"job {jid}: {len(ws)} applied cancels")
        if ws:
            check_one_cancel(ev, V, stats, j, ws[0])
    stats["cancelled"] = sum(1 for j in ev.jobs.values() if j["status"] == "cancelled")


def check_one_cancel(ev, V, stats, j, w):
    jid = j["id"]
    # When the cancel committed (the server's commit timestamp; without one, the witness's
    # clock, a moment before): a claim, finalize or heartbeat that starts later must see it.
    t = ts(w["committed_at"] or w["at"])
    if ev.terminal_finalizes.get(jid):
        V.add(
            "cancelled job was also finished by a finalize",
            f"job {jid}: {[(f['gen'], f['outcome']) for f in ev.terminal_finalizes[jid]]}",
        )
    for c in ev.claims.get(jid, []):
        if ts(c["claimed_at"]) > t:
            V.add(
                "claimed after it was cancelled",
                f"job {jid} gen {c['gen']} claimed at {fmt_ts(c['claimed_at'])}, cancelled at {fmt_ts(t)}",
            )
    for x in ev.fenced_calls.get(jid, []):
        if x["result"] == "applied" and ts(x["at"]) > t:
            V.add(
                "finalize or heartbeat applied after the cancel",
                f"job {jid} gen {x['gen']} (call {x['call']}) at {fmt_ts(x['at'])}, cancelled at {fmt_ts(t)}",
            )
    chain = ev.chains.get(j["txn"], [])
    if chain and chain[-1] is j:
        _, unstamped = business_expected(chain)  # what the jobs before it left (pending)
        if ev.db["business"].get(j["txn"]) != unstamped:
            V.add(
                "cancelled job's business row was stamped",
                f"job {jid}: {j['txn']} is {ev.db['business'].get(j['txn'])}, expected {unstamped}",
            )
    stats["sends_after_cancel"] += sum(1 for r in ev.sends.get(jid, []) if r["t"] > t)


# ----------------------------------------------------------------------------------
# 11. redrive
# ----------------------------------------------------------------------------------


def check_redrives(ev, V, stats):
    """sendjobs_redrive: every job with a redrive_of was asked for by a redrive call and
    sends again a job that is (still) failed: same transaction_id, payload, queue and
    max_attempts, no idempotency key; at most one new job per failed job; a redrive that
    came back is in the database, and redriving a job again returned the same new job.
    (The new jobs end terminal like the others: check_nothing_lost; the failed job keeps
    its one event: check_one_event; the business row's failed -> pending: check_guard.)"""
    asked, returned = set(), collections.defaultdict(set)
    for c in ev.calls:
        if c["kind"] == "redrive":
            asked.update(c["ids"])
            if c["known"] and isinstance(c["result"], dict):
                for old, new in c["result"].items():
                    returned[old].add(new)
    by_origin = collections.defaultdict(list)
    for j in ev.jobs.values():
        if j["redrive_of"] is not None:
            by_origin[j["redrive_of"]].append(j)
    same = ("txn", "payload", "queue", "max_attempts")
    for old_id, news in by_origin.items():
        if len(news) > 1:
            V.add("failed job redriven twice", f"job {old_id}: new jobs {sorted(n['id'] for n in news)}")
        if old_id not in asked:
            V.add("a job redriven that nobody redrove", f"job {old_id}: new jobs {[n['id'] for n in news]}")
        old = ev.jobs.get(old_id)
        if old is None or old["status"] != "failed":
            V.add("redrive_of names a job that is not failed", f"job {old_id}: {old and old['status']}")
            continue
        for new in news:
            differs = [k for k in same if new[k] != old[k]] + (["idempotency_key"] if new["key"] else [])
            if differs:
                V.add("redriven job differs from its failed job", f"job {new['id']} redrives {old_id}: {differs}")
    for old_id, news in returned.items():
        if len(news) > 1:
            V.add("redriving a job again returned another new job", f"job {old_id}: {sorted(news)}")
        for new_id in news:
            if new_id not in ev.jobs or ev.jobs[new_id]["redrive_of"] != old_id:
                V.add(
                    "a redrive that came back is not in the database (lost commit)",
                    f"job {old_id} -> {new_id}: {ev.jobs.get(new_id, {}).get('redrive_of', 'no such job')}",
                )
    news = [n for ns in by_origin.values() for n in ns]
    stats["redriven"] = len(news)
    stats["redriven_outcomes"] = collections.Counter(n["status"] for n in news)


# ----------------------------------------------------------------------------------
# 12. purge
# ----------------------------------------------------------------------------------


def check_purge(ev, V, stats):
    """sendjobs_purge('1 hour', ...), called while the workers ran: every job seeded as
    finished a day ago is gone, with its event; the jobs seeded as created a day ago but
    finished ten minutes ago are all there, with their events; the purge calls that came
    back deleted no more rows than were seeded old; and no job the run enqueued, claimed,
    cancelled or redrove is gone (their events: check_one_event)."""
    jobs, events, ctx = ev.db["jobs"], ev.db["events"], ev.ctx
    left = sorted(jid for jid in ctx.seeded_old if jid in jobs or events.get(jid))
    if left:
        V.add("an old finished job was not purged", f"{len(left)} of {len(ctx.seeded_old)} left: {left[:10]}")
    gone = sorted(jid for jid in ctx.seeded_recent if jid not in jobs or len(events.get(jid, [])) != 1)
    if gone:
        V.add("purge deleted a job that finished within the hour", f"{len(gone)}: {gone[:10]}")
    purges = [c for c in ev.calls if c["kind"] == "purge"]
    deleted = sum(c["result"] for c in purges if c["known"] and isinstance(c["result"], int))
    if deleted > len(ctx.seeded_old):
        V.add("purge deleted more than the old jobs", f"{deleted} rows, {len(ctx.seeded_old)} seeded old")
    ours = set(ctx.enqueued.values()) | {c["job"] for c in ev.db["claims"]} | {w["job"] for w in ev.db["cancels"]}
    ours |= {
        new
        for c in ev.calls
        if c["kind"] == "redrive" and isinstance(c["result"], dict)
        for new in c["result"].values()
    }
    missing = sorted(ours - jobs.keys())
    if missing:
        V.add("a job the run made or claimed is gone", f"{len(missing)}: {missing[:10]}")
    stats.update(
        purge_calls=len(purges),
        purge_unknown=sum(1 for c in purges if not c["known"]),
        purged=deleted,
        purge_old_left=len(left),
    )


# ----------------------------------------------------------------------------------
# 13. stats
# ----------------------------------------------------------------------------------

# How far an estimated count of sendjobs_stats may be from the rows. An estimate is
# hits x w, the hits of a sample of one id per slice of w ids: its standard deviation is
# about sqrt(count x w). Allowed: 25% of the count, or 5 standard deviations plus two
# slices (a small queue in a large window is a handful of hits), whichever is more; a
# count that is wrong by a factor is outside both.
ESTIMATE_TOLERANCE = 0.25
PENDING_SAMPLE, EVENTS_SAMPLE = 2048, 1024


def estimate_allows(got, least, most, width, cluster=1):
    """Whether a sampled count is within its allowance: five standard deviations of a
    sample that draws one in `width`, each draw counting up to `cluster` rows at once (a
    sampled transaction counts every event it finished: a batch finalize's, up to its
    batch), whose variance grows with the cluster."""
    slack = max(ESTIMATE_TOLERANCE * most, 5 * math.sqrt(max(most, 1) * width * cluster) + 2 * width * cluster)
    return least - slack <= got <= most + slack


def check_stats(ev, V):
    """sendjobs_stats, called once after the run (nothing moves any more), agrees with the
    rows themselves, seeded ones included: per queue, pending jobs ready or scheduled by
    next_attempt_at, held ones in flight or expired by their lease, held ones on their
    last attempt, and the events of the last 5 minutes by kind (not the seeded ones that
    finished 10 minutes ago). Its `now` lies between two clock readings around the call:
    a row at that very instant may count either way."""
    st = ev.db["stats"]
    before, after, window = st["before"], st["after"], dt.timedelta(minutes=5)
    expected = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0]))  # queue, column -> range

    def count(queue, column, surely, perhaps):
        expected[queue][column][0] += bool(surely)
        expected[queue][column][1] += bool(surely or perhaps)

    for j in ev.db["jobs"].values():
        if j["status"] == "pending":
            count(j["queue"], "ready", j["next_at"] <= before, j["next_at"] <= after)
            count(j["queue"], "scheduled", j["next_at"] > after, j["next_at"] > before)
        if j["lease_end"] is not None:
            count(j["queue"], "in_flight", j["lease_end"] > after, j["lease_end"] > before)
            count(j["queue"], "expired", j["lease_end"] <= before, j["lease_end"] <= after)
            count(j["queue"], "at_last_attempt", j["attempts"] >= j["max_attempts"], False)
    for evs in ev.db["events"].values():
        for e in evs:
            count(e["queue"], f"{e['kind']}_5m", e["at"] > after - window, e["at"] > before - window)

    # Above 10,000 a count is estimated from a sample (sql/statements/stats.sql): per
    # queue for ready and scheduled; for the 5-minute counts when the window holds more
    # than 10,000 events, and for failed and cancelled when more than 10,000 of those.
    # Within a few events of the threshold (the server finds the window's start give or
    # take the events of one instant) either is allowed: an estimate's allowance holds the
    # exact count too. An estimate must be within ESTIMATE_TOLERANCE of the rows, and a
    # pending one never below 10,001; the rest must be exact.
    def window(kinds):
        return sum(expected[q][f"{k}_5m"][1] for q in expected for k in kinds)

    all_events = [e for evs in ev.db["events"].values() for e in evs]
    window_xids = [e["xid"] for e in all_events if e["at"] > before - dt.timedelta(minutes=5)]
    events_span = max(e["xid"] for e in all_events) - min(window_xids) + 1 if window_xids else 0
    events_estimated = len(window_xids) > 10000 - 50
    events_per_xid = max(collections.Counter(window_xids).values(), default=1)
    unsent_estimated = window(("failed", "cancelled")) > 10000
    # The slices' widths, from what the samples span: events, the window's transaction
    # ids; pending jobs, from the lowest pending id to the highest id.
    events_width = events_span / EVENTS_SAMPLE
    pending_ids = [j["id"] for j in ev.db["jobs"].values() if j["status"] == "pending"]
    pending_width = ((max(ev.db["jobs"]) - min(pending_ids) + 1) / PENDING_SAMPLE) if pending_ids else 0
    for queue in sorted(set(expected) | set(st["rows"]), key=str):
        for column in STATS_COLUMNS:
            least, most = expected[queue][column]
            got = st["rows"].get(queue, {}).get(column, 0)
            estimated = (
                most > 10000
                if column in ("ready", "scheduled")
                else events_estimated
                if column == "sent_5m"
                else unsent_estimated
                if column in ("failed_5m", "cancelled_5m")
                else False
            )
            if estimated:
                pending = column in ("ready", "scheduled")
                ok = estimate_allows(
                    got, least, most, pending_width if pending else events_width, 1 if pending else events_per_xid
                ) and (got > 10000 or not pending)
            else:
                ok = least <= got <= most
            if not ok:
                V.add(
                    "sendjobs_stats disagrees with the rows",
                    f"queue {queue}: {column} {got}, the rows say {least}"
                    + (f"..{most}" if most != least else "")
                    + (" (an estimate)" if estimated else ""),
                )


# ----------------------------------------------------------------------------------
# 15. the outbox's relay
# ----------------------------------------------------------------------------------


def check_relay(ev, V, stats):
    """The relay (tests/soak/lifecycle.py, consumer `soak`) read every event of the run
    exactly once: each job that is terminal at the end (seeded ones aside: history from
    before the consumer) is in harness.relayed once, no job twice, and nothing that is
    not a finished job of the run (a purged one is not: the run's jobs are not purged).
    Only for a run that had the relay (the soak's; not the demo's)."""
    if not getattr(ev.ctx, "relay", False):
        return
    relayed = collections.Counter(ev.db.get("relayed", []))
    for jid, n in sorted(relayed.items()):
        if n > 1:
            V.add("an event read twice by one consumer", f"job {jid}: {n} times")
    for jid, j in sorted(ev.jobs.items()):
        if j["status"] in TERMINAL and relayed[jid] == 0:
            V.add("an event the relay never read", f"job {jid} ({j['status']})")
    strays = sorted(jid for jid in relayed if jid not in ev.jobs or ev.jobs[jid]["status"] not in TERMINAL)
    if strays:
        V.add("the relay read an event of no finished job of the run", f"{len(strays)}: {strays[:10]}")
    stats.update(relayed=sum(relayed.values()))


# ----------------------------------------------------------------------------------
# 16-19. flow control: the limited partner's pause, cap, rate and ordering keys
# ----------------------------------------------------------------------------------


def holdings(ev, queue):
    """The claims of `queue`'s jobs as (start, end, job, gen): from the claim's instant to
    the first of its lease end (heartbeats included, as the DB recorded them), its
    applied finalize's witness and an applied cancel's witness. The witnesses are written
    before their commit, so an end here is never later than when the job really freed
    its place: a count of holdings never exceeds the claims' own."""
    cancel_at = {}
    for w in ev.db["cancels"]:
        if w["result"] == "applied":
            cancel_at[w["job"]] = ts(w["at"])
    out = []
    for jid, j in ev.jobs.items():
        if j["queue"] != queue:
            continue
        for c in ev.claims.get(jid, []):
            start = ts(c["claimed_at"])
            end = ts(c["lease_end"]) if c["lease_end"] else start
            for h in ev.hbs.get((jid, c["gen"]), []):
                if h["result"] == "applied" and h["lease_end"] is not None:
                    end = max(end, ts(h["lease_end"]))
            f = ev.released(jid, c["gen"])
            if f is not None:
                end = min(end, ts(f["at"]))
            if jid in cancel_at and cancel_at[jid] >= start:
                end = min(end, cancel_at[jid])
            out.append((start, end, jid, c["gen"]))
    return out


def check_pause(ev, V, stats):
    """Invariant 16: no claim of the limited partner's jobs starts between a pause that
    surely committed (its answer came back) and the first resume sent after it."""
    windows = [
        (c["paused_by"], c["resume_sent"])
        for c in ev.calls
        if c["kind"] == "pause" and c.get("paused_by") and c.get("resume_sent")
    ]
    stats["pauses"] = len(windows)
    for start, _, jid, gen in holdings(ev, LIMITED_QUEUE):
        for paused_by, resume_sent in windows:
            if paused_by < start < resume_sent:
                V.add(
                    "claimed from a paused queue",
                    f"job {jid} gen {gen} claimed at {fmt_ts(start)}, paused by {fmt_ts(paused_by)}, "
                    f"resumed from {fmt_ts(resume_sent)}",
                )


def check_cap(ev, V, stats):
    """Invariant 17: at no claim's instant do more than max_in_flight of the limited
    partner's jobs hold an unexpired lease (claims of a capped queue take turns, and each
    counts after its turn began: its own instant sees every earlier claim)."""
    held = holdings(ev, LIMITED_QUEUE)
    starts = sorted(h[0] for h in held)
    ends = sorted(h[1] for h in held)
    peak = 0
    for start, _, jid, gen in held:
        n = bisect.bisect_right(starts, start) - bisect.bisect_right(ends, start)
        peak = max(peak, n)
        if n > LIMITS["max_in_flight"]:
            # The holds at that instant, for the report: job/gen from..to.
            at = [f"{j}/{g} {fmt_ts(s0)}..{fmt_ts(e0)}" for s0, e0, j, g in held if s0 <= start < e0]
            V.add(
                "more jobs in flight than the queue's cap",
                f"{n} of {LIMITED_QUEUE} at {fmt_ts(start)} (job {jid} gen {gen}), cap {LIMITS['max_in_flight']}:"
                f" {'; '.join(at)}",
            )
    stats["cap_peak"] = peak


def check_rate(ev, V, stats):
    """Invariant 18: in any window of t seconds of the claims' clock the limited partner
    had at most rate x t + burst claims. With its claims in time order t_1 <= t_2 <= ...,
    for every i < j: j - i + 1 <= rate (t_j - t_i) + burst, that is a_j - a_i <= burst - 1
    for a_k = k - rate t_k: the largest a_j less the smallest a_i before it."""
    rate, burst = LIMITS["rate"], LIMITS["burst"]
    times = sorted(h[0] for h in holdings(ev, LIMITED_QUEUE))
    lowest, worst = None, None
    for k, t in enumerate(times):
        a = k - rate * t
        if lowest is not None and (worst is None or a - lowest[0] > worst[0]):
            worst = (a - lowest[0], lowest[1], k)
        if lowest is None or a < lowest[0]:
            lowest = (a, k)
    if worst is not None and worst[0] > burst - 1 + 1e-6:
        _, i, j = worst
        V.add(
            "claimed faster than the queue's rate",
            f"{j - i + 1} claims of {LIMITED_QUEUE} from {fmt_ts(times[i])} to {fmt_ts(times[j])}: "
            f"at most {rate * (times[j] - times[i]) + burst:.2f} (rate {rate}, burst {burst})",
        )
    stats["rate_claims"] = len(times)


def check_ordering_keys(ev, V, stats):
    """Invariant 19: a claim of a job of an ordering key never saw another job of its key
    in flight, nor an older one (by id) unfinished. A claim's snapshot lies between its
    instant and its commit; a job's hold of its key runs from its claim's commit to its
    finish (an expired lease still holds it), of which the witnesses give a lower bound (a
    lease's end, a finalize's or cancel's witness, written before their commit). So a
    claim that began after another job's claim of the key committed and itself committed
    before that job's lower bound saw both in flight; one that committed before an older
    job's finish began (a finalize's transaction start, a cancel's witness, a give-up's
    instant) saw it unfinished. Claims' commit times come from track_commit_timestamp
    (on in the soak and the demo); without them nothing here is checked. Ids are drawn
    when a row is inserted, not when it commits: a redrive (the operator's) draws its new
    job's id while a producer's chunk is inserting, and either can commit after a younger
    job of the key was claimed (in CI a redrive's job was claimed 0.65 s after a chunk
    began that held a job of its key 27 ids older, then unclaimed for another 1.2 s). The contract then
    lets the younger job go first (invariant 19, "as far as the committed jobs go"). So an
    older job is compared only when the answer of the call that made it (its chunk's
    enqueue, or its redrive) came back before the younger job's claim began; a job made
    before the workers started (the demo's) has no such call and is always compared."""
    if any(c["committed_at"] is None for c in ev.db["claims"]):
        stats["ordered_claims"] = 0
        return
    commit = {(c["job"], c["gen"]): ts(c["committed_at"]) for c in ev.db["claims"]}
    by_key = collections.defaultdict(list)
    for start, end, jid, gen in holdings(ev, LIMITED_QUEUE):
        key = ev.jobs[jid]["ordering_key"]
        if key is not None:
            by_key[key].append((start, end, jid, gen, commit[(jid, gen)]))
    for key, hs in by_key.items():
        for _a_start, a_end, a_job, a_gen, a_commit in hs:
            for b_start, _, b_job, b_gen, b_commit in hs:
                if b_job != a_job and a_commit <= b_start and b_commit <= a_end:
                    V.add(
                        "two jobs of one ordering key in flight",
                        f"key {key}: job {a_job} gen {a_gen} held from {fmt_ts(a_commit)} to at least "
                        f"{fmt_ts(a_end)}, job {b_job} gen {b_gen} claimed at {fmt_ts(b_start)} and "
                        f"committed at {fmt_ts(b_commit)}",
                    )
    finish_began = {}
    for jid, j in ev.jobs.items():
        if j["status"] in TERMINAL:
            tf = ev.terminal_finalizes.get(jid)
            finish_began[jid] = ts(tf[0]["txn_start"]) if tf else ts(j["finished_at"])
    for w in ev.db["cancels"]:
        if w["result"] == "applied" and w["job"] in finish_began:
            finish_began[w["job"]] = min(finish_began[w["job"]], ts(w["at"]))
    lines = collections.defaultdict(list)
    for jid in sorted(ev.jobs):
        key = ev.jobs[jid]["ordering_key"]
        if key is not None and ev.jobs[jid]["queue"] == LIMITED_QUEUE:
            lines[key].append(jid)
    made_by, enqueued_by_producer = ev.made_by, ev.enqueued_by_producer
    ordered = committed_after = 0
    for key, jids in lines.items():
        for older, younger in zip(jids, jids[1:]):
            cs = ev.claims_in_order(younger)
            if not cs:
                continue
            made_by_a_call = enqueued_by_producer or ev.jobs[older]["redrive_of"] is not None
            if made_by_a_call and made_by.get(older, float("inf")) > ts(cs[0]["claimed_at"]):
                committed_after += 1
                continue
            ordered += 1
            first = commit[(younger, cs[0]["gen"])]
            began = finish_began.get(older)
            if began is None or first < began:
                o, y = ev.jobs[older], ev.jobs[younger]
                V.add(
                    "a job of an ordering key claimed before an older one finished",
                    f"key {key}: job {younger}'s claim committed at {fmt_ts(first)}, job {older} "
                    f"{'began to finish at ' + fmt_ts(began) if began is not None else 'unfinished'}"
                    f" (job {older}: created {fmt_ts(ts(o['created_at']))}, redrive of {o['redrive_of']},"
                    f" status {o['status']}; job {younger}: created {fmt_ts(ts(y['created_at']))},"
                    f" redrive of {y['redrive_of']}; claims of {older}:"
                    f" {[(c['gen'], fmt_ts(ts(c['claimed_at']))) for c in ev.claims_in_order(older)]})",
                )
    stats["ordered_claims"] = ordered
    stats["ordered_committed_after"] = committed_after


# ----------------------------------------------------------------------------------
# 21. the fair share: a claim from any queue serves every queue with due jobs
# ----------------------------------------------------------------------------------


class FairShare:
    """What invariant 21 is checked against. The run has three queues and claims of 10, so
    K = 1: every claim from any queue reaches each of the unlimited queues (QUEUES) that
    has a due job, and takes at least one of its jobs unless other transactions hold its
    rows locked, or the batch went to expired leases (which keep their place in the claim
    order, invariant 21). So a claim from any queue is compared only when it re-claimed
    no expired lease, and a queue only when more of its jobs were due and pending
    throughout the claim -- known committed (their enqueue's answer came back) and due
    before the claim's instant, first claimed (or their cancel sent) after it committed
    -- than other transactions could hold locked without claiming them (`slack`): three
    batches for each other claim call under way meanwhile (rows it claims and is killed
    before it commits; rows that lost a merge to expired leases, over its rounds), and
    one for each cancel."""

    def __init__(self, ev):
        self.ev = ev
        self.batch = getattr(getattr(ev.ctx, "args", None), "batch", 10)
        # every claim and cancel call, as when it was sent and when its answer (or error) came
        self.under_way = {}
        for kind in ("claim", "cancel"):
            calls = [c for c in ev.calls if c["kind"] == kind]
            self.under_way[kind] = (sorted(c["t0"] for c in calls), sorted(c.get("t1") or float("inf") for c in calls))
        made_by, producer = ev.made_by, ev.enqueued_by_producer
        cancel_sent = {}
        for c in ev.calls:
            if c["kind"] == "cancel":
                cancel_sent[c["job"]] = min(cancel_sent.get(c["job"], c["t0"]), c["t0"])
        plans = ev.ctx.plans or {}
        # each unlimited queue's jobs' first wait: (from, until)
        self.waits = {q: [] for q in QUEUES}
        for jid, j in ev.jobs.items():
            if j["queue"] not in self.waits or j["ordering_key"] is not None or j["redrive_of"] is not None:
                continue
            plan = plans.get(j["key"])
            if plan is None or (producer and jid not in made_by):
                continue
            due = ts(plan["run_at"]) if plan["run_at"] is not None else ts(j["created_at"])
            start = max(due, made_by.get(jid, float("-inf")))
            claims = ev.claims_in_order(jid)
            end = ts(claims[0]["claimed_at"]) if claims else float("inf")
            end = min(end, cancel_sent.get(jid, float("inf")))
            if start < end:
                self.waits[j["queue"]].append((start, end))
        self.starts = {q: sorted(s for s, _ in w) for q, w in self.waits.items()}
        self.ends = {q: sorted(e for _, e in w) for q, w in self.waits.items()}
        self.by_start = {q: sorted(w) for q, w in self.waits.items()}

    def waiting(self, queue, t_claim, t_commit):
        """How many of `queue`'s jobs waited due and pending from before t_claim to after
        t_commit: begun by t_claim, less those ended by t_commit that had begun by then."""
        begun = bisect.bisect_right(self.starts[queue], t_claim)
        ended = bisect.bisect_right(self.ends[queue], t_commit)
        w = self.by_start[queue]
        # ended by t_commit, but begun after t_claim: not among the begun
        late = sum(1 for s, e in w[begun : bisect.bisect_right(self.starts[queue], t_commit)] if e <= t_commit)
        return begun - (ended - late)

    def slack(self, t_claim, t_commit):
        """How many rows other transactions may have held locked between t_claim and
        t_commit without claiming them (this claim's own call is one of those under way)."""

        def overlapping(kind):
            sent, answered = self.under_way[kind]
            return bisect.bisect_right(sent, t_commit) - bisect.bisect_left(answered, t_claim)

        return 3 * self.batch * max(0, overlapping("claim") - 1) + overlapping("cancel")

    def claims(self):
        """Each committed claim from any queue that re-claimed no expired lease, as
        (call id, worker, instant, commit, {queue: jobs})."""
        from_any = {c["id"] for c in self.ev.calls if c["kind"] == "claim" and "queue" in c and c["queue"] is None}
        rows = collections.defaultdict(list)
        for w in self.ev.db["claims"]:
            if w["call"] in from_any:
                rows[w["call"]].append(w)
        for call, ws in sorted(rows.items()):
            if any(w["committed_at"] is None for w in ws) or any(self.reclaimed(w) for w in ws):
                continue
            queues = collections.Counter(self.ev.jobs[w["job"]]["queue"] for w in ws if w["job"] in self.ev.jobs)
            # the first pass's instant: a later pass (ordered jobs, a limited queue) reads
            # the clock again
            yield call, ws[0]["worker"], min(ts(w["claimed_at"]) for w in ws), ts(ws[0]["committed_at"]), queues

    def reclaimed(self, w):
        """Whether claim w took an expired lease: its job's claim before it was not released
        by an applied retry (or is not in the record)."""
        if w["gen"] <= 1:
            return False
        before = self.ev.claim_of.get((w["job"], w["gen"] - 1))
        return before is None or self.ev.held_until(w["job"], w["gen"] - 1, before)[0] != "retry"


def check_fair_share(ev, V, stats):
    """Invariant 21: no claim from any queue took none of an unlimited queue's jobs while
    more of them waited, due, than other transactions could have held locked (FairShare)."""
    fair = FairShare(ev)
    compared = claims = 0
    if fair.batch < len(QUEUES) + 1:
        # K = 1 needs a batch with a place for each queue (the limited one's included)
        stats["fair_share_claims"] = stats["fair_share_compared"] = 0
        return
    for call, worker, t_claim, t_commit, queues in fair.claims():
        claims += 1
        slack = fair.slack(t_claim, t_commit)
        for q in QUEUES:
            waiting = fair.waiting(q, t_claim, t_commit)
            if waiting <= slack:
                continue
            compared += 1
            if queues[q] == 0:
                V.add(
                    "a claim from any queue passed over a queue with due jobs",
                    f"call {call} of {worker} at {fmt_ts(t_claim)} (committed {fmt_ts(t_commit)}) took "
                    f"{dict(queues)}, none of {q}'s {waiting} due jobs waiting throughout",
                )
    stats["fair_share_claims"] = claims
    stats["fair_share_compared"] = compared


# ----------------------------------------------------------------------------------
# all of them
# ----------------------------------------------------------------------------------


def count_outcomes(ev, stats):
    """The counts the summary prints: jobs by final status, events, partner requests by
    answer, stale finalizes, how the failed jobs failed."""
    jobs, db, partner_requests = ev.jobs, ev.db, ev.partner_requests
    stats["jobs"] = len(jobs)
    for status in TERMINAL:
        stats[status] = sum(1 for j in jobs.values() if j["status"] == status)
    stats["events"] = sum(len(v) for v in ev.events.values())
    stats["partner_requests"] = len(partner_requests)
    stats["partner_codes"] = collections.Counter(r["code"] for r in partner_requests)
    stats["stale_finalizes"] = sum(1 for f in db["finalizes"] if f["result"] == "stale")
    stats["repeated_finalizes"] = sum(1 for f in db["finalizes"] if "repeat_of" in f)
    stats["late_stale"] = sum(
        1 for c in ev.calls if c["kind"] == "finalize" and c.get("late") and c["result"] == "stale"
    )
    stats["failed_direct"] = sum(1 for f in db["finalizes"] if f["result"] == "applied" and f["outcome"] == "failed")
    stats["failed_by_max_attempts"] = sum(
        1 for f in db["finalizes"] if f["result"] == "applied" and f["outcome"] == "retry" and f["status"] == "failed"
    )


# The kinds of loss a failover can cause, as a Jepsen-style analysis names them, each
# counted from the checks that find it (docs/operations.md, "Running under a failover
# manager"); in doubt is not a violation: a call whose answer never came back.
LOSS_KINDS = {
    "lost": (
        "a claim that came back is not in the database (lost commit)",
        "a heartbeat answer that came back is not in the database (lost commit)",
        "a finalize answer that came back is not in the database (lost commit)",
        "a cancel answer that came back is not in the database (lost commit)",
        "a finalize that returned applied is lost",
        "job lost",
    ),
    "duplicate": ("two sends under one generation", "a generation handed out to two claims"),
    "ghost": ("partner got a send for a claim the database does not have",),
}


def count_losses(V, stats):
    """Each kind of loss with its count: lost (acknowledged, then gone), duplicate (one
    generation held or sent twice), in doubt (the caller never learned the answer), ghost
    (a send under a claim the database does not have: rolled back, or lost)."""
    losses = {kind: sum(len(V.items.get(check, ())) for check in checks) for kind, checks in LOSS_KINDS.items()}
    losses["in doubt"] = sum(stats.get(f"{kind}_unknown", 0) for kind in WITNESSED)
    stats["losses"] = losses
    return losses


def check_everything(ctx, db, partner_requests, stats, require_terminal=True):
    """Checks the invariants of docs/contract.md (durability 14, then 1 to 8, then cancel
    10, redrive 11, purge 12, stats 13, the relay 15, flow control 16 to 19 and the fair
    share 21) against
    the three records: `db` from records.read_database, the partner's requests, and the
    calls in ctx.record. Fills `stats`; adds violations to ctx.violations."""
    ev = Evidence(ctx, db, partner_requests)
    V = ctx.violations
    check_durability(ev, V, stats)
    check_one_live_claim(ev, V, stats)
    check_generations(ev, V, stats)
    check_fencing(ev, V)
    check_one_event(ev, V)
    check_guard(ev, V)
    check_resends(ev, V, stats)
    check_nothing_lost(ev, V, stats, require_terminal)
    check_give_up(ev, V, stats)
    check_cancels(ev, V, stats)
    check_redrives(ev, V, stats)
    check_purge(ev, V, stats)
    check_stats(ev, V)
    check_relay(ev, V, stats)
    check_pause(ev, V, stats)
    check_cap(ev, V, stats)
    check_rate(ev, V, stats)
    check_ordering_keys(ev, V, stats)
    check_fair_share(ev, V, stats)
    count_outcomes(ev, stats)
    count_losses(V, stats)
    return stats
