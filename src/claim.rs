//! sendjobs_claim: take up to `batch` due jobs under a lease, in one statement.

use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::clock::wall_clock;
use crate::config;
use crate::errors::{or_raise, required, Result, SendJobsError};
use crate::spi_plans::{execute, plan};

/// The claim, for any queue ($4 unused) or one queue. Two index-ordered branches instead
/// of one `OR` predicate (under ORDER BY ... LIMIT an OR makes Postgres sort every
/// eligible row): pending rows come from send_jobs_pending_idx (or
/// send_jobs_pending_queue_idx) already in claim order, expired leases from
/// send_jobs_lease_idx (few rows: only in_flight ones). Each branch stops after `batch`
/// rows it could lock, so a batch of N reads about N index entries whatever the backlog.
/// Postgres allows no row locks under UNION, hence one CTE per branch; when both branches
/// have rows, up to `batch` rows that lose the merge stay locked (not claimed) until the
/// caller's transaction ends. Every CTE is MATERIALIZED so the UPDATE touches exactly
/// the rows the LIMITs picked. An expired row keeps its place by next_attempt_at, so
/// reclaimed work is not starved behind a pending backlog.
/// `lease_expires_at IS NOT NULL` is implied by `<= $1` but not redundant: under the
/// generic plan `<= $1` is costed as a third of the table whatever the statistics say,
/// while the null test is costed from the share of rows that hold a lease; without it,
/// statistics taken while few jobs were in flight can make a sequential scan look as
/// cheap as the lease index (test: the_expired_branch_keeps_to_the_lease_index...).
macro_rules! claim_sql {
    ($queue_filter:literal) => {
        concat!(
            "WITH pending AS MATERIALIZED (
                SELECT id, next_attempt_at FROM @extschema@.send_jobs
                 WHERE status = 'pending' AND next_attempt_at <= $1 ",
            $queue_filter,
            "  ORDER BY next_attempt_at, id
                 LIMIT $2
                 FOR UPDATE SKIP LOCKED
            ),
            expired AS MATERIALIZED (
                SELECT id, next_attempt_at FROM @extschema@.send_jobs
                 WHERE status = 'in_flight' AND lease_expires_at <= $1
                   AND lease_expires_at IS NOT NULL ",
            $queue_filter,
            "  ORDER BY next_attempt_at, id
                 LIMIT $2
                 FOR UPDATE SKIP LOCKED
            ),
            picked AS MATERIALIZED (
                SELECT id, next_attempt_at FROM pending
                UNION ALL
                SELECT id, next_attempt_at FROM expired
                ORDER BY next_attempt_at, id
                LIMIT $2
            ),
            claimed AS (
                UPDATE @extschema@.send_jobs AS job
                   SET status = 'in_flight',
                       attempts = job.attempts + 1,
                       claimed_at = $1,
                       lease_expires_at = $1 + $3,
                       claim_generation = job.claim_generation + 1
                  FROM picked
                 WHERE job.id = picked.id
             RETURNING job, job.next_attempt_at, job.id
            )
            SELECT job FROM claimed ORDER BY next_attempt_at, id"
        )
    };
}

pub(crate) const CLAIM_ANY_QUEUE: &str = claim_sql!("AND $4::text IS NULL");
const CLAIM_ONE_QUEUE: &str = claim_sql!("AND queue = $4");

/// Claims up to `batch` jobs: pending ones that are due, and in_flight ones whose lease
/// (as their own claimer asked for it) has expired. Returns the rows as updated; keep
/// `id` and `claim_generation` to finalize or heartbeat.
#[pg_extern(volatile, parallel_unsafe)]
fn sendjobs_claim(
    batch: default!(Option<i32>, 1),
    lease: default!(Option<Interval>, "NULL"),
    queue: default!(Option<&str>, "NULL"),
) -> SetOfIterator<'static, pgrx::composite_type!('static, "send_jobs")> {
    SetOfIterator::new(or_raise(claim(batch, lease, queue)))
}

fn claim(
    batch: Option<i32>,
    lease: Option<Interval>,
    queue: Option<&str>,
) -> Result<Vec<pgrx::composite_type!('static, "send_jobs")>> {
    let batch = required(batch, "batch")?;
    let max = config::max_batch();
    if !(1..=max).contains(&batch) {
        return Err(SendJobsError::BatchOutOfRange { got: batch, max });
    }
    let lease = lease_or_default(lease)?;
    let now = wall_clock();

    Spi::connect_mut(|client| {
        let sql = if queue.is_some() {
            CLAIM_ONE_QUEUE
        } else {
            CLAIM_ANY_QUEUE
        };
        let claim = plan(
            client,
            sql,
            &[
                pg_sys::TIMESTAMPTZOID.into(),
                pg_sys::INT8OID.into(),
                pg_sys::INTERVALOID.into(),
                pg_sys::TEXTOID.into(),
            ],
        )?;
        let rows = execute(
            client,
            &claim,
            &[
                now.into(),
                i64::from(batch).into(),
                lease.into(),
                queue.into(),
            ],
        )?;
        rows.map(|row| {
            row.get::<pgrx::composite_type!('static, "send_jobs")>(1)?
                .ok_or_else(|| SendJobsError::Internal("claim returned a NULL row".into()))
        })
        .collect()
    })
}

/// The lease to grant: the caller's, or `sendjobs.default_lease`. Never negative.
pub fn lease_or_default(lease: Option<Interval>) -> Result<Interval> {
    let lease = lease
        .unwrap_or_else(|| Interval::from_micros(i64::from(config::default_lease_ms()) * 1_000));
    // Compared as Postgres compares intervals (30-day months, 24-hour days).
    if lease.as_micros() < 0 {
        return Err(SendJobsError::Negative("lease"));
    }
    Ok(lease)
}
