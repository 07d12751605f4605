"""The checker's own test: every check must be seen to fail. On copies of a clean run's
records, one mutation per check -- each the fact that check exists for (a witness row
dropped, an event duplicated, a re-send moved before the lease end, ...) -- and the
checker (tests/soak/checker.py) must then report that check. The soak runs it with
--self-test-checker (and --prove-checker runs that first); every check must fire --
those of 0.2.0 too (giving up, cancel, redrive, purge, stats), whose mutations
need a run that had poison jobs, cancels, redrives and a purge (the soak's always has).
"""

import copy
import datetime as dt
import types

from .checker import Evidence, FairShare, check_everything, gave_up
from .records import FINALIZED, GAVE_UP, LIMITED_QUEUE, LIMITS, QUEUES, TERMINAL, Record, Violations, ts


def _first(items, what):
    for x in items:
        return x
    raise LookupError(f"no {what} in this run to mutate")


def _mutations(ctx):
    """(check name, what the mutation does, function(db, sends, calls, plans, enqueued)).
    Each function corrupts one fact of a clean run's records, as the bug the check
    exists for would have; the check must then report it. `ctx` gives the ids of the
    seeded jobs (the purge's)."""
    seeded = ctx.seeded_old | ctx.seeded_recent

    def jobs_with(db, pred):
        return (j for j in sorted(db["jobs"].values(), key=lambda j: j["id"]) if j["id"] not in seeded and pred(j))

    def finalized(j):
        """Finished by an applied terminal finalize (not given up, not cancelled)."""
        return j["status"] in FINALIZED and not gave_up(j)

    def claims_of(db, jid):
        return sorted((c for c in db["claims"] if c["job"] == jid), key=lambda c: c["gen"])

    def applied(db, pred):
        return (f for f in db["finalizes"] if f["result"] == "applied" and pred(f))

    def sends_of(sends, jid):
        return sorted((r for r in sends if r["job"] == jid), key=lambda r: r["gen"])

    def known(calls, kind, pred=lambda c: True):
        return (c for c in calls if c["kind"] == kind and c["known"] and c["result"] not in (None, "error") and pred(c))

    def reclaimed_after_expiry(db):
        fins = {(f["job"], f["gen"]) for f in db["finalizes"] if f["result"] == "applied"}
        for j in jobs_with(db, lambda j: j["gen"] >= 2):
            cs = claims_of(db, j["id"])
            if len(cs) >= 2 and (j["id"], cs[0]["gen"]) not in fins:
                return j, cs
        raise LookupError("no re-claim after a lease expiry")

    def terminal_finalize(db, jid):
        return _first(applied(db, lambda f: f["job"] == jid and f["status"] in TERMINAL), "terminal finalize")

    def applied_cancel(db):
        """A cancelled job, its applied cancel's witness, and when that cancel committed."""
        for w in db["cancels"]:
            j = db["jobs"].get(w["job"])
            if w["result"] == "applied" and j and j["status"] == "cancelled":
                return j, w, w["committed_at"] or w["at"]
        raise LookupError("no applied cancel")

    def redriven(db):
        """A redriven failed job and its new job."""
        new = _first(jobs_with(db, lambda j: j["redrive_of"] is not None), "redriven job")
        return db["jobs"][new["redrive_of"]], new

    M = []

    def m(check, doc):
        def deco(fn):
            M.append((check, doc, fn))
            return fn

        return deco

    @m("a claim that came back is not in the database (lost commit)", "drop the witness row of a returned claim")
    def _(db, sends, calls, plans, enq):
        c = _first(known(calls, "claim", lambda c: c["result"]), "returned claim")
        db["claims"] = [w for w in db["claims"] if not (w["call"] == c["id"] and w["job"] == c["result"][0][0])]

    @m("a heartbeat answer that came back is not in the database (lost commit)", "drop a returned heartbeat's witness")
    def _(db, sends, calls, plans, enq):
        c = _first(known(calls, "heartbeat"), "returned heartbeat")
        db["heartbeats"] = [w for w in db["heartbeats"] if w["call"] != c["id"]]

    @m("a finalize answer that came back is not in the database (lost commit)", "flip a returned finalize's witness")
    def _(db, sends, calls, plans, enq):
        c = _first(known(calls, "finalize"), "returned finalize")
        w = _first((w for w in db["finalizes"] if w["call"] == c["id"]), "witness")
        w["result"] = "stale" if w["result"] == "applied" else "applied"

    @m("a witness row for a call nobody made", "add a witness row with an unknown call id")
    def _(db, sends, calls, plans, enq):
        db["heartbeats"].append(
            dict(
                db["heartbeats"][0] if db["heartbeats"] else {},
                call=10**12,
                job=-1,
                gen=1,
                result="stale",
                status="sent",
                post_gen=1,
                lease_end=None,
            )
        )

    @m("job lost", "remove an enqueued job")
    def _(db, sends, calls, plans, enq):
        del db["jobs"][_first(jobs_with(db, lambda j: True), "job")["id"]]

    @m("idempotency key created a second job", "a second job with an existing key")
    def _(db, sends, calls, plans, enq):
        j = _first(jobs_with(db, lambda j: j["key"]), "job")
        db["jobs"][10**12] = dict(j, id=10**12)

    @m("job not terminal at the end", "a job left pending")
    def _(db, sends, calls, plans, enq):
        _first(jobs_with(db, lambda j: j["status"] in TERMINAL), "terminal job")["status"] = "pending"

    @m("job neither terminal nor claimable", "a job in a status no claim takes")
    def _(db, sends, calls, plans, enq):
        _first(jobs_with(db, lambda j: True), "job")["status"] = "paused"

    @m("claim generations not raised once per claim", "a claim generation skips one")
    def _(db, sends, calls, plans, enq):
        j = _first(jobs_with(db, lambda j: j["gen"] >= 2), "re-claimed job")
        claims_of(db, j["id"])[-1]["gen"] += 1

    @m("final claim_generation/attempts differ from the number of claims", "attempts one too many")
    def _(db, sends, calls, plans, enq):
        _first(jobs_with(db, lambda j: True), "job")["attempts"] += 1

    @m("claimed before it was due", "the first claim one second before run_at")
    def _(db, sends, calls, plans, enq):
        j = _first(jobs_with(db, lambda j: plans.get(j["key"]) and plans[j["key"]]["run_at"]), "scheduled job")
        claims_of(db, j["id"])[0]["claimed_at"] = plans[j["key"]]["run_at"] - dt.timedelta(seconds=1)

    @m("generation grew while claimed_at went back", "the second claim dated before the first")
    def _(db, sends, calls, plans, enq):
        j = _first(jobs_with(db, lambda j: j["gen"] >= 2), "re-claimed job")
        cs = claims_of(db, j["id"])
        cs[1]["claimed_at"] = cs[0]["claimed_at"] - dt.timedelta(seconds=1)

    @m("claimed again after a terminal finalize", "a retry that released a claim becomes `sent`")
    def _(db, sends, calls, plans, enq):
        f = _first(applied(db, lambda f: f["outcome"] == "retry" and f["status"] == "pending"), "applied retry")
        f["status"] = "sent"

    @m("two claims with overlapping unexpired leases", "a re-claim half a second before the lease end")
    def _(db, sends, calls, plans, enq):
        j, cs = reclaimed_after_expiry(db)
        cs[1]["claimed_at"] = cs[0]["lease_end"] - dt.timedelta(seconds=0.5)

    @m("finalize applied with an old generation", "an applied finalize left the row at a newer generation")
    def _(db, sends, calls, plans, enq):
        _first(applied(db, lambda f: True), "applied finalize")["post_gen"] += 1

    @m("finalize applied after its claim was superseded", "an applied retry dated after the next claim")
    def _(db, sends, calls, plans, enq):
        for f in applied(db, lambda f: f["outcome"] == "retry" and f["status"] == "pending"):
            nxt = [c for c in db["claims"] if c["job"] == f["job"] and c["gen"] == f["gen"] + 1]
            if nxt:
                f["at"] = nxt[0]["claimed_at"] + dt.timedelta(seconds=1)
                return
        raise LookupError("no retry followed by a claim")

    @m("finalize applied but the row says otherwise", "an applied `sent` left the row `failed`")
    def _(db, sends, calls, plans, enq):
        _first(applied(db, lambda f: f["outcome"] == "sent"), "applied sent")["status"] = "failed"

    @m("two applied finalizes for one claim", "a second applied finalize, of another outcome, for one claim")
    def _(db, sends, calls, plans, enq):
        f = _first(applied(db, lambda f: f["status"] in TERMINAL), "terminal finalize")
        db["finalizes"].append(dict(f, outcome="failed" if f["outcome"] == "sent" else "sent"))

    @m("a repeated finalize changed the job", "a repeat of an applied retry found the job at another attempt")
    def _(db, sends, calls, plans, enq):
        f = _first(applied(db, lambda f: f["outcome"] == "retry"), "applied retry")
        db["finalizes"].append(dict(f, attempts=f["attempts"] + 1))

    @m("a repeated finalize answered stale", "a repeat made after the first call committed answered stale")
    def _(db, sends, calls, plans, enq):
        f = _first(applied(db, lambda f: f["status"] in TERMINAL), "terminal finalize")
        later = f["at"] + dt.timedelta(seconds=1)
        db["finalizes"].append(dict(f, result="stale", txn_start=later, at=later))

    @m("finalize refused while holding the job", "a `stale` answer while the row was in_flight at that generation")
    def _(db, sends, calls, plans, enq):
        f = _first((f for f in db["finalizes"] if f["result"] == "stale"), "stale finalize")
        f.update(status="in_flight", post_gen=f["gen"])

    @m("finalize returned an unknown value", "a finalize answer that is neither applied nor stale")
    def _(db, sends, calls, plans, enq):
        db["finalizes"][0]["result"] = "maybe"

    @m("heartbeat applied with an old generation", "an applied heartbeat left the row at a newer generation")
    def _(db, sends, calls, plans, enq):
        _first((h for h in db["heartbeats"] if h["result"] == "applied"), "applied heartbeat")["post_gen"] += 1

    @m("heartbeat refused while holding the job", "a `stale` heartbeat while the row was in_flight at that generation")
    def _(db, sends, calls, plans, enq):
        h = _first((h for h in db["heartbeats"] if h["result"] == "stale"), "stale heartbeat")
        h.update(status="in_flight", post_gen=h["gen"])

    @m("heartbeat returned an unknown value", "a heartbeat answer that is neither applied nor stale")
    def _(db, sends, calls, plans, enq):
        db["heartbeats"][0]["result"] = "maybe"

    @m("job finalized to a terminal state twice", "an earlier claim of a finished job also finalized `failed`")
    def _(db, sends, calls, plans, enq):
        j = _first(jobs_with(db, lambda j: finalized(j) and j["gen"] >= 2), "re-claimed finished job")
        f = terminal_finalize(db, j["id"])
        db["finalizes"].append(dict(f, gen=1, post_gen=1, status="failed", outcome="failed"))

    @m("terminal job without exactly one event", "a second event for a job")
    def _(db, sends, calls, plans, enq):
        j = _first(jobs_with(db, lambda j: j["status"] in TERMINAL), "terminal job")
        db["events"][j["id"]].append(dict(db["events"][j["id"]][0]))

    @m("event kind differs from job status", "an event of the other kind")
    def _(db, sends, calls, plans, enq):
        e = db["events"][_first(jobs_with(db, lambda j: j["status"] == "sent"), "sent job")["id"]][0]
        e["kind"] = "failed"

    @m("event generation differs from the final claim_generation", "an event with an older generation")
    def _(db, sends, calls, plans, enq):
        db["events"][_first(jobs_with(db, lambda j: j["status"] in TERMINAL), "terminal job")["id"]][0]["gen"] -= 1

    @m("event transaction_id differs", "an event for another business row")
    def _(db, sends, calls, plans, enq):
        db["events"][_first(jobs_with(db, lambda j: j["status"] in TERMINAL), "terminal job")["id"]][0]["txn"] = "x"

    @m("terminal job not finished by an applied finalize of its last claim", "drop the job's terminal finalize")
    def _(db, sends, calls, plans, enq):
        j = _first(jobs_with(db, finalized), "finalized job")
        f = terminal_finalize(db, j["id"])
        db["finalizes"] = [x for x in db["finalizes"] if x is not f]

    @m("event for a job that is not terminal", "a finished job's row back in_flight (event kept)")
    def _(db, sends, calls, plans, enq):
        _first(jobs_with(db, lambda j: j["status"] in TERMINAL), "terminal job")["status"] = "in_flight"

    @m("terminal finalize applied but the job is not terminal", "a finished job's row back to pending")
    def _(db, sends, calls, plans, enq):
        _first(jobs_with(db, finalized), "finalized job")["status"] = "pending"

    @m("a finalize that returned applied is lost", "the event of a job whose finalize came back applied is gone")
    def _(db, sends, calls, plans, enq):
        c = _first(
            known(calls, "finalize", lambda c: c["result"] == "applied" and c.get("post") and c["post"][0] in TERMINAL),
            "applied terminal finalize",
        )
        db["events"][c["job"]] = []

    @m("business row does not match its job", "a sent job's business row still pending")
    def _(db, sends, calls, plans, enq):
        db["business"][_first(jobs_with(db, lambda j: j["status"] == "sent"), "sent job")["txn"]] = "pending"

    @m("business row history is not its jobs' stamps", "the stamp recorded twice")
    def _(db, sends, calls, plans, enq):
        j = _first(jobs_with(db, lambda j: j["status"] == "sent"), "sent job")
        db["history"][j["txn"]].append(("pending", "success"))

    @m("history shows a move between success and failed", "a success -> failed move in the history")
    def _(db, sends, calls, plans, enq):
        j = _first(jobs_with(db, lambda j: j["status"] == "sent"), "sent job")
        db["history"][j["txn"]].append(("success", "failed"))

    @m(
        "partner saw a generation go backwards while its lease was running",
        "a newer generation's send arrives before an older one",
    )
    def _(db, sends, calls, plans, enq):
        for j in jobs_with(db, lambda j: j["gen"] >= 2):
            rs = sends_of(sends, j["id"])
            if len(rs) >= 2 and rs[0]["gen"] < rs[1]["gen"]:
                rs[1]["t"] = rs[0]["t"] - 0.001
                return
        raise LookupError("no job sent twice")

    @m("partner got a send for a claim the database does not have", "a send under a generation nobody claimed")
    def _(db, sends, calls, plans, enq):
        sends.append(dict(sends[0], gen=10**6))

    @m("send before its claim", "a send dated a second before its claim")
    def _(db, sends, calls, plans, enq):
        r = sends[0]
        c = _first((c for c in db["claims"] if c["job"] == r["job"] and c["gen"] == r["gen"]), "claim")
        r["t"] = ts(c["claimed_at"]) - 1.0

    @m("a generation handed out to two claims", "a second claim call came back with a claim's (job, generation)")
    def _(db, sends, calls, plans, enq):
        first = _first(known(calls, "claim", lambda c: c["result"]), "claim that came back with jobs")
        calls.append(dict(first, id=max(c["id"] for c in calls) + 1, result=first["result"][:1]))

    @m("two sends under one generation", "the same (job, generation) sent twice")
    def _(db, sends, calls, plans, enq):
        sends.append(dict(sends[0], t=sends[0]["t"] + 0.0001))

    @m(
        "re-send before the previous holder's lease expired (or its retry was due)",
        "a re-send dated at the previous send",
    )
    def _(db, sends, calls, plans, enq):
        for j in jobs_with(db, lambda j: j["gen"] >= 2):
            rs = sends_of(sends, j["id"])
            if len(rs) >= 2 and rs[0]["gen"] < rs[1]["gen"]:
                rs[1]["t"] = rs[0]["t"] + 0.0001
                return
        raise LookupError("no job sent twice")

    @m("job sent without a successful send under its final claim", "the final send answered 500")
    def _(db, sends, calls, plans, enq):
        j = _first(jobs_with(db, lambda j: j["status"] == "sent"), "sent job")
        for r in sends:
            if r["job"] == j["id"] and r["gen"] == j["gen"]:
                r["code"] = 500

    @m("job sent but the partner never heard of it", "the partner's record of a sent job is gone")
    def _(db, sends, calls, plans, enq):
        j = _first(jobs_with(db, lambda j: j["status"] == "sent"), "sent job")
        sends[:] = [r for r in sends if r["job"] != j["id"]]

    # -- 8. at most max_attempts sends (giving up) ---------------------------------------

    @m("claimed more than max_attempts times", "a job that gave up has max_attempts one lower than its claims")
    def _(db, sends, calls, plans, enq):
        _first(jobs_with(db, gave_up), "job that gave up")["max_attempts"] -= 1

    @m("partner got more sends of a job than its max_attempts", "one more send of a poison job")
    def _(db, sends, calls, plans, enq):
        poison = {enq[k] for k, p in plans.items() if p.get("poison") and k in enq}
        r = _first((r for r in sorted(sends, key=lambda r: (-r["gen"], r["t"])) if r["job"] in poison), "poison send")
        n = db["jobs"][r["job"]]["max_attempts"] - len([x for x in sends if x["job"] == r["job"]])
        sends.extend(dict(r, t=r["t"] + 0.001 * (k + 1)) for k in range(n + 1))

    @m("gave up before its last attempt", "a job that gave up still had an attempt left")
    def _(db, sends, calls, plans, enq):
        _first(jobs_with(db, gave_up), "job that gave up")["max_attempts"] += 1

    @m("gave-up job's last_error does not name its last attempt", "another reason in last_error")
    def _(db, sends, calls, plans, enq):
        _first(jobs_with(db, gave_up), "job that gave up")["last_error"] = "sendjobs: gave up: who knows"

    @m("job both finalized and gave up", "a job finalized `failed` says it gave up")
    def _(db, sends, calls, plans, enq):
        j = _first(jobs_with(db, lambda j: finalized(j) and j["status"] == "failed"), "finalized failed job")
        j["last_error"] = GAVE_UP.format(n=j["max_attempts"])

    @m("gave up while its last lease was running", "the give-up dated half a second before the lease end")
    def _(db, sends, calls, plans, enq):
        j = _first(jobs_with(db, gave_up), "job that gave up")
        last = max((c for c in db["claims"] if c["job"] == j["id"]), key=lambda c: c["gen"])
        j["finished_at"] = db["events"][j["id"]][0]["at"] = last["lease_end"] - dt.timedelta(seconds=0.5)

    @m("finalize or heartbeat applied after the job gave up", "a late heartbeat of the last claim applied")
    def _(db, sends, calls, plans, enq):
        j = _first(jobs_with(db, gave_up), "job that gave up")
        h = dict(
            _first(db["heartbeats"], "heartbeat"),
            job=j["id"],
            gen=j["gen"],
            result="applied",
            status="failed",
            post_gen=j["gen"],
            at=j["finished_at"] + dt.timedelta(seconds=1),
        )
        db["heartbeats"].append(h)

    @m("poison job did not give up", "a poison job failed by a finalize")
    def _(db, sends, calls, plans, enq):
        poison = {enq[k] for k, p in plans.items() if p.get("poison") and k in enq}
        _first(jobs_with(db, lambda j: j["id"] in poison and gave_up(j)), "poison job")["last_error"] = "HTTP 500"

    @m("event time differs from the job's finished_at", "an event dated a second after its job finished")
    def _(db, sends, calls, plans, enq):
        e = db["events"][_first(jobs_with(db, lambda j: j["status"] in TERMINAL), "terminal job")["id"]][0]
        e["at"] += dt.timedelta(seconds=1)

    # -- cancel ----------------------------------------------------------------------------

    @m("a cancel answer that came back is not in the database (lost commit)", "flip a returned cancel's witness")
    def _(db, sends, calls, plans, enq):
        c = _first(known(calls, "cancel"), "returned cancel")
        w = _first((w for w in db["cancels"] if w["call"] == c["id"]), "witness")
        w["result"] = "stale" if w["result"] == "applied" else "applied"

    @m("cancel applied but the row says otherwise", "an applied cancel left the row pending")
    def _(db, sends, calls, plans, enq):
        applied_cancel(db)[1]["status"] = "pending"

    @m("cancel refused an open job", "a `stale` cancel while the row was in_flight")
    def _(db, sends, calls, plans, enq):
        _first((w for w in db["cancels"] if w["result"] == "stale"), "stale cancel")["status"] = "in_flight"

    @m("cancel returned an unknown value", "a cancel answer that is neither applied nor stale")
    def _(db, sends, calls, plans, enq):
        _first(db["cancels"], "cancel")["result"] = "maybe"

    @m("cancel applied but the job is not cancelled at the end", "a cancelled job back to pending")
    def _(db, sends, calls, plans, enq):
        applied_cancel(db)[0]["status"] = "pending"

    @m("job cancelled without exactly one applied cancel", "a second applied cancel of one job")
    def _(db, sends, calls, plans, enq):
        db["cancels"].append(dict(applied_cancel(db)[1]))

    @m("cancelled job was also finished by a finalize", "an applied `sent` finalize of a cancelled job")
    def _(db, sends, calls, plans, enq):
        j, w, t = applied_cancel(db)
        f = _first(applied(db, lambda f: True), "applied finalize")
        db["finalizes"].append(
            dict(
                f,
                job=j["id"],
                gen=j["gen"],
                outcome="sent",
                status="sent",
                post_gen=j["gen"],
                at=t - dt.timedelta(seconds=1),
            )
        )

    @m("claimed after it was cancelled", "a claim a second after the cancel committed")
    def _(db, sends, calls, plans, enq):
        j, w, t = applied_cancel(db)
        db["claims"].append(
            dict(
                _first(db["claims"], "claim"),
                job=j["id"],
                gen=j["gen"] + 1,
                claimed_at=t + dt.timedelta(seconds=1),
                lease_end=t + dt.timedelta(seconds=2),
            )
        )

    @m("finalize or heartbeat applied after the cancel", "an applied heartbeat a second after the cancel")
    def _(db, sends, calls, plans, enq):
        j, w, t = applied_cancel(db)
        db["heartbeats"].append(
            dict(
                _first(db["heartbeats"], "heartbeat"),
                job=j["id"],
                gen=j["gen"],
                result="applied",
                status="in_flight",
                post_gen=j["gen"],
                at=t + dt.timedelta(seconds=1),
            )
        )

    @m("cancelled job's business row was stamped", "a cancelled job's business row stamped failed")
    def _(db, sends, calls, plans, enq):
        j, w, t = applied_cancel(db)
        db["business"][j["txn"]] = "failed"

    # -- redrive ---------------------------------------------------------------------------

    @m("a redrive that came back is not in the database (lost commit)", "a returned new job lost its redrive_of")
    def _(db, sends, calls, plans, enq):
        c = _first(known(calls, "redrive", lambda c: isinstance(c["result"], dict) and c["result"]), "redrive")
        db["jobs"][next(iter(c["result"].values()))]["redrive_of"] = None

    @m("failed job redriven twice", "a second new job for one failed job")
    def _(db, sends, calls, plans, enq):
        _, new = redriven(db)
        db["jobs"][10**12] = dict(new, id=10**12)

    @m("a job redriven that nobody redrove", "a new job for a failed job no redrive call named")
    def _(db, sends, calls, plans, enq):
        asked = {i for c in calls if c["kind"] == "redrive" for i in c["ids"]}
        old = _first(jobs_with(db, lambda j: j["status"] == "failed" and j["id"] not in asked), "failed job")
        db["jobs"][10**12] = dict(old, id=10**12, redrive_of=old["id"], key=None)

    @m("redrive_of names a job that is not failed", "the redriven job became sent")
    def _(db, sends, calls, plans, enq):
        redriven(db)[0]["status"] = "sent"

    @m("redriven job differs from its failed job", "the new job with another payload")
    def _(db, sends, calls, plans, enq):
        redriven(db)[1]["payload"] = {"other": True}

    @m("redriving a job again returned another new job", "a second redrive of a job answered another new id")
    def _(db, sends, calls, plans, enq):
        c = _first(known(calls, "redrive", lambda c: isinstance(c["result"], dict) and c["result"]), "redrive")
        calls.append(dict(c, id=10**12, result={k: v + 10**6 for k, v in c["result"].items()}))

    # -- purge -----------------------------------------------------------------------------

    @m("an old finished job was not purged", "one job seeded a day ago still there")
    def _(db, sends, calls, plans, enq):
        jid = min(ctx.seeded_old)
        db["jobs"][jid] = dict(_first(jobs_with(db, lambda j: j["status"] == "sent"), "sent job"), id=jid)

    @m("purge deleted a job that finished within the hour", "a job seeded as finished 10 minutes ago is gone")
    def _(db, sends, calls, plans, enq):
        del db["jobs"][min(ctx.seeded_recent)]

    @m("purge deleted more than the old jobs", "a purge that came back deleted a few rows more")
    def _(db, sends, calls, plans, enq):
        _first(known(calls, "purge"), "returned purge")["result"] += len(ctx.seeded_old) + 1

    @m("a job the run made or claimed is gone", "a redrive's new job deleted")
    def _(db, sends, calls, plans, enq):
        del db["jobs"][redriven(db)[1]["id"]]

    # -- stats -----------------------------------------------------------------------------

    @m(
        "sendjobs_stats disagrees with the rows",
        "100,000 sent events too many in a queue's last 5 minutes (outside an estimate's allowance as well)",
    )
    def _(db, sends, calls, plans, enq):
        _first(db["stats"]["rows"].values(), "stats row")["sent_5m"] += 100_000

    @m("sendjobs_stats disagrees with the rows", "one job more in flight in a queue (a count that is always exact)")
    def _(db, sends, calls, plans, enq):
        _first(db["stats"]["rows"].values(), "stats row")["in_flight"] += 1

    # -- flow control ------------------------------------------------------------------

    def limited_claims(db):
        return [c for c in db["claims"] if db["jobs"].get(c["job"], {}).get("queue") == LIMITED_QUEUE]

    def copies(c, jobs, **fields):
        """Claims of other jobs of the limited partner, as claim c was made (a claim that took
        more than the limits allow, or the key's rule)."""
        return [dict(c, job=j, gen=10**6 + n, call=10**12 + n, **fields) for n, j in enumerate(jobs)]

    @m("more jobs in flight than the queue's cap", "one claim of the capped queue took its cap's worth more")
    def _(db, sends, calls, plans, enq):
        c = _first(limited_claims(db), "claim of the limited queue")
        others = [j for j in sorted(db["jobs"]) if db["jobs"][j]["queue"] == LIMITED_QUEUE and j != c["job"]]
        db["claims"] += copies(c, others[: LIMITS["max_in_flight"]])

    @m("claimed faster than the queue's rate", "a burst's worth of claims more, at one instant, each released at once")
    def _(db, sends, calls, plans, enq):
        c = _first(limited_claims(db), "claim of the limited queue")
        others = [j for j in sorted(db["jobs"]) if db["jobs"][j]["queue"] == LIMITED_QUEUE and j != c["job"]]
        db["claims"] += copies(c, others[: LIMITS["burst"]], lease_end=c["claimed_at"])

    @m("claimed from a paused queue", "a claim of the paused partner in the middle of a pause")
    def _(db, sends, calls, plans, enq):
        p = _first(
            (c for c in calls if c["kind"] == "pause" and c.get("paused_by") and c.get("resume_sent")),
            "pause that came back",
        )
        c = _first(limited_claims(db), "claim of the limited queue")
        at = dt.datetime.fromtimestamp((p["paused_by"] + p["resume_sent"]) / 2, dt.timezone.utc)
        c.update(claimed_at=at, lease_end=at)

    def key_pair(db, older_ok=lambda j: True):
        """Two jobs of one ordering key, each claimed: (older, younger)."""
        claimed = {c["job"] for c in db["claims"]}
        lines = {}
        for j in sorted(db["jobs"]):
            key = db["jobs"][j]["ordering_key"]
            if key is not None and j in claimed:
                lines.setdefault(key, []).append(j)
        pairs = (p for v in lines.values() for p in zip(v, v[1:]) if older_ok(p[0]))
        return _first(pairs, "key with two claimed jobs")

    @m("two jobs of one ordering key in flight", "a younger job of a key claimed while the older was held")
    def _(db, sends, calls, plans, enq):
        older, younger = key_pair(db)
        c = claims_of(db, older)[0]
        during = c["committed_at"] + dt.timedelta(microseconds=1)
        db["claims"] += copies(c, [younger], claimed_at=during, committed_at=during)

    @m(
        "a job of an ordering key claimed before an older one finished",
        "a younger job's first claim made (and committed) before its key's older job was claimed",
    )
    def _(db, sends, calls, plans, enq):
        # Just before the older job's first claim, and after its enqueue came back (the
        # checker compares only jobs known committed when the younger's claim began).
        came_back = {jid: c["t1"] for c in known(calls, "enqueue") for jid in c["result"].values()}

        def just_before_first_claim(jid):
            return claims_of(db, jid)[0]["claimed_at"] - dt.timedelta(milliseconds=1)

        older, younger = key_pair(db, lambda j: came_back.get(j, float("inf")) < just_before_first_claim(j).timestamp())
        early = just_before_first_claim(older)
        for c in claims_of(db, younger)[:1]:
            c.update(claimed_at=early, lease_end=early, committed_at=early)

    # -- the fair share ----------------------------------------------------------------

    @m(
        "a claim from any queue passed over a queue with due jobs",
        "a claim from any queue without its jobs of one queue, while many of that queue's waited (the claim "
        "in one order across the queues that 0.3.1 made)",
    )
    def _(db, sends, calls, plans, enq):
        run = types.SimpleNamespace(
            record=types.SimpleNamespace(calls=calls),
            plans=plans,
            seeded_old=ctx.seeded_old,
            seeded_recent=ctx.seeded_recent,
            args=getattr(ctx, "args", None),
        )
        fair = FairShare(Evidence(run, db, sends))
        for call, _, t_claim, t_commit, queues in fair.claims():
            for q in QUEUES:
                if 0 < queues[q] < sum(queues.values()) and fair.waiting(q, t_claim, t_commit) > fair.slack(
                    t_claim, t_commit
                ):
                    db["claims"] = [
                        w for w in db["claims"] if not (w["call"] == call and db["jobs"][w["job"]]["queue"] == q)
                    ]
                    return
        raise LookupError("no claim from any queue that took two queues' jobs while many waited")

    # -- the outbox's relay -----------------------------------------------------------

    @m("an event read twice by one consumer", "one event relayed a second time (a read that moved no position)")
    def _(db, sends, calls, plans, enq):
        db["relayed"].append(_first(db["relayed"], "relayed event"))

    @m("an event the relay never read", "one relayed event missing (a position moved past an event: the naive reader)")
    def _(db, sends, calls, plans, enq):
        db["relayed"].remove(_first(db["relayed"], "relayed event"))

    @m("the relay read an event of no finished job of the run", "a relayed event of a job that never existed")
    def _(db, sends, calls, plans, enq):
        db["relayed"].append(max(db["jobs"]) + 1000)

    return M


def _in_doubt(db, sends, calls, plans, enq):
    """A finalize whose answer never came back: the caller is in doubt."""
    call = _first((c for c in calls if c["kind"] == "finalize" and c["known"]), "finalize that came back")
    call["known"] = False


def _loss_mutations(mutations):
    """(loss kind, what the mutation does, function): one mutation that makes each kind of
    loss (checker.LOSS_KINDS), taken from the checks' own where one exists."""
    by_check = {check: (doc, fn) for check, doc, fn in mutations}
    return [
        ("lost", *by_check["job lost"]),
        ("duplicate", *by_check["a generation handed out to two claims"]),
        ("ghost", *by_check["partner got a send for a claim the database does not have"]),
        ("in doubt", "a finalize's answer never came back", _in_doubt),
    ]


class _Snapshot:
    """A stand-in for a run's Context, on copies of its records."""

    def __init__(self, ctx, calls, plans, enqueued):
        self.violations = Violations()
        self.record = Record()
        self.record.calls = calls
        self.plans = plans
        self.enqueued = enqueued
        self.seeded_old, self.seeded_recent = ctx.seeded_old, ctx.seeded_recent
        self.relay = getattr(ctx, "relay", False)
        self.args = getattr(ctx, "args", None)


def _checked(ctx, db, sends, mutate=None):
    """The checker run on copies of a run's records, `mutate` applied to them first (it
    raises LookupError when the run has nothing to mutate). Returns (its violations, its
    stats)."""
    db2, sends2 = copy.deepcopy(db), copy.deepcopy(sends)
    calls2 = copy.deepcopy(ctx.record.calls)
    snap = _Snapshot(ctx, calls2, ctx.plans, dict(ctx.enqueued))
    if mutate:
        mutate(db2, sends2, calls2, snap.plans, snap.enqueued)
    stats = {}
    check_everything(snap, db2, sends2, stats, require_terminal=True)
    return snap.violations, stats


def checker_self_test(ctx, db, sends):
    """Runs the checker once per mutation of a clean run's records, and once per kind of
    loss. Returns a list of (check, what was mutated, what it reported, caught?)."""
    out = []
    mutations = _mutations(ctx)
    _, clean = _checked(ctx, db, sends)
    for kind, doc, fn in _loss_mutations(mutations):
        try:
            _, stats = _checked(ctx, db, sends, fn)
        except LookupError as e:
            out.append((f"loss counted: {kind}", doc, [f"(not run: {e})"], False))
            continue
        before, after = clean["losses"][kind], stats["losses"][kind]
        out.append((f"loss counted: {kind}", doc, [f"{kind}: {before} -> {after}"], after > before))
    for check, doc, fn in mutations:
        try:
            violations, _ = _checked(ctx, db, sends, fn)
        except LookupError as e:
            out.append((check, doc, [f"(not run: {e})"], False))
            continue
        reported = sorted(violations.items)
        out.append((check, doc, reported, check in reported))
    return out
