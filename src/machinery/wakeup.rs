//! Wake-ups: workers LISTEN on `sendjobs_wakeup` instead of polling. Opt-in per queue
//! (sendjobs_notify, src/verbs/notify.rs); an enqueue into such a queue sends one NOTIFY
//! per queue and transaction, with the queue's name as payload. The outbox's consumers
//! LISTEN on `sendjobs_events`: a transaction that finishes jobs while the outbox has a
//! consumer created with `wake` sends one NOTIFY there, with an empty payload.

use std::cell::RefCell;
use std::collections::HashMap;

use pgrx::pg_sys;
use pgrx::spi::SpiClient;

use crate::machinery::errors::Result;
use crate::machinery::statements::{first, statement, Statement};

static QUEUE_NOTIFY: Statement = statement!("queue_notify.sql");
static WAKEUP: Statement = statement!("wakeup.sql");
static READERS_EXIST: Statement = statement!("readers_exist.sql");
static WAKEUP_READERS: Statement = statement!("wakeup_readers.sql");

/// What this (sub)transaction has decided about each queue it enqueued into: `true`
/// when it has notified. Keyed by the local transaction and subtransaction ids: a
/// subtransaction rolled back takes its NOTIFY with it, and the next enqueue, in
/// another subtransaction, sends it again (Postgres delivers identical notifications
/// of one transaction once).
struct Decided {
    transaction: (pg_sys::LocalTransactionId, pg_sys::SubTransactionId),
    queues: HashMap<String, bool>,
    /// Whether the outbox's consumers were woken (or found absent).
    readers: Option<bool>,
}

thread_local! {
    static DECIDED: RefCell<Option<Decided>> = const { RefCell::new(None) };
}

fn current_transaction() -> (pg_sys::LocalTransactionId, pg_sys::SubTransactionId) {
    // SAFETY: reads the current subtransaction's id.
    (crate::machinery::majors::local_transaction_id(), unsafe {
        pg_sys::GetCurrentSubTransactionId()
    })
}

/// This (sub)transaction's decisions, made afresh when it is new.
fn decided<R>(f: impl FnOnce(&mut Decided) -> R) -> R {
    let now = current_transaction();
    DECIDED.with_borrow_mut(|decided| {
        let current = match decided {
            Some(current) if current.transaction == now => current,
            _ => decided.insert(Decided {
                transaction: now,
                queues: HashMap::new(),
                readers: None,
            }),
        };
        f(current)
    })
}

/// After a job was enqueued into `queue`: the first time in this (sub)transaction, look
/// the queue up and, when its wake-ups are on, NOTIFY. Later enqueues cost a hash look-up.
pub fn after_enqueue(client: &SpiClient<'_>, queue: &str) -> Result<()> {
    let known = decided(|d| d.queues.get(queue).copied());
    if known.is_some() {
        return Ok(());
    }
    let notify = first::<bool>(QUEUE_NOTIFY.run(client, &[queue.into()])?, "notify")? == Some(true);
    if notify {
        WAKEUP.run(client, &[queue.into()])?;
    }
    decided(|d| d.queues.insert(queue.to_owned(), notify));
    Ok(())
}

/// Wakes the workers of `queue` at commit, whatever its wake-up setting (a resume of a
/// paused queue): once per (sub)transaction, an enqueue into it after this sends none.
pub fn wake_queue(client: &SpiClient<'_>, queue: &str) -> Result<()> {
    if decided(|d| d.queues.get(queue).copied()) == Some(true) {
        return Ok(());
    }
    WAKEUP.run(client, &[queue.into()])?;
    decided(|d| d.queues.insert(queue.to_owned(), true));
    Ok(())
}

/// Whether this (sub)transaction wakes the workers of `queue` at commit already.
pub fn wakes(queue: &str) -> bool {
    decided(|d| d.queues.get(queue).copied()) == Some(true)
}

/// After jobs finished (each its own event): the first time in this (sub)transaction,
/// wake the outbox's consumers when it has any. `readers` is whether it has, when the
/// caller's statement already said (the finalize's does); None looks it up.
pub fn after_finish(client: &SpiClient<'_>, readers: Option<bool>) -> Result<()> {
    if decided(|d| d.readers).is_some() {
        return Ok(());
    }
    let readers = match readers {
        Some(readers) => readers,
        None => first::<bool>(READERS_EXIST.run(client, &[])?, "readers")? == Some(true),
    };
    if readers {
        WAKEUP_READERS.run(client, &[])?;
    }
    decided(|d| d.readers = Some(readers));
    Ok(())
}
