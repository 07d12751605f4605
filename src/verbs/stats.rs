//! sendjobs_stats: what an operator watches, one row per queue (sql/statements/stats.sql).

use pgrx::prelude::*;

use crate::machinery::clock::wall_clock;
use crate::machinery::errors::{or_raise, Result};
use crate::machinery::spi_plans::queue_relation_oids;
use crate::machinery::statements::{statement, Statement};

pub(crate) static STATS: Statement = statement!("stats.sql");

/// A row of sendjobs_stats, as stats() builds it.
type Row = (
    String,
    i64,
    i64,
    i64,
    i64,
    i64,
    Option<Interval>,
    i64,
    i64,
    i64,
    bool,
    i64,
    Option<Interval>,
    Option<i64>,
    bool,
    Option<i32>,
    Option<f64>,
    Option<f64>,
);

/// One row per queue that has unfinished jobs or events in the last 5 minutes: jobs
/// ready now, scheduled later, in flight, with an expired lease awaiting reclaim, in
/// flight on their last attempt; the oldest ready job's wait; sent, failed and cancelled
/// in the last 5 minutes; whether any of those counts is an estimate (exact up to
/// 10,000, sql/statements/stats.sql); and, the same on every row, send_jobs' dead tuples
/// and the oldest transaction holding back vacuum (its age, and its xmin's age in
/// transactions); the queue's flow control: paused, its cap on jobs in flight (in use:
/// `in_flight`), its rate and the tokens its bucket holds now (sendjobs_limit).
#[pg_extern(volatile, parallel_unsafe)]
#[allow(clippy::type_complexity)]
fn sendjobs_stats() -> TableIterator<
    'static,
    (
        name!(queue, String),
        name!(ready, i64),
        name!(scheduled, i64),
        name!(in_flight, i64),
        name!(expired, i64),
        name!(at_last_attempt, i64),
        name!(oldest_ready_age, Option<Interval>),
        name!(sent_5m, i64),
        name!(failed_5m, i64),
        name!(cancelled_5m, i64),
        name!(estimated, bool),
        name!(dead_tuples, i64),
        name!(oldest_xmin_age, Option<Interval>),
        name!(oldest_xmin_xids, Option<i64>),
        name!(paused, bool),
        name!(max_in_flight, Option<i32>),
        name!(rate, Option<f64>),
        name!(tokens, Option<f64>),
    ),
> {
    TableIterator::new(or_raise(stats()))
}

fn stats() -> Result<Vec<Row>> {
    Spi::connect_mut(|client| {
        let (send_jobs, _) = queue_relation_oids(client)?;
        let rows = STATS.run(client, &[wall_clock().into(), send_jobs.into()])?;
        let count = |row: &pgrx::spi::SpiHeapTupleData<'_>, column| -> Result<i64> {
            Ok(row.get_by_name::<i64, _>(column)?.unwrap_or(0))
        };
        rows.map(|row| {
            Ok((
                row.get_by_name::<String, _>("queue")?.unwrap_or_default(),
                count(&row, "ready")?,
                count(&row, "scheduled")?,
                count(&row, "in_flight")?,
                count(&row, "expired")?,
                count(&row, "at_last_attempt")?,
                row.get_by_name::<Interval, _>("oldest_ready_age")?,
                count(&row, "sent_5m")?,
                count(&row, "failed_5m")?,
                count(&row, "cancelled_5m")?,
                row.get_by_name::<bool, _>("estimated")?.unwrap_or(false),
                count(&row, "dead_tuples")?,
                row.get_by_name::<Interval, _>("oldest_xmin_age")?,
                row.get_by_name::<i64, _>("oldest_xmin_xids")?,
                row.get_by_name::<bool, _>("paused")?.unwrap_or(false),
                row.get_by_name::<i32, _>("max_in_flight")?,
                row.get_by_name::<f64, _>("rate")?,
                row.get_by_name::<f64, _>("tokens")?,
            ))
        })
        .collect()
    })
}
