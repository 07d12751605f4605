//! Flow control per queue, enforced by sendjobs_claim itself: pause and resume, a cap on
//! the jobs in flight, a rate of claims with bursts
//! (docs/decisions/0013-flow-control-in-the-claim.md). The settings live in
//! sendjobs_queues; a claim from a queue that has any takes that queue's row lock, so the
//! claims of such a queue take turns, and claims no more than its settings allow.

/// The turn of queues of a claim from any queue.
pub mod fair_share;
/// Ordered jobs waiting for their key.
pub mod key_waits;
/// The extension's own locks, taken in one place.
pub mod turns;

use std::cell::{Cell, RefCell};

use pgrx::prelude::*;
use pgrx::spi::SpiClient;
use pgrx::{register_xact_callback, PgXactCallbackEvent};

use crate::flow::turns::extension_lock;
use crate::machinery::clock::wall_clock;
use crate::machinery::errors::{or_raise, queue_name, required, Result, SendJobsError};
use crate::machinery::queue_names::readable_or_known;
use crate::machinery::spi_plans::settings_relation;
use crate::machinery::statements::{first, statement, Statement};
use crate::machinery::wakeup;

static QUEUE_WAKES_WHEN_FREED: Statement = statement!("queue_wakes_when_freed.sql");
static QUEUE_PAUSE_SAVE: Statement = statement!("queue_pause_save.sql");
static QUEUE_LIMIT_SAVE: Statement = statement!("queue_limit_save.sql");
static QUEUE_LIMITS: Statement = statement!("queue_limits.sql");
static QUEUE_LOCK_WAIT: Statement = statement!("queue_lock.sql", "wait");
static QUEUE_LOCK_SKIP: Statement = statement!("queue_lock.sql", "skip");
static QUEUE_IN_FLIGHT: Statement = statement!("queue_in_flight.sql");
static QUEUE_TOKENS_SAVE: Statement = statement!("queue_tokens_save.sql");
static LIMITED_QUEUES: Statement = statement!("limited_queues.sql");
static QUEUE_BLOCK_KEYS_SAVE: Statement = statement!("queue_block_keys_save.sql");
static KEY_BLOCK: Statement = statement!("key_block.sql");
static KEY_UNBLOCK: Statement = statement!("key_unblock.sql");

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

/// Sets whether a job of `queue` with an ordering key that fails for good (a `failed`
/// finalize, a retry on its last attempt, a lease that expired on its last attempt) stops
/// the rest of its key: from its commit, no job of the key is claimed but the failed job's
/// redrive, which goes first, until that redrive was sent or cancelled, or
/// sendjobs_unblock_key lets the key go on. Off by default: the next job of the key goes.
#[pg_extern(volatile, parallel_unsafe)]
fn sendjobs_block_keys(queue: Option<&str>, block: Option<bool>) {
    or_raise(set_block_keys(queue, block))
}

fn set_block_keys(queue: Option<&str>, block: Option<bool>) -> Result<()> {
    let queue = queue_name(required(queue, "queue")?)?;
    let block = required(block, "block")?;
    Spi::connect_mut(|client| {
        readable_or_known(client, queue)?;
        QUEUE_BLOCK_KEYS_SAVE.run(client, &[queue.into(), block.into()])?;
        Ok(())
    })
}

/// Lets `ordering_key` go on past the job that stopped it (sendjobs_block_keys): its next
/// job is claimed as if the failed one had not blocked. True when the key was stopped.
#[pg_extern(volatile, parallel_unsafe)]
fn sendjobs_unblock_key(ordering_key: Option<&str>) -> bool {
    or_raise(unblock_key(ordering_key))
}

fn unblock_key(ordering_key: Option<&str>) -> Result<bool> {
    let key = required(ordering_key, "ordering_key")?;
    Spi::connect_mut(|client| {
        let stopped =
            first::<bool>(KEY_UNBLOCK.run(client, &[key.into()])?, "stopped")? == Some(true);
        // Its next job may be free now (src/flow/key_waits.rs).
        key_waits::clear(client, vec![key.to_owned()])?;
        Ok(stopped)
    })
}

/// A job with an ordering key that failed for good: its key, id and queue.
pub type FailedKey = (String, i64, String);

/// After jobs with an ordering key failed for good, in the transaction that finished them:
/// the keys of those whose queue blocks its keys stop there (key_block.sql).
pub fn stop_failed_keys(client: &SpiClient<'_>, failed: Vec<FailedKey>) -> Result<()> {
    if failed.is_empty() {
        return Ok(());
    }
    let mut keys = Vec::with_capacity(failed.len());
    let mut ids = Vec::with_capacity(failed.len());
    let mut queues = Vec::with_capacity(failed.len());
    for (key, id, queue) in failed {
        keys.push(key);
        ids.push(id);
        queues.push(queue);
    }
    let args = [keys.into(), ids.into(), queues.into(), wall_clock().into()];
    // Whether a queue blocks its keys as committed now: under REPEATABLE READ a
    // sendjobs_block_keys that committed after the snapshot holds too (decision 0017).
    if turns::read_committed() {
        KEY_BLOCK.run(client, &args)?;
    } else {
        KEY_BLOCK.run_now(client, &args)?;
    }
    Ok(())
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

// Which queues have flow control, as a claim's first pass needs to know (src/claim.rs:
// it leaves them out, to be claimed one by one under their locks). Read from
// sendjobs_queues once, then kept by each backend until a change commits: reading it in
// every claim's statement was the largest cost flow control added to a claim from any
// queue (decision 0013, "Where a queue without settings pays"). What keeps the kept list
// true (decision 0013, "Which queues have flow control"):
// - a change (sendjobs_pause, sendjobs_resume, sendjobs_limit) invalidates the
//   relation's cache entry in every backend when it commits (this backend's list at
//   once, and again if its transaction aborts); the callback below counts those
//   invalidations, and a list read before the last one is read again;
// - its transaction takes the settings lock in the exclusive mode just before it commits,
//   and keeps it until its invalidation is out (Postgres sends a transaction's
//   invalidations after it becomes visible and before it releases its locks);
// - a claim takes that lock in the shared mode, without waiting, before it reads the
//   list (which reads every invalidation that committed before), and keeps it while its
//   first pass runs: no change can commit between the list it uses and that pass's
//   snapshot. When a change is committing, the claim does not wait for it: it reads the
//   list in a statement of its own, keeps nothing, and its first pass checks each row
//   against the settings in its own snapshot (claim.sql's other_queues).
// The lock is sendjobs_queues' own object lock (src/flow/turns.rs), not the relation's
// lock: a claim that waits for a limited queue's row lock holds the relation in RowShare,
// which a change's exclusive lock at its commit would wait for (deadlock).

thread_local! {
    /// The list as last read, and the invalidation count it was read at.
    static LIMITED: RefCell<(u64, List)> = const { RefCell::new((u64::MAX, List::new())) };
    /// Invalidations of sendjobs_queues' cache entry (or of every entry) seen.
    static INVALIDATIONS: Cell<u64> = const { Cell::new(0) };
    /// The relation the callback watches (0 until the first claim).
    static WATCHED: Cell<pg_sys::Oid> = const { Cell::new(pg_sys::InvalidOid) };
}

/// Counts an invalidation of the watched relation (or of every relation). Runs inside
/// Postgres's invalidation processing: no SPI, no allocation, no panic.
#[pg_guard]
unsafe extern "C-unwind" fn settings_invalidated(_arg: pg_sys::Datum, relation: pg_sys::Oid) {
    if relation == pg_sys::InvalidOid || relation == WATCHED.get() {
        forget_list();
    }
}

/// The next claim reads the list again.
fn forget_list() {
    INVALIDATIONS.set(INVALIDATIONS.get().wrapping_add(1));
}

/// The queues with flow control, in name order, and those of them that are paused.
#[derive(Clone)]
struct List {
    queues: Vec<String>,
    paused: Vec<String>,
}

impl List {
    const fn new() -> Self {
        List {
            queues: Vec::new(),
            paused: Vec::new(),
        }
    }
}

/// What a claim's first pass is told about flow control (`limited_queues`).
pub struct Limited {
    /// The queues with flow control, in name order.
    pub queues: Vec<String>,
    /// Those of them that are paused (empty under REPEATABLE READ and SERIALIZABLE, where
    /// a claim from any queue leaves every limited queue to the end: src/claim.rs).
    pub paused: Vec<String>,
    /// The settings lock this claim holds until `first_pass_done`: the list is exact for
    /// the first pass. None: a change was committing, the list is only as of its read,
    /// and the first pass must check each row against the settings itself.
    held: Option<pg_sys::LOCKTAG>,
}

impl Limited {
    /// Whether the list holds for the whole first pass.
    pub fn exact(&self) -> bool {
        self.held.is_some()
    }
}

/// The queues with flow control, for a claim's first pass; from the backend's list while
/// it holds. Under REPEATABLE READ and SERIALIZABLE the transaction's snapshot may be
/// older than the last change, so the list is read as committed now (`read_list_now`),
/// under the settings lock: a claim there never takes a job of a queue whose pause or
/// limits committed after its snapshot (decision 0017).
pub fn limited_queues(client: &SpiClient<'_>) -> Result<Limited> {
    let relation = watch(client)?;
    let tag = extension_lock(relation);
    // Never waited for; released by first_pass_done or at the transaction's end.
    let held = turns::acquire(&tag, pg_sys::AccessShareLock, true).then_some(tag);
    // SAFETY: reads the invalidations committed so far (before this lock's holder, if any,
    // released it: all of them, when the lock was had).
    unsafe { pg_sys::AcceptInvalidationMessages() };
    if !turns::read_committed() {
        // Without the lock a change is committing, which a snapshot of the present could
        // miss and the transaction's cannot see: the caller retries.
        if held.is_none() {
            return Err(SendJobsError::SettingsChanging);
        }
        let queues = read_list_now(client)?;
        return Ok(Limited {
            queues,
            paused: Vec::new(),
            held,
        });
    }
    let seen = INVALIDATIONS.get();
    let kept = match held {
        Some(_) => LIMITED.with_borrow(|(at, list)| (*at == seen).then(|| list.clone())),
        None => None,
    };
    let list = match kept {
        Some(list) => list,
        None => {
            let list = read_list(client)?;
            if held.is_some() {
                LIMITED.set((seen, list.clone()));
            }
            list
        }
    };
    Ok(Limited {
        queues: list.queues,
        paused: list.paused,
        held,
    })
}

/// The queues with flow control as this backend knows them now, for a finish's wake-up of
/// a capped queue (src/finalize.rs): the kept list, read again after a change reached this
/// backend; no settings lock, so a change committing at this moment may be missed (a
/// wake-up less: the workers wait for their lease's end or their poll). A list read here
/// is kept for the claims too: every change that was visible to its read is in it, and
/// one that was not yet sends its invalidation after, which makes the next claim read it
/// again.
pub fn known_limited_queues(client: &SpiClient<'_>) -> Result<Vec<String>> {
    watch(client)?;
    // SAFETY: reads the invalidations committed so far.
    unsafe { pg_sys::AcceptInvalidationMessages() };
    let seen = INVALIDATIONS.get();
    if let Some(queues) =
        LIMITED.with_borrow(|(at, list)| (*at == seen).then(|| list.queues.clone()))
    {
        return Ok(queues);
    }
    let list = read_list(client)?;
    let queues = list.queues.clone();
    if turns::read_committed() {
        LIMITED.set((seen, list));
    }
    Ok(queues)
}

/// Registers the invalidation callback for sendjobs_queues (once per backend, and again
/// for a new extension's table).
fn watch(client: &SpiClient<'_>) -> Result<pg_sys::Oid> {
    let relation = settings_relation(client)?;
    if WATCHED.get() != relation {
        if WATCHED.get() == pg_sys::InvalidOid {
            // SAFETY: registered once per backend, for its life (the callback is static).
            unsafe {
                pg_sys::CacheRegisterRelcacheCallback(
                    Some(settings_invalidated),
                    pg_sys::Datum::from(0),
                )
            };
        }
        WATCHED.set(relation);
        forget_list();
    }
    Ok(relation)
}

/// The queues with flow control, as sendjobs_queues says in this statement's snapshot.
fn read_list(client: &SpiClient<'_>) -> Result<List> {
    let mut list = List::new();
    for row in LIMITED_QUEUES.run(client, &[])? {
        let Some(queue) = row.get_by_name::<String, _>("queue")? else {
            continue;
        };
        if row.get_by_name::<bool, _>("paused")? == Some(true) {
            list.paused.push(queue.clone());
        }
        list.queues.push(queue);
    }
    Ok(list)
}

/// The queues with flow control as committed now, whatever the transaction's snapshot.
fn read_list_now(client: &SpiClient<'_>) -> Result<Vec<String>> {
    Ok(LIMITED_QUEUES
        .run_now(client, &[])?
        .into_iter()
        .flatten()
        .collect())
}

/// Releases the settings lock a claim took for its first pass (`limited_queues`), if it
/// still holds it.
pub fn first_pass_done(limited: &mut Limited) {
    if let Some(tag) = limited.held.take() {
        // SAFETY: the lock limited_queues took in this transaction, released once.
        unsafe { pg_sys::LockRelease(&tag, pg_sys::AccessShareLock as pg_sys::LOCKMODE, false) };
    }
}

/// After a change of a queue's pause or limits: every backend's list is invalidated at
/// the commit, and the commit takes the settings lock (above). A prepared transaction
/// would send its invalidation at COMMIT PREPARED without that lock: refused.
fn settings_changed(client: &SpiClient<'_>) -> Result<()> {
    let relation = settings_relation(client)?;
    // SAFETY: queues an invalidation of a relation that exists, sent at the commit.
    unsafe { pg_sys::CacheInvalidateRelcacheByRelid(relation) };
    // Here at once (the invalidation reaches this backend at its next command), and
    // again at an abort (the list may have been read with the change in it).
    forget_list();
    register_xact_callback(PgXactCallbackEvent::Abort, forget_list);
    register_xact_callback(PgXactCallbackEvent::PreCommit, move || {
        // The lock above in the exclusive mode, waited for, until the commit ends.
        turns::acquire(
            &extension_lock(relation),
            pg_sys::AccessExclusiveLock,
            false,
        );
    });
    register_xact_callback(PgXactCallbackEvent::PrePrepare, || {
        ereport!(
            PgLogLevel::ERROR,
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            "sendjobs: a transaction that changed a queue's pause or limits cannot be prepared",
            "Its change would reach the other sessions' lists of limited queues at COMMIT PREPARED, unordered with their claims."
        );
    });
    Ok(())
}

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
        let elapsed = seconds_between(at, now).max(0.0);
        let tokens = (tokens + rate * elapsed).min(f64::from(burst));
        jobs = jobs.min(tokens.floor().max(0.0) as usize);
        bucket = Some(Bucket { tokens, at: now });
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
    if claimed == 0 {
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

/// After a job in flight in `queue` finished or was cancelled (a place came free): wakes
/// its workers at commit when the queue has a cap and wake-ups on. Asked only of the
/// queues with flow control (`known_limited_queues`).
pub fn wake_when_freed(client: &SpiClient<'_>, queue: &str) -> Result<()> {
    if wakeup::wakes(queue) || !known_limited_queues(client)?.iter().any(|q| q == queue) {
        return Ok(());
    }
    let wake = first::<bool>(QUEUE_WAKES_WHEN_FREED.run(client, &[queue.into()])?, "wake")?;
    if wake == Some(true) {
        wakeup::wake_queue(client, queue)?;
    }
    Ok(())
}
