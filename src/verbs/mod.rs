//! The verbs: the SQL functions users call, one file each. Each checks its arguments, then
//! runs its statements through the machinery; the rooms below are flow control, the
//! guards and the machinery (tests/reference/check.py holds the floors). Flow control's
//! own verbs are in src/flow/settings.rs and src/flow/blocked_keys.rs, the guard's in
//! src/guards/guard.rs.

/// `sendjobs_grant`, `sendjobs_revoke`.
pub mod access;
/// `sendjobs_cancel`.
pub mod cancel;
/// `sendjobs_claim`, and giving up on jobs whose last lease expired.
pub mod claim;
/// `sendjobs_enqueue`, `sendjobs_enqueue_many`.
pub mod enqueue;
/// `sendjobs_finalize`, `sendjobs_finalize_batch`, `sendjobs_heartbeat`.
pub mod finalize;
/// `sendjobs_link_transactions`, `sendjobs_unlink_transactions`.
pub mod link;
/// `sendjobs_notify`.
pub mod notify;
/// `sendjobs_create_consumer`, `sendjobs_read_events`, `sendjobs_drop_consumer`.
pub mod outbox;
/// `sendjobs_purge`.
pub mod purge;
/// `sendjobs_redrive`.
pub mod redrive;
/// `sendjobs_stats`.
pub mod stats;
