//! sendjobs_redrive: a failed job is sent again, as a new job; the failed one stays as history.

use std::collections::{BTreeMap, HashSet};

use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::clock::wall_clock;
use crate::errors::{distinct_id, or_raise, required, Result, SendJobsError};
use crate::link::{Stamp, TransactionLink};
use crate::spi_plans::{execute, execute_planned, plan, Planning};
use crate::statements::{JOB_STATUSES, REDRIVE, REDRIVE_LOCK};
use crate::wakeup;

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
        // Two statements: the second's snapshot is taken after the first has locked the
        // failed jobs, so it sees what a concurrent redrive of them created
        // (sql/statements/redrive_lock.sql).
        let lock = plan(client, &REDRIVE_LOCK, &[pg_sys::INT8ARRAYOID.into()])?;
        execute(client, &lock, &[ids.clone().into()])?;
        let redrive = plan(
            client,
            &REDRIVE,
            &[pg_sys::INT8ARRAYOID.into(), pg_sys::TIMESTAMPTZOID.into()],
        )?;
        let mut done = BTreeMap::new();
        let mut to_stamp = Vec::new();
        let mut queues = Vec::new();
        let rows = execute_planned(
            client,
            &redrive,
            &[ids.clone().into(), wall_clock().into()],
            Planning::ForTheValues,
        )?;
        for row in rows {
            let id = row.get::<i64>(1)?.unwrap_or_default();
            let new_id = row.get::<i64>(2)?.ok_or_else(|| {
                SendJobsError::Internal(format!("job {id} was redriven, but to no job"))
            })?;
            if row.get::<bool>(3)? == Some(true) {
                if let Some(transaction_id) = row.get::<String>(4)? {
                    to_stamp.push(transaction_id);
                }
                queues.extend(row.get::<String>(5)?);
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
        if !to_stamp.is_empty() {
            if let Some(link) = TransactionLink::current(client)? {
                for transaction_id in &to_stamp {
                    link.stamp(client, Stamp::Redriven, transaction_id)?;
                }
            }
        }
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
    let statuses = plan(client, &JOB_STATUSES, &[pg_sys::INT8ARRAYOID.into()])?;
    let mut known = BTreeMap::new();
    for row in execute(client, &statuses, &[ids.to_vec().into()])? {
        known.insert(
            row.get::<i64>(1)?.unwrap_or_default(),
            row.get::<String>(2)?.unwrap_or_default(),
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
