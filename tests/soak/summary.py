"""The summary of a checked run: the lines the demo and the soak both print (from the
checker's stats and the record's counters), and the two-column table they print them in.
Each main adds its own lines (faults, run time, violations) before printing.
"""

from .records import LIMITED_QUEUE, LIMITS


def summary_lines(ctx, stats):
    """The lines both the demo and the soak print about a checked run."""
    c = ctx.record.counters
    codes = stats.get("partner_codes", {})
    g = lambda k: stats.get(k, 0)  # noqa: E731
    return [
        (
            "jobs",
            f"{g('jobs')}  (sent {g('sent')}, failed {g('failed')}: 422 -> 'failed' {g('failed_direct')},"
            f" retry -> failed at max_attempts {g('failed_by_max_attempts')}, gave up when the lease of"
            f" the last attempt expired {g('gave_up')}; cancelled {g('cancelled')})",
        ),
        ("events (outbox rows)", f"{g('events')}"),
        (
            "losses",
            "lost {lost}, duplicate {duplicate}, in doubt {in doubt}, ghost {ghost}".format_map(
                stats.get("losses", {"lost": 0, "duplicate": 0, "in doubt": 0, "ghost": 0})
            )
            + "  (acknowledged then gone; one generation held or sent twice; answer never came back;"
            " a send under a claim the database does not have)",
        ),
        (
            "claims",
            f"{g('claims')} witnessed  (re-claimed after lease expiry {g('reclaims_after_expiry')},"
            f" after retry {g('reclaims_after_retry')}; committed but never seen by their worker"
            f" {g('claims_invisible')}; longest wait past an expired lease {g('max_reclaim_delay'):.3f} s)",
        ),
        (
            "sends (partner requests)",
            f"{g('partner_requests')}  (200: {codes.get(200, 0)}, 500: {codes.get(500, 0)}, 422: {codes.get(422, 0)})",
        ),
        (
            "re-sends",
            f"{g('resends')} on {g('resent_jobs')} jobs  (after partner error + retry:"
            f" {g('resends_after_retry')}, after a lease expiry: {g('resends_after_expiry')};"
            f" each checked: claimed and sent at/after the previous holder's lease end or retry time)",
        ),
        (
            "duplicate deliveries",
            f"{g('duplicate_deliveries')}  (a 2nd+ HTTP 200 for one job: at-least-once, each after a lease expiry)",
        ),
        (
            "finalizes",
            f"{g('finalize_calls')} (by sendjobs_finalize_batch: {g('finalize_batched')} in"
            f" {c['finalize_batch_calls']} calls): applied {g('finalize_applied')}, stale {g('finalize_stale')},"
            f" unknown {g('finalize_unknown')} (committed {g('finalize_unknown_committed')},"
            f" not committed {g('finalize_unknown_not_committed')}); repeats of an applied one,"
            f" answered applied: {g('repeated_finalizes')}",
        ),
        (
            "stale finalizes refused",
            f"{g('stale_finalizes')}  (late finalizes after a pause:"
            f" stale {c['late_finalize_stale']}, applied {c['late_finalize_applied']};"
            f" woken while a newer claim held the job {c['pause_woken_while_reclaimed']})",
        ),
        (
            "heartbeats",
            f"applied {c['heartbeat_applied']}, stale {c['heartbeat_stale']},"
            f" unknown {g('heartbeat_unknown')}  (slow sends {c['slow_sends']};"
            f" jobs dropped after a stale heartbeat {c['dropped_after_stale_heartbeat']})",
        ),
        ("retries", f"with retry_at {c['retry_retry_at']}, with backoff (retry_at NULL) {c['retry_backoff']}"),
        (
            "sends after own lease",
            f"{g('sends_after_own_lease')}  (information: a send that started after its claim's lease end)",
        ),
        (
            "flow control",
            f"{LIMITED_QUEUE}: cap {LIMITS['max_in_flight']}, at most {g('cap_peak')} in flight;"
            f" rate {LIMITS['rate']:g}/s, burst {LIMITS['burst']}, {g('rate_claims')} claims;"
            f" {g('ordered_claims')} jobs claimed behind an older one of their key"
            f" ({g('ordered_committed_after')} before an older one whose enqueue or redrive came back later);"
            f" paused {g('pauses')} times",
        ),
        (
            "fair share",
            f"{g('fair_share_claims')} claims from any queue that re-claimed no expired lease;"
            f" {g('fair_share_compared')} times one of them was compared with a queue of more due jobs"
            f" than other calls could hold locked: each took some of that queue's",
        ),
        (
            "guard refusals",
            f"{c['guard_refusals']} of {c['guard_attempts']} flips tried  "
            f"(rowcount 0: {c['guard_refusals_rowcount0']}, with WARNING: {c['guard_warnings']};"
            f" the row had moved on before the flip, by a redrive: {c['guard_flips_overtaken']})",
        ),
    ]


def print_table(lines):
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        print(f"   {k:<{width}}  {v}")
