//! Keys stopped by a job that failed for good, when its queue blocks its keys:
//! sendjobs_block_keys, sendjobs_unblock_key, and the stop made in the transaction that
//! finished the job.

use pgrx::prelude::*;
use pgrx::spi::SpiClient;

use crate::flow::key_waits;
use crate::flow::turns;
use crate::machinery::clock::wall_clock;
use crate::machinery::errors::{or_raise, queue_name, required, Result};
use crate::machinery::queue_names::readable_or_known;
use crate::machinery::statements::{first, statement, Statement};

static QUEUE_BLOCK_KEYS_SAVE: Statement = statement!("queue_block_keys_save.sql");
static KEY_BLOCK: Statement = statement!("key_block.sql");
static KEY_UNBLOCK: Statement = statement!("key_unblock.sql");

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
