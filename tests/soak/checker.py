"""The invariant checker: one function per row of the README's table of invariants
(durability, then 1 to 7), each comparing the three records of a run -- the partner's
record of every send, the harness's record of every call and the database with its
witness rows (how they are kept, and why they stay true across crashes and failovers:
tests/soak/records.py) -- and adding what it finds to the run's `Violations` under a
fixed check name. `check_everything` runs them all in order; the demo and the soak call
it once at the end of a run, the self-test (tests/soak/checker_selftest.py) once per
mutation of a clean run's records.

A lease end is always the one the database recorded (at claim time, and at each applied
heartbeat), never a worker's idea of it; an answer counts as evidence only when it came
back to its worker.
"""

import collections

from .records import BUSINESS_OF, TERMINAL, TERMINAL_BUSINESS, fmt_ts, ts


class Evidence:
    """A run's three records, indexed the ways the checks look them up."""

    def __init__(self, ctx, db, partner_requests):
        self.ctx = ctx
        self.calls = ctx.record.calls
        self.db = db
        self.jobs, self.events = db["jobs"], db["events"]
        self.partner_requests = partner_requests
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
        self.claim_of = {(c["job"], c["gen"]): c for c in db["claims"]}
        self.next_claim = {}
        for jid, cs in self.claims.items():
            for c in cs:
                g = c["gen"]
                if (jid, g + 1) in self.claim_of:
                    self.next_claim[(jid, g)] = self.claim_of[(jid, g + 1)]
        # the applied finalizes that made each job terminal, in witness order
        self.terminal_finalizes = collections.defaultdict(list)
        for f in db["finalizes"]:
            if f["result"] == "applied" and f["status"] in TERMINAL:
                self.terminal_finalizes[f["job"]].append(f)

    def claims_in_order(self, job_id):
        """The witnessed claims of a job, by generation."""
        return sorted(self.claims.get(job_id, []), key=lambda c: (c["gen"], c["claimed_at"]))

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
# durability: every answer that came back is in the database
# ----------------------------------------------------------------------------------

def check_durability(ev, V, stats):
    """Every claim, heartbeat and finalize answer that came back to its worker is in the
    database (its witness row survived crashes and failover, with the same answer); no
    witness row without a call; a finalize that returned `applied` left its job terminal
    with its event. Counts the calls, known and unknown, in `stats`. (After a failover the
    soak also audits the old primary: tests/soak/soak.py, audit_old_primary.)"""
    db = ev.db
    w_claims_by_call = collections.defaultdict(list)
    for c in db["claims"]:
        w_claims_by_call[c["call"]].append(c)
    w_hb_by_call = {h["call"]: h for h in db["heartbeats"]}
    w_fin_by_call = {f["call"]: f for f in db["finalizes"]}
    calls = {c["id"]: c for c in ev.calls}
    stats.update({f"{k}_{w}": 0 for k in ("claim", "heartbeat", "finalize")
                  for w in ("calls", "known", "unknown", "unknown_committed", "unknown_not_committed")})
    stats["finalize_stale"] = stats["finalize_applied"] = stats["claims_invisible"] = 0
    stats["finalize_batched"] = sum(1 for c in ev.calls if c["kind"] == "finalize" and c.get("batch"))
    for call in ev.calls:
        kind = call["kind"]
        stats[f"{kind}_calls"] += 1
        if kind == "claim":
            got = w_claims_by_call.get(call["id"], [])
            if call["known"] and call["result"] != "error":
                stats["claim_known"] += 1
                seen = sorted((j, g, le) for j, g, le in call["result"])
                have = sorted((c["job"], c["gen"], c["lease_end"]) for c in got)
                if seen != have:
                    V.add("a claim that came back is not in the database (lost commit)",
                          f"call {call['id']} ({call['worker']}): returned {[(j, g) for j, g, _ in seen]}, "
                          f"database has {[(j, g) for j, g, _ in have]}")
            elif not call["known"]:
                stats["claim_unknown"] += 1
                stats["claim_unknown_committed" if got else "claim_unknown_not_committed"] += 1
                stats["claims_invisible"] += len(got)
        else:
            w = (w_hb_by_call if kind == "heartbeat" else w_fin_by_call).get(call["id"])
            if call["known"] and call["result"] != "error":
                stats[f"{kind}_known"] += 1
                if kind == "finalize":
                    stats[f"finalize_{call['result']}"] += 1
                if w is None or w["result"] != call["result"]:
                    V.add(f"a {kind} answer that came back is not in the database (lost commit)",
                          f"call {call['id']} job {call['job']} gen {call['gen']}: returned {call['result']!r}, "
                          f"database has {w and w['result']!r}")
            elif not call["known"]:
                stats[f"{kind}_unknown"] += 1
                stats[f"{kind}_unknown_committed" if w else f"{kind}_unknown_not_committed"] += 1
    for table, by_call in (("claims", w_claims_by_call), ("heartbeats", w_hb_by_call),
                           ("finalizes", w_fin_by_call)):
        for cid in by_call:
            if cid not in calls:
                V.add("a witness row for a call nobody made", f"harness.{table} call {cid}")

    # every applied terminal finalize that came back is reflected in its job and its event
    jobs, events = ev.jobs, ev.events
    for call in ev.calls:
        if call["kind"] == "finalize" and call["known"] and call["result"] == "applied":
            post = call.get("post")
            if post and post[0] in TERMINAL:
                j = jobs.get(call["job"])
                evs = events.get(call["job"], [])
                if not j or j["status"] != post[0] or j["gen"] != call["gen"] or \
                        [e["gen"] for e in evs] != [call["gen"]]:
                    V.add("a finalize that returned applied is lost",
                          f"job {call['job']} gen {call['gen']} -> {post[0]}: now "
                          f"{j and (j['status'], j['gen'])}, events {[(e['kind'], e['gen']) for e in evs]}")


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
            V.add("claimed before it was due",
                  f"job {jid}: claimed {fmt_ts(cs[0]['claimed_at'])}, due {fmt_ts(run_at)}")
        for prev, nxt in zip(cs, cs[1:]):
            if nxt["claimed_at"] < prev["claimed_at"]:
                V.add("generation grew while claimed_at went back",
                      f"job {jid}: gen {prev['gen']} at {fmt_ts(prev['claimed_at'])}, "
                      f"gen {nxt['gen']} at {fmt_ts(nxt['claimed_at'])}")
            f = ev.released(jid, prev["gen"])
            if f and f["status"] in TERMINAL:
                V.add("claimed again after a terminal finalize", f"job {jid}: gen {prev['gen']} -> {nxt['gen']}")
                continue
            how, until = ev.held_until(jid, prev["gen"], prev)
            if ts(nxt["claimed_at"]) < until and how == "retry":
                V.add("claimed before it was due",
                      f"job {jid}: gen {prev['gen']} released by a retry due {fmt_ts(until)}, "
                      f"gen {nxt['gen']} ({nxt['worker']}) claimed at {fmt_ts(nxt['claimed_at'])}")
            elif ts(nxt["claimed_at"]) < until:
                V.add("two claims with overlapping unexpired leases",
                      f"job {jid}: gen {prev['gen']} ({prev['worker']}) held until {fmt_ts(until)} ({how}), "
                      f"gen {nxt['gen']} ({nxt['worker']}) claimed at {fmt_ts(nxt['claimed_at'])}")
            if how == "expiry":
                stats["reclaims_after_expiry"] += 1
                reclaim_delays.append(ts(nxt["claimed_at"]) - until)
            else:
                stats["reclaims_after_retry"] += 1
    stats["max_reclaim_delay"] = max(reclaim_delays) if reclaim_delays else 0.0


# ----------------------------------------------------------------------------------
# 2. generations
# ----------------------------------------------------------------------------------

def check_generations(ev, V, stats):
    """Every claim increments the generation once: the witnessed generations of each job
    are exactly 1, 2, 3, ...; the final claim_generation and attempts equal the number
    of claims."""
    stats["claims"] = len(ev.db["claims"])
    for jid, j in ev.jobs.items():
        cs = ev.claims_in_order(jid)
        gens = [c["gen"] for c in cs]
        if gens != list(range(1, len(gens) + 1)):
            V.add("claim generations not 1, 2, 3, ... (one increment per claim)", f"job {jid}: {gens[:12]}")
        if j["gen"] != len(cs) or j["attempts"] != len(cs):
            V.add("final claim_generation/attempts differ from the number of claims",
                  f"job {jid}: gen {j['gen']}, attempts {j['attempts']}, claims witnessed {len(cs)}")


# ----------------------------------------------------------------------------------
# 3. fencing
# ----------------------------------------------------------------------------------

def check_fencing(ev, V):
    """A finalize or heartbeat applies only with the current generation of an in_flight
    row: an applied one left the row at its own generation (and in_flight, for a
    heartbeat) with no newer claim before it, and left the status its outcome asks for;
    one applied finalize per claim; a `stale` answer only when the row was no longer
    in_flight at that generation; no answer but applied or stale."""
    for f in ev.db["finalizes"]:
        where = f"job {f['job']} gen {f['gen']} {f['outcome']} (call {f['call']})"
        if f["result"] == "applied":
            if f["post_gen"] != f["gen"]:
                V.add("finalize applied with an old generation", f"{where}: the row is at gen {f['post_gen']}")
            nc = ev.next_claim.get((f["job"], f["gen"]))
            if nc is not None and ts(nc["claimed_at"]) <= ts(f["at"]):
                V.add("finalize applied after its claim was superseded",
                      f"{where}: applied at {fmt_ts(f['at'])}, gen {nc['gen']} claimed at {fmt_ts(nc['claimed_at'])}")
            expected = {"sent": ("sent",), "failed": ("failed",),
                        "retry": ("failed",) if (f["attempts"] or 0) >= (f["max_attempts"] or 0) else ("pending",)}
            if f["status"] not in expected.get(f["outcome"], ()):
                V.add("finalize applied but the row says otherwise",
                      f"{where}: status {f['status']}, attempts {f['attempts']}/{f['max_attempts']}")
            if len([x for x in ev.fins[(f["job"], f["gen"])] if x["result"] == "applied"]) > 1:
                V.add("two applied finalizes for one claim", where)
        elif f["result"] == "stale":
            if f["status"] == "in_flight" and f["post_gen"] == f["gen"]:
                V.add("finalize refused while holding the job", f"{where}: row still in_flight at that generation")
        else:
            V.add("finalize returned an unknown value", f"{where}: {f['result']!r}")
    for h in ev.db["heartbeats"]:
        where = f"job {h['job']} gen {h['gen']} (call {h['call']})"
        if h["result"] == "applied":
            if h["post_gen"] != h["gen"] or h["status"] != "in_flight":
                V.add("heartbeat applied with an old generation",
                      f"{where}: the row is {h['status']} at gen {h['post_gen']}")
        elif h["result"] == "stale":
            if h["status"] == "in_flight" and h["post_gen"] == h["gen"]:
                V.add("heartbeat refused while holding the job", f"{where}: row still in_flight at that generation")
        else:
            V.add("heartbeat returned an unknown value", f"{where}: {h['result']!r}")


# ----------------------------------------------------------------------------------
# 4. one event
# ----------------------------------------------------------------------------------

def check_one_event(ev, V):
    """A terminal job never changes again: it has exactly one event, of its kind, its final
    generation and its business row, from the one applied terminal finalize of its last
    claim; a job that is not terminal has no event and no applied terminal finalize."""
    for jid, j in ev.jobs.items():
        evs = ev.events.get(jid, [])
        tf = ev.terminal_finalizes.get(jid, [])
        if len(tf) > 1:
            V.add("job finalized to a terminal state twice",
                  f"job {jid}: {[(f['gen'], f['outcome'], f['status']) for f in tf]}")
        if j["status"] in TERMINAL:
            if len(evs) != 1:
                V.add("terminal job without exactly one event", f"job {jid} ({j['status']}): {len(evs)} events")
            else:
                e = evs[0]
                if e["kind"] != j["status"]:
                    V.add("event kind differs from job status", f"job {jid}: status {j['status']}, event {e['kind']}")
                if e["gen"] != j["gen"]:
                    V.add("event generation differs from the final claim_generation",
                          f"job {jid}: job gen {j['gen']}, event gen {e['gen']}")
                if e["txn"] != j["txn"]:
                    V.add("event transaction_id differs", f"job {jid}: {j['txn']} vs {e['txn']}")
            if not tf or tf[-1]["gen"] != j["gen"] or tf[-1]["status"] != j["status"]:
                V.add("terminal job not finished by an applied finalize of its last claim",
                      f"job {jid} ({j['status']}, gen {j['gen']}): applied terminal finalizes "
                      f"{[(f['gen'], f['status']) for f in tf]}")
        else:
            if evs:
                V.add("event for a job that is not terminal", f"job {jid} ({j['status']}): {len(evs)} events")
            if tf:
                V.add("terminal finalize applied but the job is not terminal",
                      f"job {jid} is {j['status']}: {[(f['gen'], f['status']) for f in tf]}")


# ----------------------------------------------------------------------------------
# 5. guard
# ----------------------------------------------------------------------------------

def check_guard(ev, V):
    """A guarded business row never moves between terminal values: it matches its job, its
    history is exactly pending -> final, and no history row moves between success and
    failed. (That every reconciler flip was refused is checked as it happens: the
    Reconciler in tests/soak/workers.py.)"""
    business, history = ev.db["business"], ev.db["history"]
    for jid, j in ev.jobs.items():
        if j["status"] in TERMINAL and j["txn"] is not None:
            if business.get(j["txn"]) != BUSINESS_OF[j["status"]]:
                V.add("business row does not match its job",
                      f"{j['txn']}: job {jid} {j['status']}, row {business.get(j['txn'])}")
            h = history.get(j["txn"], [])
            if h != [("pending", BUSINESS_OF[j["status"]])]:
                V.add("business row history is not exactly pending -> final", f"{j['txn']}: {h}")
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
    jobs, claim_of = ev.jobs, ev.claim_of
    sends = collections.defaultdict(list)
    for r in ev.partner_requests:
        sends[r["job"]].append(r)
    stats.update(resent_jobs=0, resends=0, resends_after_retry=0, resends_after_expiry=0,
                 duplicate_deliveries=0, sends_after_own_lease=0)
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
                    V.add("partner saw a generation go backwards while its lease was running",
                          f"job {jid}: gen {top['gen']} sent at {fmt_ts(top['t'])}, then gen {b['gen']} "
                          f"at {fmt_ts(b['t'])} (its lease ran until {fmt_ts(until_b)})")
                else:
                    stats["zombie_sends"] = stats.get("zombie_sends", 0) + 1
            if top is None or b["gen"] > top["gen"]:
                top = b
        rs = sorted(rs, key=lambda r: (r["gen"], r["t"]))
        for r in rs:
            c = claim_of.get((jid, r["gen"]))
            if c is None:
                V.add("partner got a send for a claim the database does not have",
                      f"job {jid} gen {r['gen']} sent at {fmt_ts(r['t'])}")
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
                V.add("re-send before the previous holder's lease expired (or its retry was due)",
                      f"job {jid}: gen {prev['gen']} held until {fmt_ts(until)} ({how}); gen {nxt['gen']} "
                      f"claimed {fmt_ts(cn['claimed_at'])}, sent at {fmt_ts(nxt['t'])}")
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
# all of them
# ----------------------------------------------------------------------------------

def count_outcomes(ev, stats):
    """The counts the summary prints: jobs by final status, events, partner requests by
    answer, stale finalizes, how the failed jobs failed."""
    jobs, db, partner_requests = ev.jobs, ev.db, ev.partner_requests
    stats["jobs"] = len(jobs)
    stats["sent"] = sum(1 for j in jobs.values() if j["status"] == "sent")
    stats["failed"] = sum(1 for j in jobs.values() if j["status"] == "failed")
    stats["events"] = sum(len(v) for v in ev.events.values())
    stats["partner_requests"] = len(partner_requests)
    stats["partner_codes"] = collections.Counter(r["code"] for r in partner_requests)
    stats["stale_finalizes"] = sum(1 for f in db["finalizes"] if f["result"] == "stale")
    stats["late_stale"] = sum(1 for c in ev.calls if c["kind"] == "finalize" and c.get("late")
                              and c["result"] == "stale")
    stats["failed_direct"] = sum(1 for f in db["finalizes"] if f["result"] == "applied" and f["outcome"] == "failed")
    stats["failed_by_max_attempts"] = sum(1 for f in db["finalizes"] if f["result"] == "applied"
                                          and f["outcome"] == "retry" and f["status"] == "failed")


def check_everything(ctx, db, partner_requests, stats, require_terminal=True):
    """Checks every invariant of the README's table (durability, then 1 to 7) against the
    three records: `db` from records.read_database, the partner's requests, and the calls
    in ctx.record. Fills `stats`; adds violations to ctx.violations."""
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
    count_outcomes(ev, stats)
    return stats
