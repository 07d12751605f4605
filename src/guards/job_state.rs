//! The state rule every row of send_jobs and send_jobs_finished obeys, attached as one
//! CHECK per table (sql/job_state.sql).

use pgrx::prelude::*;

/// True when a row's columns agree with its status and its table: in send_jobs itself
/// (`live`) a `pending` row, which has no lease and is not finished, or an `in_flight`
/// row, which has a lease and a claim time and is not finished; in send_jobs_finished
/// (not `live`) a `sent`, `failed` or `cancelled` row, which is finished and has no lease.
/// Counters are in range. A lease exists exactly while a job is held: the claim relies on
/// it (its expired-lease branch reads send_jobs_lease_idx, whose predicate is the lease).
///
/// A function, and one CHECK per table, for speed: Postgres reads every CHECK of a table
/// back from its stored node text, and plans it, in each statement that writes a row. This
/// call is a fifth of six CHECK expressions' text and leaves the planner nothing to fold;
/// `live` spares send_jobs a CHECK of its own for its statuses (decision 0014, "One CHECK
/// a table"). (The history's CHECK still lists its statuses, for the planner:
/// sql/job_state.sql.)
#[allow(clippy::too_many_arguments)]
#[pg_extern(immutable, parallel_safe, name = "sendjobs_job_state_is_valid")]
fn job_state_is_valid(
    status: Option<&str>,
    attempts: Option<i32>,
    max_attempts: Option<i32>,
    claim_generation: Option<i64>,
    claimed_at: Option<TimestampWithTimeZone>,
    lease_expires_at: Option<TimestampWithTimeZone>,
    finished_at: Option<TimestampWithTimeZone>,
    live: Option<bool>,
) -> bool {
    let counters_in_range = attempts.is_some_and(|n| n >= 0)
        && max_attempts.is_some_and(|n| n >= 1)
        && claim_generation.is_some_and(|n| n >= 0);
    let (claimed, leased, finished) = (
        claimed_at.is_some(),
        lease_expires_at.is_some(),
        finished_at.is_some(),
    );
    let columns_agree = match (status, live) {
        (Some("pending"), Some(true)) => !leased && !finished,
        (Some("in_flight"), Some(true)) => leased && claimed && !finished,
        (Some("sent" | "failed" | "cancelled"), Some(false)) => !leased && finished,
        _ => false,
    };
    counters_in_range && columns_agree
}

/// The rule of releases before 0.3.0 (seven arguments, any status in either table), under
/// its old symbol and with no SQL of its own: the update scripts from 0.1.0 and 0.2.0,
/// which run in the same ALTER EXTENSION as the one to 0.3.0, bind that function to this
/// library and write rows under its CHECK before the update to 0.3.0 replaces both
/// (tests/upgrade: "unboxing live_ argument failed" without it).
#[pg_extern(immutable, parallel_safe, sql = false)]
fn sendjobs_job_state_is_valid(
    status: Option<&str>,
    attempts: Option<i32>,
    max_attempts: Option<i32>,
    claim_generation: Option<i64>,
    claimed_at: Option<TimestampWithTimeZone>,
    lease_expires_at: Option<TimestampWithTimeZone>,
    finished_at: Option<TimestampWithTimeZone>,
) -> bool {
    let live = status.map(|status| matches!(status, "pending" | "in_flight"));
    job_state_is_valid(
        status,
        attempts,
        max_attempts,
        claim_generation,
        claimed_at,
        lease_expires_at,
        finished_at,
        live,
    )
}

pgrx::extension_sql_file!(
    "../../sql/job_state.sql",
    name = "job_state",
    requires = [job_state_is_valid]
);
