//! What differs between the PostgreSQL majors sendjobs supports (15 to 18), in one place:
//! everything else is the same code on every major (the features pg15 ... pg18 of
//! Cargo.toml pick the major; scripts/test.sh builds and tests each).

use pgrx::pg_sys;

/// This backend's local transaction id (wake-ups key what they decided by it). 17 moved it
/// from `PGPROC.lxid` into `PGPROC.vxid`.
pub fn local_transaction_id() -> pg_sys::LocalTransactionId {
    // SAFETY: MyProc is set for every backend that runs SQL.
    #[cfg(any(feature = "pg15", feature = "pg16"))]
    unsafe {
        (*pg_sys::MyProc).lxid
    }
    // SAFETY: as above.
    #[cfg(not(any(feature = "pg15", feature = "pg16")))]
    unsafe {
        (*pg_sys::MyProc).vxid.lxid
    }
}

/// Whether this transaction holds `tag` in `mode` itself. 17 added whether a stronger mode
/// counts (here it does not).
pub fn lock_held_by_me(tag: &pg_sys::LOCKTAG, mode: pg_sys::LOCKMODE) -> bool {
    // SAFETY: reads this backend's own lock table.
    #[cfg(any(feature = "pg15", feature = "pg16"))]
    unsafe {
        pg_sys::LockHeldByMe(tag, mode)
    }
    // SAFETY: as above.
    #[cfg(not(any(feature = "pg15", feature = "pg16")))]
    unsafe {
        pg_sys::LockHeldByMe(tag, mode, false)
    }
}
