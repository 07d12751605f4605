//! sendjobs_finalize and sendjobs_heartbeat: fenced by (status = in_flight, claim_generation).

use std::str::FromStr;

use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::spi::SpiClient;

use crate::claim::lease_or_default;
use crate::clock::wall_clock;
use crate::config;
use crate::errors::{or_raise, required, Result, SendJobsError};
use crate::link;
use crate::spi_plans::{first_value, plan};

const APPLIED: &str = "applied";
const STALE: &str = "stale";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Sent,
    Failed,
    Retry,
}

impl FromStr for Outcome {
    type Err = SendJobsError;

    fn from_str(text: &str) -> Result<Self> {
        match text {
            "sent" => Ok(Self::Sent),
            "failed" => Ok(Self::Failed),
            "retry" => Ok(Self::Retry),
            other => Err(SendJobsError::UnknownOutcome(other.to_owned())),
        }
    }
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Self::Sent => "sent",
            Self::Failed => "failed",
            Self::Retry => "retry",
        }
    }
}

/// One statement: the fenced update, the event for a terminal result, and what the
/// business-row stamp needs. A retry past max_attempts becomes `failed`. The backoff is
/// base * 2^(attempts - 1) capped at max, computed in milliseconds (no interval overflow).
const FINALIZE_SQL: &str = "
    WITH done AS (
        UPDATE @extschema@.send_jobs AS job
           SET status = CASE WHEN $3 <> 'retry' THEN $3
                             WHEN job.attempts < job.max_attempts THEN 'pending'
                             ELSE 'failed' END,
               next_attempt_at = CASE
                   WHEN $3 = 'retry' AND job.attempts < job.max_attempts
                   THEN coalesce($5, $4 + pg_catalog.make_interval(secs =>
                            least($7, $6 * pg_catalog.power(2::float8, least(job.attempts - 1, 40))) / 1000.0))
                   ELSE job.next_attempt_at END,
               finished_at = CASE WHEN $3 = 'retry' AND job.attempts < job.max_attempts
                                  THEN NULL ELSE $4 END,
               lease_expires_at = NULL,
               last_error = coalesce($8, job.last_error)
         WHERE job.id = $1 AND job.status = 'in_flight' AND job.claim_generation = $2
     RETURNING job.id, job.status, job.transaction_id, job.claim_generation
    ),
    event AS (
        INSERT INTO @extschema@.send_job_events (job_id, transaction_id, kind, claim_generation, created_at)
        SELECT id, transaction_id, status, claim_generation, $4
          FROM done
         WHERE status IN ('sent', 'failed')
    )
    SELECT done.status, done.transaction_id FROM done";

const HEARTBEAT_SQL: &str = "
    UPDATE @extschema@.send_jobs
       SET lease_expires_at = $3 + $4
     WHERE id = $1 AND status = 'in_flight' AND claim_generation = $2
    RETURNING id";

const JOB_EXISTS_SQL: &str = "SELECT EXISTS (SELECT FROM @extschema@.send_jobs WHERE id = $1)";

/// Records the outcome of the claim `(id, generation)`: `applied` when that claim is
/// still the current one of an in_flight job, otherwise `stale` and nothing changes.
#[pg_extern(volatile, parallel_unsafe)]
fn sendjobs_finalize(
    id: Option<i64>,
    generation: Option<i64>,
    outcome: Option<&str>,
    error: default!(Option<&str>, "NULL"),
    retry_at: default!(Option<TimestampWithTimeZone>, "NULL"),
) -> &'static str {
    or_raise(finalize(id, generation, outcome, error, retry_at))
}

fn finalize(
    id: Option<i64>,
    generation: Option<i64>,
    outcome: Option<&str>,
    error: Option<&str>,
    retry_at: Option<TimestampWithTimeZone>,
) -> Result<&'static str> {
    let id = required(id, "id")?;
    let generation = fenced_generation(generation)?;
    let outcome: Outcome = required(outcome, "outcome")?.parse()?;
    if retry_at.is_some() && outcome != Outcome::Retry {
        return Err(SendJobsError::InvalidArgument(
            "retry_at is only accepted with outcome 'retry'".into(),
        ));
    }
    if error.is_some() && outcome == Outcome::Sent {
        return Err(SendJobsError::InvalidArgument(
            "error is only accepted with outcome 'failed' or 'retry'".into(),
        ));
    }
    let now = wall_clock();

    Spi::connect_mut(|client| {
        let finalize = plan(
            client,
            FINALIZE_SQL,
            &[
                pg_sys::INT8OID.into(),
                pg_sys::INT8OID.into(),
                pg_sys::TEXTOID.into(),
                pg_sys::TIMESTAMPTZOID.into(),
                pg_sys::TIMESTAMPTZOID.into(),
                pg_sys::FLOAT8OID.into(),
                pg_sys::FLOAT8OID.into(),
                pg_sys::TEXTOID.into(),
            ],
        )?;
        let done = client
            .update(
                &*finalize,
                None,
                &[
                    id.into(),
                    generation.into(),
                    outcome.as_str().into(),
                    now.into(),
                    retry_at.into(),
                    f64::from(config::retry_backoff_base_ms()).into(),
                    f64::from(config::retry_backoff_max_ms()).into(),
                    error.into(),
                ],
            )?
            .first();
        if done.is_empty() {
            return stale_or_unknown(client, id);
        }
        let (status, transaction_id) = done.get_two::<String, String>()?;
        if let (Some(status), Some(transaction_id)) = (status, transaction_id) {
            if status == "sent" || status == "failed" {
                link::stamp_transaction(client, &status, &transaction_id)?;
            }
        }
        Ok(APPLIED)
    })
}

/// Extends the lease of the claim `(id, generation)` to `now + lease`: `applied` while
/// that claim is current, `stale` when the worker has lost the job and must stop.
#[pg_extern(volatile, parallel_unsafe)]
fn sendjobs_heartbeat(
    id: Option<i64>,
    generation: Option<i64>,
    lease: default!(Option<Interval>, "NULL"),
) -> &'static str {
    or_raise(heartbeat(id, generation, lease))
}

fn heartbeat(
    id: Option<i64>,
    generation: Option<i64>,
    lease: Option<Interval>,
) -> Result<&'static str> {
    let id = required(id, "id")?;
    let generation = fenced_generation(generation)?;
    let lease = lease_or_default(lease)?;
    let now = wall_clock();

    Spi::connect_mut(|client| {
        let heartbeat = plan(
            client,
            HEARTBEAT_SQL,
            &[
                pg_sys::INT8OID.into(),
                pg_sys::INT8OID.into(),
                pg_sys::TIMESTAMPTZOID.into(),
                pg_sys::INTERVALOID.into(),
            ],
        )?;
        let extended = client.update(
            &*heartbeat,
            None,
            &[id.into(), generation.into(), now.into(), lease.into()],
        )?;
        if extended.is_empty() {
            return stale_or_unknown(client, id);
        }
        Ok(APPLIED)
    })
}

fn fenced_generation(generation: Option<i64>) -> Result<i64> {
    let generation = required(generation, "generation")?;
    if generation < 0 {
        return Err(SendJobsError::Negative("generation"));
    }
    Ok(generation)
}

/// A fenced update that matched nothing: `stale` for a job that exists, an error otherwise.
fn stale_or_unknown(client: &SpiClient<'_>, id: i64) -> Result<&'static str> {
    let exists = plan(client, JOB_EXISTS_SQL, &[pg_sys::INT8OID.into()])?;
    let found = first_value::<bool>(client.select(&*exists, Some(1), &[id.into()])?)?;
    match found {
        Some(true) => Ok(STALE),
        _ => Err(SendJobsError::UnknownJob(id)),
    }
}
