//! The extension's own heavyweight locks: the settings lock of sendjobs_queues
//! (src/flow/limited.rs) and the turn of the claims that take ordered jobs, which the
//! finishes of ordered jobs hold off (src/flow/key_waits.rs).
//!
//! Each is an object lock on one of the extension's relations with a sub-id of its own
//! (pg_locks: locktype `object`, classid `pg_class`, objsubid 1). No SQL command takes
//! such a lock: PostgreSQL locks a relation with relation locks, and an object lock with
//! sub-id 0 only on objects that are not relations. So a role without an access level
//! cannot hold one and make the claims wait, as it could hold any advisory lock (0.3.0
//! keyed the turn on an advisory lock: docs/decisions/0016-locks-no-role-can-take.md;
//! tests/isolation/specs/locks-no-role-can-take.spec).

use pgrx::pg_sys;

use crate::machinery::majors;

/// The sub-id of every lock here (each on a relation of its own).
const EXTENSION_LOCK_SUBID: u16 = 1;

/// The lock of `relation` (one of the extension's), in this database.
pub fn extension_lock(relation: pg_sys::Oid) -> pg_sys::LOCKTAG {
    pg_sys::LOCKTAG {
        // SAFETY: a backend global, set at connection.
        locktag_field1: unsafe { pg_sys::MyDatabaseId }.to_u32(),
        locktag_field2: pg_sys::RelationRelationId.to_u32(),
        locktag_field3: relation.to_u32(),
        locktag_field4: EXTENSION_LOCK_SUBID,
        locktag_type: pg_sys::LockTagType::LOCKTAG_OBJECT as u8,
        locktag_lockmethodid: pg_sys::DEFAULT_LOCKMETHOD as u8,
    }
}

/// Takes `tag` in `mode` until the end of the transaction (or a `LockRelease`): waited
/// for, interruptibly and under the caller's lock_timeout and statement_timeout, unless
/// `dont_wait`. Returns whether it was taken.
pub fn acquire(tag: &pg_sys::LOCKTAG, mode: u32, dont_wait: bool) -> bool {
    // SAFETY: a transaction-level lock of a tag made here (extension_lock), in one of
    // the lock method's modes.
    let got = unsafe { pg_sys::LockAcquire(tag, mode as pg_sys::LOCKMODE, false, dont_wait) };
    got != pg_sys::LockAcquireResult::LOCKACQUIRE_NOT_AVAIL
}

/// Takes the turn of the claims that take ordered jobs and holds it to the end of the
/// transaction: the lock of `send_jobs` (`relation`) in the exclusive mode. The pass that
/// follows runs in a snapshot taken after the turn, and sees every claim of an ordered job
/// that committed before it (docs/decisions/0013-flow-control-in-the-claim.md), and every
/// finish of one (`hold_off_keyed_claims`). Waits for it, but in a transaction that
/// finished an ordered job already (it holds the row-exclusive mode): two such
/// transactions would wait for each other, so there it takes the turn only if no other
/// holds either mode now. Returns whether it has the turn.
pub fn take_keyed_turn(relation: pg_sys::Oid) -> bool {
    let tag = extension_lock(relation);
    let finished_one = majors::lock_held_by_me(&tag, pg_sys::RowExclusiveLock as pg_sys::LOCKMODE);
    acquire(&tag, pg_sys::ExclusiveLock, finished_one)
}

/// Waits for the claims of ordered jobs in progress and keeps new ones off until the end of
/// the transaction: the same lock in the row-exclusive mode, which such claims' turn
/// conflicts with and other finishes do not. A finish of an ordered job takes it before
/// it lets the jobs that waited for it go (src/flow/key_waits.rs: decision 0020 says why).
pub fn hold_off_keyed_claims(relation: pg_sys::Oid) {
    acquire(&extension_lock(relation), pg_sys::RowExclusiveLock, false);
}

/// Whether the transaction takes a new snapshot for each statement (READ COMMITTED), not
/// one for all (REPEATABLE READ, SERIALIZABLE).
pub fn read_committed() -> bool {
    // SAFETY: a backend global, read on the backend's own thread.
    unsafe { pg_sys::XactIsoLevel < pg_sys::XACT_REPEATABLE_READ as i32 }
}
