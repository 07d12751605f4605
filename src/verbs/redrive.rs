//! sendjobs_redrive: a failed job is sent again, as a new job; the failed one stays as history.

use std::collections::{BTreeMap, HashSet};

use pgrx::prelude::*;

use crate::guards::stamp::{stamp_each, Stamp};
use crate::machinery::clock::wall_clock;
use crate::machinery::errors::{distinct_id, or_raise, required, Result, SendJobsError};
use crate::machinery::spi_plans::Planning;
use crate::machinery::statements::{statement, Statement};
use crate::machinery::wakeup;

// Two statements: the second's snapshot is taken after the first has locked the failed
// jobs, so it sees what a concurrent redrive of them created
// (sql/statements/redrive_lock.sql).
static REDRIVE_LOCK: Statement = statement!("redrive_lock.sql");
static REDRIVE: Statement = statement!("redrive.sql");
static JOB_STATUSES: Statement = statement!("job_statuses.sql");

/// Sends each failed job of `ids` again: a new pending job, due now, with the same queue,
/// payload, transaction_id and max_attempts, whose `redrive_of` names the failed job.
/// The failed job and its event stay. A linked business row is set to the link's
/// `on_redrive` value, through the guard (its default exit `failed:pending` allows it).
/// A job redriven before keeps its first new job, which is returned again. Any id that
/// does not exist (P0002) or is not failed (55000) fails the whole call.
#[pg_extern(volatile, parallel_unsafe)]
fn sendjobs_redrive(
    ids: Option<Vec<Option<i64>>>,
) -> TableIterator<'static, (name!(id, i64), name!(new_id, i64))> {
    TableIterator::new(or_raise(redrive(ids)))
}

fn redrive(ids: Option<Vec<Option<i64>>>) -> Result<Vec<(i64, i64)>> {
    let ids = required(ids, "ids")?;
    let mut seen = HashSet::with_capacity(ids.len());
    let ids = ids
        .into_iter()
        .map(|id| distinct_id(id, &mut seen))
        .collect::<Result<Vec<i64>>>()?;
    if ids.is_empty() {
        return Ok(Vec::new());
    }

    Spi::connect_mut(|client| {
        REDRIVE_LOCK.run(client, &[ids.clone().into()])?;
        let mut done = BTreeMap::new();
        let mut to_stamp = Vec::new();
        let mut queues = Vec::new();
        let rows = REDRIVE.run_planned(
            client,
            &[ids.clone().into(), wall_clock().into()],
            Planning::ForTheValues,
        )?;
        for row in rows {
            let id = row.get_by_name::<i64, _>("id")?.unwrap_or_default();
            let new_id = row.get_by_name::<i64, _>("new_id")?.ok_or_else(|| {
                SendJobsError::Internal(format!("job {id} was redriven, but to no job"))
            })?;
            if row.get_by_name::<bool, _>("created")? == Some(true) {
                if let Some(transaction_id) = row.get_by_name::<String, _>("transaction_id")? {
                    to_stamp.push((Stamp::Redriven, transaction_id));
                }
                queues.extend(row.get_by_name::<String, _>("queue")?);
            }
            done.insert(id, new_id);
        }
        if done.len() < ids.len() {
            refuse_the_rest(client, &ids, &done)?;
        }
        let result = ids
            .iter()
            .map(|id| done.get(id).map(|new_id| (*id, *new_id)))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| SendJobsError::Internal("a job was not redriven".into()))?;
        stamp_each(client, &to_stamp)?;
        for queue in &queues {
            wakeup::after_enqueue(client, queue)?;
        }
        Ok(result)
    })
}

/// Some of `ids` were not redriven: the first of them, in input order, is unknown
/// (P0002) or not failed (55000). The error aborts the call and all it did.
fn refuse_the_rest(
    client: &pgrx::spi::SpiClient<'_>,
    ids: &[i64],
    done: &BTreeMap<i64, i64>,
) -> Result<()> {
    let mut known = BTreeMap::new();
    for row in JOB_STATUSES.run(client, &[ids.to_vec().into()])? {
        known.insert(
            row.get_by_name::<i64, _>("id")?.unwrap_or_default(),
            row.get_by_name::<String, _>("status")?.unwrap_or_default(),
        );
    }
    match ids.iter().find(|id| !done.contains_key(id)) {
        None => Ok(()),
        Some(&id) => Err(match known.remove(&id) {
            None => SendJobsError::UnknownJob(id),
            Some(status) => SendJobsError::NotRedrivable { id, status },
        }),
    }
}
