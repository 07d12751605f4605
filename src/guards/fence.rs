//! The fence around a claim, shared by the calls that act on one (finalize, heartbeat,
//! cancel): a claim is `(id, claim_generation)`, a call applies only while it is the
//! job's current claim of an in_flight row, and answers `applied` or `stale`
//! (docs/contract.md, invariant 3). And the lease a claim or a heartbeat grants.

use pgrx::prelude::*;
use pgrx::spi::SpiClient;

use crate::machinery::config;
use crate::machinery::errors::{required, Result, SendJobsError};
use crate::machinery::statements::{first, statement, Statement};

/// The answer of a call that applied.
pub const APPLIED: &str = "applied";
/// The answer of a call that did not apply: the job exists, and the call changed nothing.
pub const STALE: &str = "stale";

static JOB_EXISTS: Statement = statement!("job_exists.sql");

/// A claim's generation as a caller passes it: required, never negative.
pub fn fenced_generation(generation: Option<i64>) -> Result<i64> {
    let generation = required(generation, "generation")?;
    if generation < 0 {
        return Err(SendJobsError::Negative("generation"));
    }
    Ok(generation)
}

/// A fenced change that matched nothing: `stale` for a job that exists, an error (P0002)
/// otherwise.
pub fn stale_or_unknown(client: &SpiClient<'_>, id: i64) -> Result<&'static str> {
    let found = first::<bool>(JOB_EXISTS.run(client, &[id.into()])?, "job_exists")?;
    match found {
        Some(true) => Ok(STALE),
        _ => Err(SendJobsError::UnknownJob(id)),
    }
}

/// The least generation a claim hands out on this server: its WAL timeline less one,
/// times 2^32. A promotion starts a new timeline, so a claim made after a failover never
/// repeats a generation that a claim lost with the old primary had handed out
/// (docs/contract.md, invariant 2; decision 0025). On timeline 1 it is 0: a claim adds 1.
pub fn generation_floor() -> i64 {
    // SAFETY: both read shared memory set up before any backend runs SQL; the timeline
    // is read only once recovery is over (a claim during recovery fails as read-only).
    let timeline = unsafe {
        if pg_sys::RecoveryInProgress() {
            return 0;
        }
        pg_sys::GetWALInsertionTimeLine()
    };
    // Past timeline 2^31 it would wrap (two billion promotions): it saturates instead,
    // and the claims then fail (bigint out of range) rather than repeat a generation.
    (i64::from(timeline) - 1)
        .checked_mul(1 << 32)
        .unwrap_or(i64::MAX)
}

/// The lease to grant: the caller's, or `sendjobs.default_lease`. Never negative, never
/// shorter than `sendjobs.min_lease`, never longer than `sendjobs.max_lease`.
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
    let max_ms = config::max_lease_ms();
    if micros > i128::from(max_ms) * 1_000 {
        return Err(SendJobsError::InvalidArgument(format!(
            "a lease must be at most sendjobs.max_lease ({max_ms} ms), got {} s; \
             a number without a unit is read as seconds",
            micros / 1_000_000
        )));
    }
    Ok(lease)
}
