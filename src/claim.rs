//! sendjobs_claim: take up to `batch` due jobs under a lease, in one statement.

use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::clock::wall_clock;
use crate::config;
use crate::errors::{or_raise, required, Result, SendJobsError};
use crate::spi_plans::{execute, plan};
use crate::statements::{CLAIM_ANY_QUEUE, CLAIM_ONE_QUEUE};

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
        // Two statements, not one with `($4 IS NULL OR queue = $4)`: each keeps its own
        // index under a generic plan (sql/statements/claim.sql).
        let sql = if queue.is_some() {
            &CLAIM_ONE_QUEUE
        } else {
            &CLAIM_ANY_QUEUE
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

/// The lease to grant: the caller's, or `sendjobs.default_lease`. Never negative, never
/// shorter than `sendjobs.min_lease`.
pub fn lease_or_default(lease: Option<Interval>) -> Result<Interval> {
    let lease = lease
        .unwrap_or_else(|| Interval::from_micros(i64::from(config::default_lease_ms()) * 1_000));
    // Compared as Postgres compares intervals (30-day months, 24-hour days).
    let micros = lease.as_micros();
    if micros < 0 {
        return Err(SendJobsError::Negative("lease"));
    }
    let min_ms = config::min_lease_ms();
    if micros < i128::from(min_ms) * 1_000 {
        return Err(SendJobsError::InvalidArgument(format!(
            "a lease must be at least sendjobs.min_lease ({min_ms} ms)"
        )));
    }
    Ok(lease)
}
