//! A queue's pause and limits, as users set and read them: sendjobs_pause,
//! sendjobs_resume, sendjobs_limit, sendjobs_queue_limits. The settings live in
//! sendjobs_queues; each change reaches every backend's list of limited queues
//! (src/flow/limited.rs), and the claims obey it (src/flow/allowance.rs).

use pgrx::prelude::*;

use crate::flow::limited::settings_changed;
use crate::machinery::clock::wall_clock;
use crate::machinery::errors::{or_raise, queue_name, required, Result, SendJobsError};
use crate::machinery::queue_names::readable_or_known;
use crate::machinery::statements::{statement, Statement};
use crate::machinery::wakeup;

static QUEUE_PAUSE_SAVE: Statement = statement!("queue_pause_save.sql");
static QUEUE_LIMIT_SAVE: Statement = statement!("queue_limit_save.sql");
static QUEUE_LIMITS: Statement = statement!("queue_limits.sql");

/// The bounds of a rate, in jobs a second (the CHECK of sendjobs_queues agrees): at
/// least one a day, so that the wait for the next token (`sendjobs_queue_limits`'
/// retry_after, at most 1/rate) stays a day at most; 0.3.0 took 1e-14, and its
/// retry_after overflowed (src/tests/bounds.rs).
const MIN_RATE: f64 = 1.0 / 86_400.0;
const MAX_RATE: f64 = 1_000_000.0;

/// Pauses `queue`: from the commit on, no claim hands out its jobs; jobs in flight finish
/// as usual.
#[pg_extern(volatile, parallel_unsafe)]
fn sendjobs_pause(queue: Option<&str>) {
    or_raise(set_paused(queue, true))
}

/// Resumes `queue`, and wakes its workers (`NOTIFY sendjobs_wakeup`, the queue's name as
/// payload) at the commit.
#[pg_extern(volatile, parallel_unsafe)]
fn sendjobs_resume(queue: Option<&str>) {
    or_raise(set_paused(queue, false))
}

fn set_paused(queue: Option<&str>, paused: bool) -> Result<()> {
    let queue = queue_name(required(queue, "queue")?)?;
    Spi::connect_mut(|client| {
        readable_or_known(client, queue)?;
        QUEUE_PAUSE_SAVE.run(client, &[queue.into(), paused.into()])?;
        settings_changed(client)?;
        if !paused {
            wakeup::wake_queue(client, queue)?;
        }
        Ok(())
    })
}

/// Sets `queue`'s limits, replacing its earlier ones: at most `max_in_flight` of its jobs
/// under an unexpired lease at once, at most `rate` claims a second with bursts of
/// `burst` (a token bucket; `burst` defaults to one second's worth, at least 1). NULL for
/// no such limit; `sendjobs_limit(queue)` lifts both. Setting a rate starts a full bucket.
#[pg_extern(volatile, parallel_unsafe)]
fn sendjobs_limit(
    queue: Option<&str>,
    max_in_flight: default!(Option<i32>, "NULL"),
    rate: default!(Option<f64>, "NULL"),
    burst: default!(Option<i32>, "NULL"),
) {
    or_raise(set_limit(queue, max_in_flight, rate, burst))
}

fn set_limit(
    queue: Option<&str>,
    max_in_flight: Option<i32>,
    rate: Option<f64>,
    burst: Option<i32>,
) -> Result<()> {
    let queue = queue_name(required(queue, "queue")?)?;
    if max_in_flight.is_some_and(|cap| cap < 1) {
        return Err(SendJobsError::InvalidArgument(
            "max_in_flight must be at least 1 (pause a queue with sendjobs_pause)".into(),
        ));
    }
    if rate.is_some_and(|rate| !(MIN_RATE..=MAX_RATE).contains(&rate)) {
        return Err(SendJobsError::InvalidArgument(format!(
            "rate must be a number of jobs a second from 1/86400 (one a day) to {MAX_RATE}"
        )));
    }
    let burst = match (rate, burst) {
        (None, Some(_)) => {
            return Err(SendJobsError::InvalidArgument(
                "burst is only accepted with a rate".into(),
            ))
        }
        (Some(_), Some(burst)) if burst < 1 => {
            return Err(SendJobsError::InvalidArgument(
                "burst must be at least 1".into(),
            ))
        }
        // One second's worth; a rate below one a second still lets one claim through.
        (Some(rate), None) => Some(rate.ceil().max(1.0) as i32),
        (_, burst) => burst,
    };
    let now = wall_clock();
    Spi::connect_mut(|client| {
        readable_or_known(client, queue)?;
        QUEUE_LIMIT_SAVE.run(
            client,
            &[
                queue.into(),
                max_in_flight.into(),
                rate.into(),
                burst.into(),
                now.into(),
            ],
        )?;
        settings_changed(client)
    })
}

/// The flow control of `queue` (NULL: of every queue that has some), and whether a claim
/// would be limited by it now: `limited` is `paused`, `max_in_flight` or `rate`, or NULL;
/// `retry_after`, when the limit may lift by itself. A worker whose claim came back short
/// asks this to tell "limited" from "empty".
#[pg_extern(volatile, parallel_unsafe)]
#[allow(clippy::type_complexity)]
fn sendjobs_queue_limits(
    queue: default!(Option<&str>, "NULL"),
) -> TableIterator<
    'static,
    (
        name!(queue, String),
        name!(paused, bool),
        name!(max_in_flight, Option<i32>),
        name!(in_flight, i64),
        name!(rate, Option<f64>),
        name!(burst, Option<i32>),
        name!(tokens, Option<f64>),
        name!(limited, Option<String>),
        name!(retry_after, Option<Interval>),
    ),
> {
    TableIterator::new(or_raise(queue_limits(queue)))
}

type LimitsRow = (
    String,
    bool,
    Option<i32>,
    i64,
    Option<f64>,
    Option<i32>,
    Option<f64>,
    Option<String>,
    Option<Interval>,
);

fn queue_limits(queue: Option<&str>) -> Result<Vec<LimitsRow>> {
    let now = wall_clock();
    Spi::connect(|client| {
        QUEUE_LIMITS
            .run(client, &[queue.into(), now.into()])?
            .map(|row| {
                Ok((
                    row.get_by_name::<String, _>("queue")?.unwrap_or_default(),
                    row.get_by_name::<bool, _>("paused")?.unwrap_or_default(),
                    row.get_by_name::<i32, _>("max_in_flight")?,
                    row.get_by_name::<i64, _>("in_flight")?.unwrap_or_default(),
                    row.get_by_name::<f64, _>("rate")?,
                    row.get_by_name::<i32, _>("burst")?,
                    row.get_by_name::<f64, _>("tokens")?,
                    row.get_by_name::<String, _>("limited")?,
                    row.get_by_name::<Interval, _>("retry_after")?,
                ))
            })
            .collect()
    })
}
