//! The one clock every lease computation uses.

use pgrx::prelude::*;

/// The database server's wall clock at this instant (what `clock_timestamp()` returns).
///
/// Not `now()`: that is the start of the caller's transaction, so a claim made late in a
/// long transaction would get a lease that is already partly (or wholly) spent, and an
/// eligibility check would judge leases against a stale instant. Read once per call, so
/// every row a statement touches shares the same instant, and passed to SQL as a
/// parameter (a volatile function in the WHERE clause could not use the indexes).
pub fn wall_clock() -> TimestampWithTimeZone {
    // SAFETY: GetCurrentTimestamp only reads the system clock.
    let micros = unsafe { pg_sys::GetCurrentTimestamp() };
    TimestampWithTimeZone::try_from(micros).unwrap_or_else(|_| {
        crate::machinery::errors::SendJobsError::Internal("the server clock is out of range".into())
            .raise()
    })
}
