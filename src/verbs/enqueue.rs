//! sendjobs_enqueue: add a job, or find the one that already carries the idempotency key.

use std::collections::HashSet;

use pgrx::datum::DatumWithOid;
use pgrx::prelude::*;
use pgrx::spi::SpiClient;
use pgrx::{Array, JsonB};

use crate::guards::stamp::TransactionLink;
use crate::machinery::clock::wall_clock;
use crate::machinery::config;
use crate::machinery::errors::{finite, or_raise, queue_name, required, Result, SendJobsError};
use crate::machinery::queue_names::readable_or_known;
use crate::machinery::spi_plans::queue_relation_oids;
use crate::machinery::statements::{first, statement, Statement};
use crate::machinery::wakeup;

static ENQUEUE_WITH_KEY: Statement = statement!("enqueue.sql", "with_key");
static ENQUEUE_NO_KEY: Statement = statement!("enqueue.sql", "no_key");
static ENQUEUE_FIND_BY_KEY: Statement = statement!("enqueue_find_by_key.sql");
static ENQUEUE_MANY: Statement = statement!("enqueue_many.sql");

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
    let max_attempts =
        max_attempts_in_range(max_attempts.unwrap_or_else(config::default_max_attempts))?;
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
        key_holder(client, idempotency_key.unwrap_or_default())
    })
}

/// The job that holds idempotency key `key`, which an insert just found taken.
fn key_holder(client: &SpiClient<'_>, key: &str) -> Result<i64> {
    let holder = ENQUEUE_FIND_BY_KEY.run(client, &[key.into()])?.first();
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
            key: key.to_owned(),
            job_id,
        }),
        (None, _) => Err(SendJobsError::Internal(
            "the job holding this idempotency key is not visible; retry the call".into(),
        )),
    }
}

/// Adds the jobs of `payloads` in one statement, each as `sendjobs_enqueue` adds one, and
/// returns their ids in `payloads`' order. Every other array holds a value per job, or one
/// value for all; NULL (where `sendjobs_enqueue` takes NULL) is no value for any job.
/// Nothing is added unless every job is valid (docs/reference.md, sendjobs_enqueue_many).
#[pg_extern(volatile, parallel_unsafe)]
#[allow(clippy::too_many_arguments)] // one per argument of the SQL function
fn sendjobs_enqueue_many<'a>(
    payloads: Option<Array<'a, JsonB>>,
    queues: default!(Option<Array<'a, &'a str>>, "'{default}'"),
    run_at: default!(Option<Array<'a, TimestampWithTimeZone>>, "NULL"),
    transaction_ids: default!(Option<Array<'a, &'a str>>, "NULL"),
    idempotency_keys: default!(Option<Array<'a, &'a str>>, "NULL"),
    max_attempts: default!(Option<Array<'a, i32>>, "NULL"),
    ordering_keys: default!(Option<Array<'a, &'a str>>, "NULL"),
    priorities: default!(Option<Array<'a, i32>>, "'{0}'"),
) -> Vec<i64> {
    or_raise(enqueue_many(Jobs {
        payloads,
        queues,
        run_at,
        transaction_ids,
        idempotency_keys,
        max_attempts,
        ordering_keys,
        priorities,
    }))
}

/// sendjobs_enqueue_many's arguments, as SQL passed them.
struct Jobs<'a> {
    payloads: Option<Array<'a, JsonB>>,
    queues: Option<Array<'a, &'a str>>,
    run_at: Option<Array<'a, TimestampWithTimeZone>>,
    transaction_ids: Option<Array<'a, &'a str>>,
    idempotency_keys: Option<Array<'a, &'a str>>,
    max_attempts: Option<Array<'a, i32>>,
    ordering_keys: Option<Array<'a, &'a str>>,
    priorities: Option<Array<'a, i32>>,
}

fn enqueue_many(jobs: Jobs<'_>) -> Result<Vec<i64>> {
    let payloads = required(jobs.payloads, "payloads")?;
    let queues = required(jobs.queues, "queues")?;
    let priorities = required(jobs.priorities, "priorities")?;
    let count = payloads.len();
    if count == 0 {
        return Ok(Vec::new());
    }
    // Every check before the statement: a bad job anywhere adds none.
    if payloads.contains_nulls() {
        let position = payloads.iter().position(|payload| payload.is_none());
        return Err(SendJobsError::NullElement {
            array: "payloads",
            position: position.unwrap_or_default() + 1,
        });
    }
    fits(count, "queues", Some(queues.len()))?;
    fits(count, "run_at", jobs.run_at.as_ref().map(Array::len))?;
    fits(
        count,
        "transaction_ids",
        jobs.transaction_ids.as_ref().map(Array::len),
    )?;
    fits(
        count,
        "idempotency_keys",
        jobs.idempotency_keys.as_ref().map(Array::len),
    )?;
    fits(
        count,
        "max_attempts",
        jobs.max_attempts.as_ref().map(Array::len),
    )?;
    fits(
        count,
        "ordering_keys",
        jobs.ordering_keys.as_ref().map(Array::len),
    )?;
    fits(count, "priorities", Some(priorities.len()))?;

    let mut named_queues = HashSet::new();
    for (index, queue) in queues.iter().enumerate() {
        let queue = queue.ok_or(SendJobsError::NullElement {
            array: "queues",
            position: index + 1,
        })?;
        if !named_queues.contains(queue) {
            named_queues.insert(queue_name(queue)?.to_owned());
        }
    }
    for (index, priority) in priorities.iter().enumerate() {
        priority_in_range(priority.ok_or(SendJobsError::NullElement {
            array: "priorities",
            position: index + 1,
        })?)?;
    }
    for at in jobs.run_at.iter().flat_map(Array::iter).flatten() {
        finite(at, "run_at")?;
    }
    for attempts in jobs.max_attempts.iter().flat_map(Array::iter).flatten() {
        max_attempts_in_range(attempts)?;
    }
    for key in jobs.ordering_keys.iter().flat_map(Array::iter).flatten() {
        ordering_key_in_range(key)?;
    }

    Spi::connect_mut(|client| {
        for queue in &named_queues {
            readable_or_known(client, queue)?;
        }
        if let Some(link) = TransactionLink::current(client)? {
            let ids: HashSet<&str> = jobs
                .transaction_ids
                .iter()
                .flat_map(Array::iter)
                .flatten()
                .collect();
            for transaction_id in ids {
                link.check_key(client, transaction_id)?;
            }
        }
        let (_, id_sequence) = queue_relation_oids(client)?;
        let added = ENQUEUE_MANY
            .run(
                client,
                &[
                    as_array(Some(payloads), pg_sys::JSONBARRAYOID),
                    as_array(Some(queues), pg_sys::TEXTARRAYOID),
                    as_array(jobs.run_at, pg_sys::TIMESTAMPTZARRAYOID),
                    as_array(jobs.transaction_ids, pg_sys::TEXTARRAYOID),
                    as_array(jobs.idempotency_keys, pg_sys::TEXTARRAYOID),
                    as_array(jobs.max_attempts, pg_sys::INT4ARRAYOID),
                    as_array(jobs.ordering_keys, pg_sys::TEXTARRAYOID),
                    as_array(Some(priorities), pg_sys::INT4ARRAYOID),
                    id_sequence.into(),
                    wall_clock().into(),
                    config::default_max_attempts().into(),
                ],
            )?
            .first();
        let ids = added
            .get_by_name::<Vec<Option<i64>>, _>("ids")?
            .unwrap_or_default();
        let taken_keys = added
            .get_by_name::<Vec<Option<String>>, _>("taken_keys")?
            .unwrap_or_default();
        for queue in &named_queues {
            wakeup::after_enqueue(client, queue)?;
        }
        // A NULL id is a job whose key was taken (see enqueue above), in taken_keys' order.
        let mut taken_keys = taken_keys.into_iter().flatten();
        ids.into_iter()
            .map(|id| match id {
                Some(id) => Ok(id),
                None => key_holder(client, &taken_keys.next().unwrap_or_default()),
            })
            .collect()
    })
}

/// Refuses an array argument that holds neither one value per job nor one for all.
fn fits(count: usize, array: &str, len: Option<usize>) -> Result<()> {
    match len {
        Some(len) if len != count && len != 1 => Err(SendJobsError::InvalidArgument(format!(
            "{array} holds {len} values for {count} payloads: give one value per job, or one for all"
        ))),
        _ => Ok(()),
    }
}

/// An array argument handed on to the statement as it came, without unboxing its elements.
fn as_array<T>(array: Option<Array<'_, T>>, oid: pg_sys::Oid) -> DatumWithOid<'static> {
    match array {
        // SAFETY: the pointer is the argument's array, alive for the whole call, of type `oid`.
        Some(array) => unsafe {
            DatumWithOid::new(pg_sys::Datum::from(array.into_array_type()), oid)
        },
        None => DatumWithOid::null_oid(oid),
    }
}

fn max_attempts_in_range(max_attempts: i32) -> Result<i32> {
    if max_attempts < 1 {
        return Err(SendJobsError::InvalidArgument(format!(
            "max_attempts must be at least 1, got {max_attempts}"
        )));
    }
    Ok(max_attempts)
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
