//! The outbox's reader: named consumers, each reading every event once, in commit order,
//! from its own position (docs/decisions/0011-one-row-per-finished-job.md). An event is a
//! finished job's row (send_job_events is the view of them); a position is two snapshots
//! in sendjobs_consumers, moved in the reader's own transaction.

use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::machinery::clock::wall_clock;
use crate::machinery::errors::{named_role, or_raise, required, short_name, Result, SendJobsError};
use crate::machinery::sql_types::SqlRole;
use crate::machinery::statements::{statement, Statement};

static CONSUMER_CREATE: Statement = statement!("consumer_create.sql");
static CONSUMER_DROP: Statement = statement!("consumer_drop.sql");
// Two statements: the second's snapshot is taken once the first holds the consumer's lock
// (sql/statements/consumer_lock.sql says why).
static CONSUMER_LOCK: Statement = statement!("consumer_lock.sql");
static READ_EVENTS: Statement = statement!("read_events.sql");

/// The most events one call reads: they are returned in one result, sorted.
const MAX_READ: i32 = 100_000;

/// Creates the consumer `consumer` of the outbox. It reads the events of jobs that finish
/// from now on (`from_start`: every event still kept, too). `reader`: only that role's
/// members may read it (NULL: any role with the relay level). `wake`: a finish then sends
/// the outbox's wake-up at its commit. sendjobs_purge keeps every event until each
/// consumer has passed it.
#[pg_extern(volatile, parallel_unsafe)]
fn sendjobs_create_consumer(
    consumer: Option<&str>,
    from_start: default!(Option<bool>, false),
    reader: default!(Option<SqlRole>, "NULL"),
    wake: default!(Option<bool>, false),
) {
    or_raise(create_consumer(consumer, from_start, reader, wake))
}

fn create_consumer(
    consumer: Option<&str>,
    from_start: Option<bool>,
    reader: Option<SqlRole>,
    wake: Option<bool>,
) -> Result<()> {
    let consumer = short_name(required(consumer, "consumer")?, "consumer")?;
    let from_start = required(from_start, "from_start")?;
    let wake = required(wake, "wake")?;
    let reader = reader.map(|role| named_role(role, "reader")).transpose()?;
    Spi::connect_mut(|client| {
        let created = CONSUMER_CREATE.run(
            client,
            &[
                consumer.into(),
                from_start.into(),
                wall_clock().into(),
                reader.map(|role| role.0).into(),
                wake.into(),
            ],
        )?;
        if created.is_empty() {
            return Err(SendJobsError::DuplicateConsumer(consumer.to_owned()));
        }
        Ok(())
    })
}

/// Drops the consumer `consumer`: sendjobs_purge stops keeping events for it.
#[pg_extern(volatile, parallel_unsafe)]
fn sendjobs_drop_consumer(consumer: Option<&str>) {
    or_raise(drop_consumer(consumer))
}

fn drop_consumer(consumer: Option<&str>) -> Result<()> {
    let consumer = required(consumer, "consumer")?;
    Spi::connect_mut(|client| {
        if CONSUMER_DROP.run(client, &[consumer.into()])?.is_empty() {
            return Err(SendJobsError::UnknownConsumer(consumer.to_owned()));
        }
        Ok(())
    })
}

/// One event, as sendjobs_read_events returns it.
type Event = (
    i64,
    Option<String>,
    String,
    i64,
    TimestampWithTimeZone,
    String,
);

/// Reads up to `max` events for `consumer`, the next ones after its position, and moves
/// its position past them, in the caller's transaction: relay them, then commit; a
/// rollback (or a crash) before the commit leaves the position where it was, and the next
/// call reads the same events again. Every event is read once per consumer, in commit
/// order: batches of the events that became visible between two snapshots, each in
/// (transaction, job id) order. Fewer than `max` rows: the consumer has caught up.
#[pg_extern(volatile, parallel_unsafe)]
#[allow(clippy::type_complexity)]
fn sendjobs_read_events(
    consumer: Option<&str>,
    max: default!(Option<i32>, 1000),
) -> TableIterator<
    'static,
    (
        name!(job_id, i64),
        name!(transaction_id, Option<String>),
        name!(kind, String),
        name!(claim_generation, i64),
        name!(created_at, TimestampWithTimeZone),
        name!(queue, String),
    ),
> {
    TableIterator::new(or_raise(read_events(consumer, max)))
}

fn read_events(consumer: Option<&str>, max: Option<i32>) -> Result<Vec<Event>> {
    let consumer = required(consumer, "consumer")?;
    let max = required(max, "max")?;
    if !(1..=MAX_READ).contains(&max) {
        return Err(SendJobsError::InvalidArgument(format!(
            "max must be between 1 and {MAX_READ}, got {max}"
        )));
    }
    Spi::connect_mut(|client| {
        let locked = CONSUMER_LOCK.run(client, &[consumer.into()])?;
        let Some(row) = locked.into_iter().next() else {
            return Err(SendJobsError::UnknownConsumer(consumer.to_owned()));
        };
        // A consumer with a reader is read by that role's members only: a relay of
        // another consumer must not move its position (the caller's role, not the
        // extension's owner, which the statements run as).
        if let Some(reader) = row.get_by_name::<pg_sys::Oid, _>("reader")? {
            // SAFETY: plain catalog look-ups of the backend's current user.
            let allowed = unsafe { pg_sys::has_privs_of_role(pg_sys::GetUserId(), reader) };
            if !allowed {
                return Err(SendJobsError::PermissionDenied(format!(
                    "consumer \"{consumer}\" is read by the members of its reader role only"
                )));
            }
        }
        let rows = READ_EVENTS.run(
            client,
            &[consumer.into(), i64::from(max).into(), wall_clock().into()],
        )?;
        let missing =
            |column: &str| SendJobsError::Internal(format!("an event without its {column}"));
        rows.map(|row| {
            Ok((
                row.get_by_name::<i64, _>("job_id")?
                    .ok_or_else(|| missing("job_id"))?,
                row.get_by_name::<String, _>("transaction_id")?,
                row.get_by_name::<String, _>("kind")?
                    .ok_or_else(|| missing("kind"))?,
                row.get_by_name::<i64, _>("claim_generation")?
                    .ok_or_else(|| missing("claim_generation"))?,
                row.get_by_name::<TimestampWithTimeZone, _>("created_at")?
                    .ok_or_else(|| missing("created_at"))?,
                row.get_by_name::<String, _>("queue")?
                    .ok_or_else(|| missing("queue"))?,
            ))
        })
        .collect()
    })
}
