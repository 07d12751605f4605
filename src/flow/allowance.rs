//! A queue's allowance for one claim, under its row lock: none while paused, no more
//! than its cap less its jobs in flight, no more than the whole tokens of its rate's
//! bucket; and the tokens a claim spends.

use pgrx::prelude::*;
use pgrx::spi::SpiClient;

use crate::flow::limited::forget_list;
use crate::machinery::clock::wall_clock;
use crate::machinery::errors::Result;
use crate::machinery::statements::{first, statement, Statement};

static QUEUE_LOCK_WAIT: Statement = statement!("queue_lock.sql", "wait");
static QUEUE_LOCK_SKIP: Statement = statement!("queue_lock.sql", "skip");
static QUEUE_IN_FLIGHT: Statement = statement!("queue_in_flight.sql");
static QUEUE_TOKENS_SAVE: Statement = statement!("queue_tokens_save.sql");

/// How a claim takes a queue's lock: a claim from that queue waits for it; a claim from
/// any queue, which locks several in turn, skips a queue another claim holds.
#[derive(Clone, Copy)]
pub enum Lock {
    Wait,
    Skip,
}

/// A queue's allowance for one claim, taken under its row lock (held to the end of the
/// transaction): how many jobs its settings let this claim take.
pub struct Allowance {
    pub jobs: usize,
    /// The claim's instant, read again once the lock was taken and the jobs in flight
    /// counted: a claim that waited for its turn still gives a full lease, and the
    /// leases it gives begin after every hold its count left out.
    pub now: TimestampWithTimeZone,
    bucket: Option<Bucket>,
}

struct Bucket {
    tokens: f64,
    at: TimestampWithTimeZone,
    /// The bucket was dated after `at`: the clock stepped back (decision 0026).
    dated_ahead: bool,
}

/// Locks `queue`'s settings and says how many of `wanted` jobs a claim may take now:
/// none while it is paused; no more than its cap less its jobs in flight; no more than
/// its whole tokens. None when the queue has no settings row (or, with `Lock::Skip`,
/// another claim holds it).
pub fn allowance(
    client: &SpiClient<'_>,
    queue: &str,
    wanted: usize,
    lock: Lock,
) -> Result<Option<Allowance>> {
    let statement = match lock {
        Lock::Wait => &QUEUE_LOCK_WAIT,
        Lock::Skip => &QUEUE_LOCK_SKIP,
    };
    let rows = statement.run(client, &[queue.into()])?;
    let Some(row) = rows.into_iter().next() else {
        if matches!(lock, Lock::Wait) {
            // The list named a queue whose row is gone: deleted other than through the
            // functions (which send the invalidation). The next claim reads it again.
            forget_list();
        }
        return Ok(None);
    };
    if row.get_by_name::<bool, _>("paused")? == Some(true) {
        return Ok(Some(Allowance {
            jobs: 0,
            now: wall_clock(),
            bucket: None,
        }));
    }
    let mut jobs = wanted;
    if let Some(cap) = row.get_by_name::<i32, _>("max_in_flight")? {
        // Counted after the lock, in a snapshot of its own (queue_in_flight.sql), of the
        // leases unexpired at an instant read before that snapshot.
        let in_flight = first::<i64>(
            QUEUE_IN_FLIGHT.run(client, &[queue.into(), wall_clock().into()])?,
            "in_flight",
        )?
        .unwrap_or_default();
        let free = (i64::from(cap) - in_flight).max(0);
        jobs = jobs.min(usize::try_from(free).unwrap_or(0));
    }
    // The claim's instant, read after the count's snapshot: every hold the count left out
    // (a finish that committed before the snapshot) ended before it, and a lease that
    // expired between the two readings was counted (one place fewer, never one more).
    // Read before the count, a finish that committed in between freed a place at an
    // instant after the new leases began: the soak found 5 of a cap of 4 by the leases'
    // clock (a claim at 20.175990 took the place of a job finished at 20.181010).
    let now = wall_clock();
    let mut bucket = None;
    if let (Some(rate), Some(burst), Some(tokens), Some(at)) = (
        row.get_by_name::<f64, _>("rate")?,
        row.get_by_name::<i32, _>("burst")?,
        row.get_by_name::<f64, _>("tokens")?,
        row.get_by_name::<TimestampWithTimeZone, _>("tokens_at")?,
    ) {
        // The instant is read after the lock, so a bucket dated after it means the clock
        // stepped back (a failover to a server whose clock is behind): it refills from
        // now on, rather than from its date, which would stop the queue for the step
        // (tests/failover/clock_step.py; decision 0026).
        let elapsed = seconds_between(at, now);
        let tokens = (tokens + rate * elapsed.max(0.0)).min(f64::from(burst));
        jobs = jobs.min(tokens.floor().max(0.0) as usize);
        bucket = Some(Bucket {
            tokens,
            at: now,
            dated_ahead: elapsed < 0.0,
        });
    }
    Ok(Some(Allowance { jobs, now, bucket }))
}

/// Takes `claimed` jobs' tokens from the queue's bucket (a claim of a queue with a rate).
pub fn spend(
    client: &SpiClient<'_>,
    queue: &str,
    allowance: &Allowance,
    claimed: usize,
) -> Result<()> {
    let Some(bucket) = &allowance.bucket else {
        return Ok(());
    };
    if claimed == 0 && !bucket.dated_ahead {
        // Nothing taken: the bucket refills from where it was, no write.
        return Ok(());
    }
    let left = bucket.tokens - claimed as f64;
    QUEUE_TOKENS_SAVE.run(client, &[queue.into(), left.into(), bucket.at.into()])?;
    Ok(())
}

fn seconds_between(from: TimestampWithTimeZone, to: TimestampWithTimeZone) -> f64 {
    // Microseconds since 2000-01-01, as Postgres keeps a timestamptz.
    let micros = |at: TimestampWithTimeZone| i64::from(at) as f64;
    (micros(to) - micros(from)) / 1_000_000.0
}
