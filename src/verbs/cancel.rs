//! sendjobs_cancel: a job that has not finished is cancelled, terminal like sent and failed.

use pgrx::prelude::*;

use crate::flow::key_waits;
use crate::flow::limited;
use crate::guards::fence::{stale_or_unknown, APPLIED};
use crate::machinery::clock::wall_clock;
use crate::machinery::errors::{or_raise, required, Result};
use crate::machinery::statements::{statement, Statement};
use crate::machinery::wakeup;

static CANCEL: Statement = statement!("cancel.sql");

/// Cancels job `id`: `applied` when it was pending or in_flight (it is now `cancelled`,
/// with one `cancelled` event; its holder's finalize and heartbeat get `stale`), `stale`
/// when it had already finished. The business row is not stamped: a cancelled send may
/// or may not have reached the partner.
#[pg_extern(volatile, parallel_unsafe)]
fn sendjobs_cancel(id: Option<i64>) -> &'static str {
    or_raise(cancel(id))
}

fn cancel(id: Option<i64>) -> Result<&'static str> {
    let id = required(id, "id")?;
    Spi::connect_mut(|client| {
        let rows = CANCEL.run(client, &[id.into(), wall_clock().into()])?;
        if !rows.is_empty() {
            // A job in flight frees a place: in a capped queue, wake its workers.
            let row = rows.first();
            if let Some(queue) = row.get_by_name::<String, _>("freed_queue")? {
                limited::wake_when_freed(client, &queue)?;
            }
            // The jobs that waited for it may be free now (src/flow/key_waits.rs).
            let key = row.get_by_name::<String, _>("ordering_key")?;
            key_waits::clear(client, key.into_iter().collect())?;
            wakeup::after_finish(client, None)?;
            return Ok(APPLIED);
        }
        stale_or_unknown(client, id)
    })
}
