//! Ordered jobs that wait for their key (decision 0020). A claim of ordered jobs marks the
//! jobs its scan passed over, not free, as waiting (`waits_for_key`, set by
//! sql/statements/claim_shares.sql), and the claims after it pass over them; here, after
//! a job of a key finished or went back to pending, or a key was let go, the jobs that
//! may be free now wait no more (key_waits_clear.sql).
//!
//! Marks are made under the turn of the claims of ordered jobs (src/flow/turns.rs); a clear
//! holds those claims off until its transaction ends, and reads the marks in a snapshot
//! taken after it waited for the claims in progress. So a claim that saw the finished job
//! still unfinished, and marked the job behind it, committed before the clear, which then
//! sees its mark; and a claim after it sees the job finished, and marks nothing.

use pgrx::spi::SpiClient;

use crate::flow::turns;
use crate::flow::turns::read_committed;
use crate::machinery::errors::Result;
use crate::machinery::spi_plans::queue_relation_oids;
use crate::machinery::statements::{statement, Statement};

static KEY_WAITS_CLEAR: Statement = statement!("key_waits_clear.sql");

/// The jobs of `keys` that may be free now wait no more: after a finish, a retry, or a
/// key let go, in the transaction that made it.
pub fn clear(client: &SpiClient<'_>, mut keys: Vec<String>) -> Result<()> {
    if keys.is_empty() {
        return Ok(());
    }
    keys.sort_unstable();
    keys.dedup();
    turns::hold_off_keyed_claims(queue_relation_oids(client)?.0);
    // Under REPEATABLE READ and SERIALIZABLE the transaction's snapshot may predate a
    // mark that committed while this waited: the marks as committed now (decision 0017).
    if read_committed() {
        KEY_WAITS_CLEAR.run(client, &[keys.into()])?;
    } else {
        KEY_WAITS_CLEAR.run_now(client, &[keys.into()])?;
    }
    Ok(())
}
