//! sendjobs: a send-job queue whose lease protocol lives inside PostgreSQL.
//!
//! Workers claim jobs with a lease and a per-claim fencing token (`claim_generation`);
//! finalizers apply only with the current token; a trigger keeps terminal states of a
//! business table absorbing. The contract and its numbered invariants: docs/contract.md.

use pgrx::prelude::*;

// Four rooms, each importing only those below it: docs/architecture.md.
/// Flow control and the turn of queues: what a claim obeys beside its order.
mod flow;
/// The guards: a claim's fence, the state rule, the terminal guard.
mod guards;
/// The machinery the others stand on: statements, plans, errors, settings.
mod machinery;
/// The verbs: the SQL functions users call, one file each.
mod verbs;

::pgrx::pg_module_magic!(name, version);

pgrx::extension_sql_file!("../sql/schema.sql", name = "schema", bootstrap);
pgrx::extension_sql_file!(
    "../sql/comments_and_privileges.sql",
    name = "comments_and_privileges",
    finalize
);

#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    machinery::config::init();
}

#[cfg(any(test, feature = "pg_test"))]
mod tests;

/// Required by `cargo pgrx test`.
#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    #[must_use]
    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec![]
    }
}
