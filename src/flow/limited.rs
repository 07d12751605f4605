//! The backend's list of the queues with flow control, which a claim's first pass leaves
//! out, kept true by the changes' invalidations and the settings lock; and a finish's
//! wake-up of a capped queue, which asks it.

use std::cell::{Cell, RefCell};

use pgrx::prelude::*;
use pgrx::spi::SpiClient;
use pgrx::{register_xact_callback, PgXactCallbackEvent};

use crate::flow::turns::{self, extension_lock};
use crate::machinery::errors::{Result, SendJobsError};
use crate::machinery::spi_plans::settings_relation;
use crate::machinery::statements::{first, statement, Statement};
use crate::machinery::wakeup;

static LIMITED_QUEUES: Statement = statement!("limited_queues.sql");
static QUEUE_WAKES_WHEN_FREED: Statement = statement!("queue_wakes_when_freed.sql");

// Which queues have flow control, as a claim's first pass needs to know
// (src/verbs/claim.rs: it leaves them out, to be claimed one by one under their locks).
// Read from sendjobs_queues once, then kept by each backend until a change commits: reading
// it in every claim's statement was the largest cost flow control added to a claim from any
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
pub fn forget_list() {
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
    /// a claim from any queue leaves every limited queue to the end: src/verbs/claim.rs).
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
/// a capped queue (src/verbs/finalize.rs): the kept list, read again after a change reached
/// this backend; no settings lock, so a change committing at this moment may be missed (a
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
pub fn settings_changed(client: &SpiClient<'_>) -> Result<()> {
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
