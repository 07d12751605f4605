//! The machinery: what the other rooms stand on. It imports none of them
//! (tests/reference/check.py holds the floors).

/// The one clock of every lease.
pub mod clock;
/// The settings (`sendjobs.*`).
pub mod config;
/// Every error, with its SQLSTATE.
pub mod errors;
/// What differs between PostgreSQL 15 and 18.
pub mod majors;
/// Which queue names a new queue may have.
pub mod queue_names;
/// Running statements: plans kept per backend, as the owner, the path pinned.
pub mod spi_plans;
/// SQL types pgrx does not map (`name`, `regrole`).
pub mod sql_types;
/// The statement files, read at compile time, with their parameters and columns.
pub mod statements;
/// A step that may fail without failing the caller.
pub mod subtransaction;
/// The NOTIFYs a transaction sends at commit, once each.
pub mod wakeup;
