//! sendjobs_redrive: a failed job is sent again, as a new job; the failed one stays as history.

use std::collections::{BTreeMap, HashSet};

use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::clock::wall_clock;
use crate::errors::{distinct_id, or_raise, required, Result, SendJobsError};
use crate::link::{Stamp, TransactionLink};
use crate::spi_plans::{execute, first_value, plan};
use crate::statements::{JOB_STATUSES, REDRIVE, REDRIVE_FIND};
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
        let redrive = plan(
            client,
            &REDRIVE,
            &[pg_sys::INT8ARRAYOID.into(), pg_sys::TIMESTAMPTZOID.into()],
        )?;
        let mut done = BTreeMap::new();
        let mut to_stamp = Vec::new();
        let mut queues = Vec::new();
        for row in execute(client, &redrive, &[ids.clone().into(), wall_clock().into()])? {
            let id = row.get::<i64>(1)?.unwrap_or_default();
            let created = row.get::<bool>(3)? == Some(true);
            if created {
                if let Some(transaction_id) = row.get::<String>(4)? {
                    to_stamp.push(transaction_id);
                }
                queues.extend(row.get::<String>(5)?);
            }
            done.insert(id, row.get::<i64>(2)?);
        }
        if done.len() < ids.len() {
            refuse_the_rest(client, &ids, &done)?;
        }
        // A new job created by a transaction that committed after the redrive's snapshot.
        let find = plan(client, &REDRIVE_FIND, &[pg_sys::INT8OID.into()])?;
        let mut result = Vec::with_capacity(ids.len());
        for id in &ids {
            let new_id = match done.get(id).copied().flatten() {
                Some(new_id) => new_id,
                None => first_value::<i64>(execute(client, &find, &[(*id).into()])?)?.ok_or_else(
                    || {
                        SendJobsError::Internal(format!(
                            "the job that redrove job {id} is not visible; retry the call"
                        ))
                    },
                )?,
            };
            result.push((*id, new_id));
        }
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
    done: &BTreeMap<i64, Option<i64>>,
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
