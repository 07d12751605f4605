//! The state rule every send_jobs row obeys, attached as one CHECK (sql/job_state.sql).

use pgrx::prelude::*;

/// True when a send_jobs row's columns agree with its status: a `pending` row has no
/// lease and is not finished; an `in_flight` row has a lease and a claim time and is not
/// finished; a `sent`, `failed` or `cancelled` row is finished and has no lease. Counters
/// are in range. A lease exists exactly while a job is held: the claim relies on it (its
/// expired-lease branch reads send_jobs_lease_idx, whose predicate is the lease).
///
/// A function, not six CHECK expressions, for speed: Postgres reads every CHECK of a
/// table back from its stored node text, and plans it, in each statement that writes a
/// row; for the six expressions that was about a tenth of a single-row UPDATE's time
/// (perf). This call is a fifth of their text and leaves the planner nothing to fold.
#[pg_extern(immutable, parallel_safe)]
fn sendjobs_job_state_is_valid(
    status: Option<&str>,
    attempts: Option<i32>,
    max_attempts: Option<i32>,
    claim_generation: Option<i64>,
    claimed_at: Option<TimestampWithTimeZone>,
    lease_expires_at: Option<TimestampWithTimeZone>,
    finished_at: Option<TimestampWithTimeZone>,
) -> bool {
    let counters_in_range = attempts.is_some_and(|n| n >= 0)
        && max_attempts.is_some_and(|n| n >= 1)
        && claim_generation.is_some_and(|n| n >= 0);
    let (claimed, leased, finished) = (
        claimed_at.is_some(),
        lease_expires_at.is_some(),
        finished_at.is_some(),
    );
    let columns_agree = match status {
        Some("pending") => !leased && !finished,
        Some("in_flight") => leased && claimed && !finished,
        Some("sent" | "failed" | "cancelled") => !leased && finished,
        _ => false,
    };
    counters_in_range && columns_agree
}

pgrx::extension_sql_file!(
    "../sql/job_state.sql",
    name = "job_state",
    requires = [sendjobs_job_state_is_valid]
);
