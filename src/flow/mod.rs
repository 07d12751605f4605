//! Flow control and the turn of queues: what a claim obeys beside its order. Per queue, a
//! pause, a cap on the jobs in flight, a rate of claims with bursts
//! (docs/decisions/0013-flow-control-in-the-claim.md), enforced by sendjobs_claim itself:
//! the settings live in sendjobs_queues; a claim from a queue that has any takes that
//! queue's row lock, so the claims of such a queue take turns, and claims no more than its
//! settings allow. Beside them: the turn of queues, ordered jobs that wait for their key,
//! and the extension's own locks. The room stands on the machinery and the guards only
//! (tests/reference/check.py holds the floors).

/// A queue's allowance for one claim: its pause, its cap, its rate's tokens.
pub mod allowance;
/// Keys stopped by a job that failed for good: sendjobs_block_keys, sendjobs_unblock_key.
pub mod blocked_keys;
/// The turn of queues of a claim from any queue.
pub mod fair_share;
/// Ordered jobs waiting for their key.
pub mod key_waits;
/// The backend's list of the queues with flow control.
pub mod limited;
/// sendjobs_pause, sendjobs_resume, sendjobs_limit, sendjobs_queue_limits.
pub mod settings;
/// The extension's own locks, taken in one place.
pub mod turns;
