//! sendjobs_purge: retention. Finished jobs and their events go, a bounded batch a call.

use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::IntoDatum;

use crate::machinery::clock::wall_clock;
use crate::machinery::errors::{or_raise, required, Result, SendJobsError};
use crate::machinery::statements::{first, statement, Statement};

static PURGE: Statement = statement!("purge.sql");
// The stops of ordering keys that no job holds any more: locked, then judged again.
static STOPS_LOCK: Statement = statement!("stops_lock.sql");
static STOPS_DELETE: Statement = statement!("stops_delete.sql");

/// A purge's largest batch: its rows are locked and deleted in one statement, so its
/// locks and its WAL stay bounded.
const MAX_BATCH: i32 = 100_000;

/// Deletes up to `batch` jobs that finished (sent, failed or cancelled) more than
/// `older_than` ago, with their events, and returns how many. Unfinished jobs and events
/// younger than `older_than` are never deleted. Locked rows are skipped, so it can run
/// from cron while workers run: call it until it returns less than `batch`.
#[pg_extern(volatile, parallel_unsafe)]
fn sendjobs_purge(older_than: Option<Interval>, batch: default!(Option<i32>, 1000)) -> i64 {
    or_raise(purge(older_than, batch))
}

fn purge(older_than: Option<Interval>, batch: Option<i32>) -> Result<i64> {
    let older_than = required(older_than, "older_than")?;
    if older_than.as_micros() < 0 {
        return Err(SendJobsError::Negative("older_than"));
    }
    let now = wall_clock();
    let cutoff = cutoff(now, older_than)?;
    let batch = required(batch, "batch")?;
    if !(1..=MAX_BATCH).contains(&batch) {
        return Err(SendJobsError::InvalidArgument(format!(
            "batch must be between 1 and {MAX_BATCH}, got {batch}"
        )));
    }
    Spi::connect_mut(|client| {
        let deleted = PURGE.run(client, &[cutoff.into(), i64::from(batch).into()])?;
        let deleted = first::<i64>(deleted, "deleted")?.unwrap_or(0);
        let void = STOPS_LOCK
            .run(client, &[])?
            .map(|row| row.get_by_name::<String, _>("ordering_key"))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        if !void.is_empty() {
            STOPS_DELETE.run(
                client,
                &[void.into_iter().flatten().collect::<Vec<_>>().into()],
            )?;
        }
        Ok(deleted)
    })
}

/// `now - older_than`, as Postgres computes it (months and days on the calendar), refused
/// when it is later than `now`: an interval can be positive as a whole and still move the
/// cutoff forward (`-10 years 3630 days`, 30 days as a whole, is about 22 days ahead once
/// its years are calendar years), and a cutoff ahead of now would delete history seconds old
/// (tests/pg_regress/sql/purge.sql).
fn cutoff(now: TimestampWithTimeZone, older_than: Interval) -> Result<TimestampWithTimeZone> {
    // SAFETY: timestamptz_mi_interval takes a timestamptz and an interval and returns a
    // timestamptz (an out-of-range result is its own ERROR, 22008).
    let cutoff = unsafe {
        pgrx::direct_function_call::<TimestampWithTimeZone>(
            pg_sys::timestamptz_mi_interval,
            &[now.into_datum(), older_than.into_datum()],
        )
    }
    .ok_or_else(|| SendJobsError::Internal("now - older_than gave NULL".into()))?;
    if cutoff > now {
        return Err(SendJobsError::InvalidArgument(
            "older_than must not move the cutoff past now: now - older_than is in the future"
                .into(),
        ));
    }
    Ok(cutoff)
}
