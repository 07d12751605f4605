//! Running a step that may fail without failing the caller: an internal subtransaction,
//! as PL/pgSQL's EXCEPTION blocks and PL/Python's `plpy.subtransaction()` run one.

use pgrx::pg_sys;
use pgrx::pg_sys::panic::CaughtError;
use pgrx::{PgSqlErrorCode, PgTryBuilder};

use crate::machinery::errors::Result;

/// Runs `step` in a subtransaction. When it fails (a Postgres ERROR, or an `Err`), all it
/// did is rolled back and its message returned; the caller's transaction goes on. A
/// query cancel (57014: a cancel request, statement_timeout) is raised again.
pub fn try_step(
    step: impl FnOnce() -> Result<()> + std::panic::UnwindSafe,
) -> std::result::Result<(), String> {
    // SAFETY: the protocol of Postgres's own callers (pl_exec.c): begin, run in the
    // caller's memory context, then release or roll back and restore the context and
    // resource owner. pgrx has already copied and flushed a caught error's state.
    let (context, owner) = unsafe { (pg_sys::CurrentMemoryContext, pg_sys::CurrentResourceOwner) };
    unsafe {
        pg_sys::BeginInternalSubTransaction(std::ptr::null());
        pg_sys::MemoryContextSwitchTo(context);
    }
    let restore = |commit: bool| unsafe {
        if commit {
            pg_sys::ReleaseCurrentSubTransaction();
        } else {
            pg_sys::RollbackAndReleaseCurrentSubTransaction();
        }
        pg_sys::MemoryContextSwitchTo(context);
        pg_sys::CurrentResourceOwner = owner;
    };
    PgTryBuilder::new(|| match step() {
        Ok(()) => {
            restore(true);
            Ok(())
        }
        Err(error) => {
            restore(false);
            Err(error.to_string())
        }
    })
    .catch_others(|caught| {
        restore(false);
        let report = match &caught {
            CaughtError::PostgresError(report) | CaughtError::ErrorReport(report) => report,
            CaughtError::RustPanic { ereport, .. } => ereport,
        };
        // A cancel request or a statement timeout is meant for the whole call, not for
        // this step (PL/pgSQL's WHEN OTHERS does not catch it either).
        if report.sql_error_code() == PgSqlErrorCode::ERRCODE_QUERY_CANCELED {
            caught.rethrow();
        }
        Err(report.message().to_owned())
    })
    .execute()
}
