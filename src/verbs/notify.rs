//! sendjobs_notify: a queue's wake-ups on or off. What a transaction sends at its commit
//! while they are on: src/machinery/wakeup.rs.

use pgrx::prelude::*;

use crate::machinery::errors::{or_raise, queue_name, required, Result};
use crate::machinery::queue_names::readable_or_known;
use crate::machinery::statements::{statement, Statement};

static QUEUE_NOTIFY_SAVE: Statement = statement!("queue_notify_save.sql");

/// Turns wake-ups for `queue` on or off. While on, a transaction that enqueues into the
/// queue sends, at commit, one `NOTIFY sendjobs_wakeup` with the queue's name as payload,
/// however many jobs it enqueued.
#[pg_extern(volatile, parallel_unsafe)]
fn sendjobs_notify(queue: Option<&str>, enabled: Option<bool>) {
    or_raise(set_notify(queue, enabled))
}

fn set_notify(queue: Option<&str>, enabled: Option<bool>) -> Result<()> {
    let queue = required(queue, "queue")?;
    let enabled = required(enabled, "enabled")?;
    // Wake-ups carry the queue's name: a name too long for them may not turn them on, and
    // may still turn them off (a queue named before 0.2.1 limited names).
    if enabled || queue.is_empty() {
        queue_name(queue)?;
    }
    Spi::connect_mut(|client| {
        readable_or_known(client, queue)?;
        QUEUE_NOTIFY_SAVE.run(client, &[queue.into(), enabled.into()])?;
        Ok(())
    })
}
