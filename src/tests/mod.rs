//! In-database tests (`cargo pgrx test`): one file per concern, each a `#[pg_schema] mod
//! tests` whose `#[pg_test]`s run inside a test PostgreSQL, each in a transaction that is
//! rolled back. What they keep is what only Rust can see or drive: behaviour step by
//! step, plan shapes and cost growth, and the model-based test. Every SQLSTATE of bad
//! input is documented and checked in one place, tests/pg_regress/sql/errors.sql;
//! races between sessions are tests/isolation.

use pgrx::prelude::*;

mod bounds;
mod fair_share;
mod guard;
mod job_state;
mod link;
mod model;
mod plans;
mod queue_names;
mod statements;

/// Tests that take turns, on a transaction-level advisory lock of their own: those whose
/// claims take ordered jobs, since a claim in a transaction that finished an ordered job
/// takes their turn only if no other transaction holds it (src/flow/turns.rs: this one
/// would then skip them, where the test's model expects them taken), and these tests hold
/// it to their end; and those that count what their statements read (src/tests/plans.rs).
pub(crate) fn one_at_a_time() {
    run("SELECT pg_advisory_xact_lock(hashtext('sendjobs src/tests one at a time'))");
}

/// Runs `f` in a subtransaction that is always rolled back, catching its error: each case
/// of a property test starts from the same tables inside the one transaction of its test.
pub(crate) fn rolled_back<R>(f: impl FnOnce() -> R) -> std::thread::Result<R> {
    // SAFETY: the pattern PL/pgSQL uses for exception blocks: remember the memory context
    // and resource owner, begin, run, roll back, restore both.
    unsafe {
        let context = pg_sys::CurrentMemoryContext;
        let owner = pg_sys::CurrentResourceOwner;
        pg_sys::BeginInternalSubTransaction(std::ptr::null());
        pg_sys::MemoryContextSwitchTo(context);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        pg_sys::RollbackAndReleaseCurrentSubTransaction();
        pg_sys::MemoryContextSwitchTo(context);
        pg_sys::CurrentResourceOwner = owner;
        result
    }
}

/// Runs `cases` random operation sequences from `sequences` through `run_case`, each in a
/// subtransaction that is rolled back (`rolled_back`), and panics with proptest's minimal
/// failing sequence under `what`: the model-based tests (model.rs, fair_share.rs).
pub(crate) fn check_sequences<S: proptest::strategy::Strategy>(
    cases: u32,
    sequences: S,
    run_case: impl Fn(&S::Value) -> Result<(), String>,
    what: &str,
) {
    use proptest::test_runner::{Config, TestCaseError, TestRunner};
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&sequences, |ops| match rolled_back(|| run_case(&ops)) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(divergence)) => Err(TestCaseError::fail(divergence)),
        Err(panic) => Err(TestCaseError::fail(format!(
            "error: {}",
            panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a Postgres error".into())
        ))),
    });
    if let Err(failure) = result {
        panic!("{what} (minimal sequence below):\n{failure}");
    }
}

fn run(sql: &str) {
    Spi::run(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
}

fn one<T: FromDatum + IntoDatum>(sql: &str) -> T {
    Spi::get_one::<T>(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .unwrap_or_else(|| panic!("{sql}: NULL"))
}

/// The SQLSTATE `sql` fails with ("00000" when it succeeds), run in a subtransaction.
fn sqlstate_of(sql: &str) -> String {
    run(
        "CREATE OR REPLACE FUNCTION pg_temp.sqlstate_of(statement text) RETURNS text
         LANGUAGE plpgsql AS $$
         BEGIN EXECUTE statement; RETURN '00000';
         EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE; END $$",
    );
    Spi::get_one_with_args::<String>("SELECT pg_temp.sqlstate_of($1)", &[sql.into()])
        .unwrap()
        .unwrap()
}

/// Everything the extension owns plus the business table, as one comparable text.
fn state() -> String {
    one::<String>(
        "SELECT concat_ws(' | ',
            (SELECT string_agg(j::text, ';' ORDER BY id) FROM send_jobs j),
            (SELECT string_agg(e::text, ';' ORDER BY job_id) FROM send_job_events e),
            (SELECT string_agg(l::text, ';') FROM sendjobs_transaction_link l),
            (SELECT string_agg(t::text, ';' ORDER BY id) FROM txn t),
            (SELECT string_agg(tgname || ':' || pg_get_triggerdef(oid), ';' ORDER BY tgname)
               FROM pg_trigger WHERE NOT tgisinternal), '')",
    )
}

fn business_table() {
    run(
        "CREATE TABLE txn (id text PRIMARY KEY, status text NOT NULL DEFAULT 'pending');
         INSERT INTO txn (id) SELECT 't' || g FROM generate_series(1, 5) g;",
    );
}

/// Claims one job with `lease` and returns (id, claim_generation).
fn claim_one(lease: &str) -> (i64, i64) {
    let (id, generation) = Spi::get_two::<i64, i64>(&format!(
        "SELECT id, claim_generation FROM sendjobs_claim(1, '{lease}')"
    ))
    .unwrap();
    (id.expect("a job was claimed"), generation.unwrap())
}

fn state_without_txn() -> String {
    one::<String>("SELECT coalesce(string_agg(j::text, ';' ORDER BY id), '') FROM send_jobs j")
}
