//! sendjobs_enqueue: add a job, or find the one that already carries the idempotency key.

use pgrx::prelude::*;
use pgrx::JsonB;

use crate::clock::wall_clock;
use crate::config;
use crate::errors::{finite, or_raise, queue_name, required, Result, SendJobsError};
use crate::queue_names::readable_or_known;
use crate::spi_plans::queue_relation_oids;
use crate::stamp::TransactionLink;
use crate::statements::{first, statement, Statement};
use crate::wakeup;

static ENQUEUE_WITH_KEY: Statement = statement!("enqueue.sql", "with_key");
static ENQUEUE_NO_KEY: Statement = statement!("enqueue.sql", "no_key");
static ENQUEUE_FIND_BY_KEY: Statement = statement!("enqueue_find_by_key.sql");

/// Adds a job and returns its id. A job that already has `idempotency_key` is returned
/// as it is: nothing is created and nothing about it changes. Jobs that share an
/// `ordering_key` are claimed one at a time, in the order of their ids; a job's
/// `priority` is the minutes of head start it has in the claim order
/// (docs/decisions/0013-flow-control-in-the-claim.md).
#[pg_extern(volatile, parallel_unsafe)]
#[allow(clippy::too_many_arguments)] // one per argument of the SQL function
fn sendjobs_enqueue(
    payload: Option<JsonB>,
    queue: default!(Option<&str>, "'default'"),
    run_at: default!(Option<TimestampWithTimeZone>, "NULL"),
    transaction_id: default!(Option<&str>, "NULL"),
    idempotency_key: default!(Option<&str>, "NULL"),
    max_attempts: default!(Option<i32>, "NULL"),
    ordering_key: default!(Option<&str>, "NULL"),
    priority: default!(Option<i32>, "0"),
) -> i64 {
    or_raise(enqueue(
        payload,
        queue,
        run_at,
        transaction_id,
        idempotency_key,
        max_attempts,
        ordering_key,
        priority,
    ))
}

#[allow(clippy::too_many_arguments)] // sendjobs_enqueue's, as SQL passed them
fn enqueue(
    payload: Option<JsonB>,
    queue: Option<&str>,
    run_at: Option<TimestampWithTimeZone>,
    transaction_id: Option<&str>,
    idempotency_key: Option<&str>,
    max_attempts: Option<i32>,
    ordering_key: Option<&str>,
    priority: Option<i32>,
) -> Result<i64> {
    let payload = required(payload, "payload")?;
    let priority = priority_in_range(required(priority, "priority")?)?;
    if let Some(key) = ordering_key {
        ordering_key_in_range(key)?;
    }
    let queue = queue_name(required(queue, "queue")?)?;
    let max_attempts = max_attempts.unwrap_or_else(config::default_max_attempts);
    if max_attempts < 1 {
        return Err(SendJobsError::InvalidArgument(format!(
            "max_attempts must be at least 1, got {max_attempts}"
        )));
    }
    let run_at = match run_at {
        Some(run_at) => finite(run_at, "run_at")?,
        None => wall_clock(),
    };

    Spi::connect_mut(|client| {
        readable_or_known(client, queue)?;
        if let Some(transaction_id) = transaction_id {
            if let Some(link) = TransactionLink::current(client)? {
                link.check_key(client, transaction_id)?;
            }
        }
        let insert = if idempotency_key.is_some() {
            &ENQUEUE_WITH_KEY
        } else {
            &ENQUEUE_NO_KEY
        };
        let (_, id_sequence) = queue_relation_oids(client)?;
        let inserted = first::<i64>(
            insert.run(
                client,
                &[
                    payload.into(),
                    queue.into(),
                    run_at.into(),
                    transaction_id.into(),
                    idempotency_key.into(),
                    max_attempts.into(),
                    id_sequence.into(),
                    ordering_key.into(),
                    priority.into(),
                ],
            )?,
            "id",
        )?;
        if let Some(id) = inserted {
            wakeup::after_enqueue(client, queue)?;
            return Ok(id);
        }
        // The key is taken: ON CONFLICT waited for its holder to commit, so a fresh
        // statement (a fresh snapshot under READ COMMITTED) sees the row.
        let holder = ENQUEUE_FIND_BY_KEY
            .run(client, &[idempotency_key.into()])?
            .first();
        let (job_id, exists) = if holder.is_empty() {
            (None, None)
        } else {
            (
                holder.get_by_name::<i64, _>("job_id")?,
                holder.get_by_name::<bool, _>("job_exists")?,
            )
        };
        match (job_id, exists) {
            (Some(job_id), Some(true)) => Ok(job_id),
            (Some(job_id), _) => Err(SendJobsError::OrphanKey {
                key: idempotency_key.unwrap_or_default().to_owned(),
                job_id,
            }),
            (None, _) => Err(SendJobsError::Internal(
                "the job holding this idempotency key is not visible; retry the call".into(),
            )),
        }
    })
}

/// The longest head start, in minutes: an hour. Every claim reads past the jobs whose
/// head start reaches before a due time still to come (claim.sql: a job with priority p
/// is in that window for the p minutes before it is due, a retry in its backoff too), so
/// the window is kept short (docs/decisions/0013-flow-control-in-the-claim.md).
const MAX_PRIORITY_MINUTES: i32 = 60;

fn priority_in_range(priority: i32) -> Result<i16> {
    if !(0..=MAX_PRIORITY_MINUTES).contains(&priority) {
        return Err(SendJobsError::InvalidArgument(format!(
            "priority must be 0 to {MAX_PRIORITY_MINUTES} (minutes of head start in the claim order), got {priority}"
        )));
    }
    Ok(priority as i16)
}

/// The longest ordering key: its index entries must stay well under a B-tree's limit.
const MAX_ORDERING_KEY_BYTES: usize = 256;

fn ordering_key_in_range(key: &str) -> Result<()> {
    if key.is_empty() {
        return Err(SendJobsError::InvalidArgument(
            "ordering_key must not be empty (NULL: the job is not ordered)".into(),
        ));
    }
    if key.len() > MAX_ORDERING_KEY_BYTES {
        return Err(SendJobsError::InvalidArgument(format!(
            "an ordering_key must be at most {MAX_ORDERING_KEY_BYTES} bytes, got {}",
            key.len()
        )));
    }
    Ok(())
}
