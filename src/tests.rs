// In-database tests (`cargo pgrx test`): each function, each bad input, the clock, and
// the claim's cost on a large backlog. Multi-session races live in test/specs.

use pgrx::prelude::*;

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
    run("CREATE OR REPLACE FUNCTION pg_temp.sqlstate_of(statement text) RETURNS text
         LANGUAGE plpgsql AS $$
         BEGIN EXECUTE statement; RETURN '00000';
         EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE; END $$");
    Spi::get_one_with_args::<String>("SELECT pg_temp.sqlstate_of($1)", &[sql.into()])
        .unwrap()
        .unwrap()
}

/// Everything the extension owns plus the business table, as one comparable text.
fn state() -> String {
    one::<String>(
        "SELECT concat_ws(' | ',
            (SELECT string_agg(j::text, ';' ORDER BY id) FROM send_jobs j),
            (SELECT string_agg(e::text, ';' ORDER BY id) FROM send_job_events e),
            (SELECT string_agg(l::text, ';') FROM sendjobs_transaction_link l),
            (SELECT string_agg(t::text, ';' ORDER BY id) FROM txn t),
            (SELECT string_agg(tgname || ':' || pg_get_triggerdef(oid), ';' ORDER BY tgname)
               FROM pg_trigger WHERE NOT tgisinternal), '')",
    )
}

fn business_table() {
    run("CREATE TABLE txn (id text PRIMARY KEY, status text NOT NULL DEFAULT 'pending');
         INSERT INTO txn (id) SELECT 't' || g FROM generate_series(1, 5) g;");
}

/// Claims one job with `lease` and returns (id, claim_generation).
fn claim_one(lease: &str) -> (i64, i64) {
    let (id, generation) = Spi::get_two::<i64, i64>(&format!(
        "SELECT id, claim_generation FROM sendjobs_claim(1, '{lease}')"
    ))
    .unwrap();
    (id.expect("a job was claimed"), generation.unwrap())
}

#[pg_test]
fn enqueue_applies_defaults_and_arguments() {
    let id = one::<i64>("SELECT sendjobs_enqueue('{\"to\":\"p\"}')");
    let row = one::<String>(&format!(
        "SELECT concat_ws(',', queue, payload, transaction_id IS NULL, idempotency_key IS NULL,
                status, attempts, max_attempts, claim_generation,
                next_attempt_at <= clock_timestamp(), claimed_at IS NULL, finished_at IS NULL)
           FROM send_jobs WHERE id = {id}"
    ));
    assert_eq!(row, "default,{\"to\": \"p\"},t,t,pending,0,5,0,t,t,t");

    run("SET LOCAL sendjobs.default_max_attempts = 9");
    let id = one::<i64>(
        "SELECT sendjobs_enqueue('{}', 'partner-a', now() + interval '1 hour', 'tx-1', 'key-1', 3)",
    );
    let row = one::<String>(&format!(
        "SELECT concat_ws(',', queue, transaction_id, idempotency_key, max_attempts,
                next_attempt_at = now() + interval '1 hour')
           FROM send_jobs WHERE id = {id}"
    ));
    assert_eq!(row, "partner-a,tx-1,key-1,3,t");
    let id = one::<i64>("SELECT sendjobs_enqueue('{}')");
    assert_eq!(one::<i32>(&format!("SELECT max_attempts FROM send_jobs WHERE id = {id}")), 9);
}

#[pg_test]
fn enqueue_with_a_known_idempotency_key_returns_the_existing_job() {
    let first = one::<i64>("SELECT sendjobs_enqueue('{\"n\":1}', idempotency_key => 'k')");
    let before = state_without_txn();
    let again = one::<i64>("SELECT sendjobs_enqueue('{\"n\":2}', queue => 'other', idempotency_key => 'k')");
    assert_eq!(first, again);
    assert_eq!(before, state_without_txn());
    assert_eq!(one::<i64>("SELECT count(*) FROM send_jobs"), 1);
}

fn state_without_txn() -> String {
    one::<String>("SELECT coalesce(string_agg(j::text, ';' ORDER BY id), '') FROM send_jobs j")
}

#[pg_test]
fn a_row_whose_columns_disagree_with_its_status_is_refused() {
    let id = one::<i64>("SELECT sendjobs_enqueue('{}')");
    let before = state_without_txn();
    let lease = "claimed_at = now(), lease_expires_at = now() + interval '1 minute'";
    for change in [
        "status = 'bogus'".to_owned(),
        "attempts = -1".to_owned(),
        "max_attempts = 0".to_owned(),
        "claim_generation = -1".to_owned(),
        "lease_expires_at = now()".to_owned(),
        "finished_at = now()".to_owned(),
        "status = 'in_flight', claimed_at = now()".to_owned(),
        "status = 'in_flight', lease_expires_at = now()".to_owned(),
        format!("status = 'in_flight', {lease}, finished_at = now()"),
        "status = 'sent'".to_owned(),
        format!("status = 'failed', {lease}, finished_at = now()"),
    ] {
        let update = format!("UPDATE send_jobs SET {change} WHERE id = {id}");
        assert_eq!(sqlstate_of(&update), "23514", "{update}");
    }
    assert_eq!(before, state_without_txn());

    // Rows that agree with their status are accepted, whoever writes them.
    for change in [
        format!("status = 'in_flight', {lease}"),
        "status = 'cancelled', lease_expires_at = NULL, finished_at = now()".to_owned(),
    ] {
        let update = format!("UPDATE send_jobs SET {change} WHERE id = {id}");
        assert_eq!(sqlstate_of(&update), "00000", "{update}");
    }
}

#[pg_test]
fn claim_takes_due_jobs_in_order_under_a_lease() {
    let recent: Vec<i64> = (0..3)
        .map(|_| one::<i64>("SELECT sendjobs_enqueue('{}', run_at => now() - interval '1 minute')"))
        .collect();
    let overdue = one::<i64>("SELECT sendjobs_enqueue('{}', run_at => now() - interval '1 hour')");
    let future = one::<i64>("SELECT sendjobs_enqueue('{}', run_at => now() + interval '1 hour')");
    let claimed = one::<String>(
        "SELECT string_agg(concat_ws(':', id, status, attempts, claim_generation,
                           lease_expires_at - claimed_at, claimed_at > now()), ' ' ORDER BY ord)
           FROM sendjobs_claim(3, '45 seconds') WITH ORDINALITY AS c(id, queue, payload, transaction_id,
                idempotency_key, status, attempts, max_attempts, next_attempt_at, claimed_at,
                lease_expires_at, claim_generation, last_error, created_at, finished_at, ord)",
    );
    // The hour-overdue job first, then by next_attempt_at, ties by id; the future job stays.
    let expected: Vec<String> = [overdue, recent[0], recent[1]]
        .iter()
        .map(|id| format!("{id}:in_flight:1:1:00:00:45:t"))
        .collect();
    assert_eq!(claimed, expected.join(" "));
    assert_eq!(one::<i64>("SELECT id FROM sendjobs_claim(10)"), recent[2]);
    assert_eq!(one::<i64>("SELECT count(*) FROM sendjobs_claim(10)"), 0);
    assert_eq!(one::<String>(&format!("SELECT status FROM send_jobs WHERE id = {future}")), "pending");
}

#[pg_test]
fn claim_without_a_lease_uses_the_default_lease_setting() {
    run("SET LOCAL sendjobs.default_lease = '42s'; SELECT sendjobs_enqueue('{}');");
    let lease = one::<String>("SELECT (lease_expires_at - claimed_at)::text FROM sendjobs_claim()");
    assert_eq!(lease, "00:00:42");
}

#[pg_test]
fn claim_filters_by_queue() {
    run("SELECT sendjobs_enqueue('{}', 'a'); SELECT sendjobs_enqueue('{}', 'b');");
    let claim_b = "SELECT coalesce(string_agg(queue, ','), '') FROM sendjobs_claim(10, queue => 'b')";
    assert_eq!(one::<String>(claim_b), "b");
    assert_eq!(one::<String>(claim_b), "");
    assert_eq!(one::<String>("SELECT coalesce(string_agg(queue, ','), '') FROM sendjobs_claim(10)"), "a");
}

#[pg_test]
fn an_unexpired_lease_is_not_reclaimed() {
    run("SELECT sendjobs_enqueue('{}', run_at => now() - interval '1 day')");
    claim_one("1 hour");
    // Overdue by a day, claimed a moment ago: its own lease, not its schedule, decides.
    assert_eq!(one::<i64>("SELECT count(*) FROM sendjobs_claim(10, '0 seconds')"), 0);
}

#[pg_test]
fn an_expired_lease_is_reclaimed_with_a_new_generation() {
    run("SELECT sendjobs_enqueue('{}')");
    let (id, generation) = claim_one("0 seconds");
    let first_claim = one::<String>(&format!("SELECT claimed_at::text FROM send_jobs WHERE id = {id}"));
    let (again, next_generation) = claim_one("1 minute");
    assert_eq!((again, next_generation), (id, generation + 1));
    let row = one::<String>(&format!(
        "SELECT concat_ws(',', attempts, claimed_at > '{first_claim}', lease_expires_at - claimed_at)
           FROM send_jobs WHERE id = {id}"
    ));
    assert_eq!(row, "2,t,00:01:00");
}

#[pg_test]
fn an_expired_lease_keeps_its_place_ahead_of_a_newer_backlog() {
    run("SELECT sendjobs_enqueue('{}', run_at => now() - interval '1 hour')");
    let (id, _) = claim_one("0 seconds");
    run("SELECT sendjobs_enqueue('{}', run_at => now() - interval '1 minute') FROM generate_series(1, 50)");
    assert_eq!(one::<i64>("SELECT id FROM sendjobs_claim(1, '1 minute')"), id);
}

#[pg_test]
fn claim_leases_start_at_the_call_not_at_transaction_start() {
    run("SELECT sendjobs_enqueue('{}'); SELECT pg_sleep(0.3);");
    let row = one::<String>(
        "SELECT concat_ws(',', claimed_at > now() + interval '0.25 seconds',
                lease_expires_at - claimed_at)
           FROM sendjobs_claim(1, '1 second')",
    );
    assert_eq!(row, "t,00:00:01");
}

#[pg_test]
fn finalize_sent_applies_once_and_stages_one_event() {
    run("SELECT sendjobs_enqueue('{}', transaction_id => 't1')");
    let (id, generation) = claim_one("1 minute");
    let finalize = format!("SELECT sendjobs_finalize({id}, {generation}, 'sent')");
    assert_eq!(one::<String>(&finalize), "applied");
    let row = one::<String>(&format!(
        "SELECT concat_ws(',', status, finished_at IS NOT NULL, lease_expires_at IS NULL)
           FROM send_jobs WHERE id = {id}"
    ));
    assert_eq!(row, "sent,t,t");
    let before = state_without_txn();
    assert_eq!(one::<String>(&finalize), "stale");
    assert_eq!(before, state_without_txn());
    let events = one::<String>(
        "SELECT string_agg(concat_ws(',', job_id, transaction_id, kind, claim_generation), ';')
           FROM send_job_events",
    );
    assert_eq!(events, format!("{id},t1,sent,{generation}"));
}

#[pg_test]
fn finalize_failed_records_the_error_and_its_event() {
    run("SELECT sendjobs_enqueue('{}')");
    let (id, generation) = claim_one("1 minute");
    assert_eq!(
        one::<String>(&format!("SELECT sendjobs_finalize({id}, {generation}, 'failed', 'HTTP 410')")),
        "applied"
    );
    let row = one::<String>(&format!(
        "SELECT concat_ws(',', j.status, j.last_error, e.kind)
           FROM send_jobs j JOIN send_job_events e ON e.job_id = j.id WHERE j.id = {id}"
    ));
    assert_eq!(row, "failed,HTTP 410,failed");
}

#[pg_test]
fn finalize_retry_reschedules_and_backs_off() {
    run("SET LOCAL sendjobs.retry_backoff_base = '10s';
         SET LOCAL sendjobs.retry_backoff_max = '25s';
         SELECT sendjobs_enqueue('{}', max_attempts => 10);");
    let (id, generation) = claim_one("0 seconds");
    // An explicit retry_at wins.
    assert_eq!(
        one::<String>(&format!(
            "SELECT sendjobs_finalize({id}, {generation}, 'retry', 'timeout', now() - interval '1 second')"
        )),
        "applied"
    );
    let row = one::<String>(&format!(
        "SELECT concat_ws(',', status, last_error, next_attempt_at = now() - interval '1 second',
                lease_expires_at IS NULL, finished_at IS NULL) FROM send_jobs WHERE id = {id}"
    ));
    assert_eq!(row, "pending,timeout,t,t,t");
    assert_eq!(one::<i64>("SELECT count(*) FROM send_job_events"), 0);

    // Without retry_at: base * 2^(attempts - 1), capped at the max. Attempts are 2, 3, 4.
    for expected_delay in ["20", "25", "25"] {
        let (id, generation) = claim_one("0 seconds");
        let before = one::<String>("SELECT clock_timestamp()::text");
        let result = one::<String>(&format!("SELECT sendjobs_finalize({id}, {generation}, 'retry')"));
        let delay = one::<String>(&format!(
            "SELECT round(extract(epoch FROM next_attempt_at - '{before}'))::text FROM send_jobs WHERE id = {id}"
        ));
        assert_eq!((result.as_str(), delay.as_str()), ("applied", expected_delay));
        run(&format!("UPDATE send_jobs SET next_attempt_at = now() WHERE id = {id}"));
    }
}

#[pg_test]
fn finalize_retry_past_max_attempts_fails_the_job() {
    run("SELECT sendjobs_enqueue('{}', transaction_id => 't1', max_attempts => 2)");
    let (id, generation) = claim_one("0 seconds");
    run(&format!("SELECT sendjobs_finalize({id}, {generation}, 'retry', 'e1', now())"));
    let (_, generation) = claim_one("0 seconds");
    assert_eq!(
        one::<String>(&format!("SELECT sendjobs_finalize({id}, {generation}, 'retry', 'e2')")),
        "applied"
    );
    let row = one::<String>(&format!(
        "SELECT concat_ws(',', j.status, j.attempts, j.last_error, j.finished_at IS NOT NULL,
                e.kind, e.claim_generation)
           FROM send_jobs j JOIN send_job_events e ON e.job_id = j.id WHERE j.id = {id}"
    ));
    assert_eq!(row, "failed,2,e2,t,failed,2");
}

#[pg_test]
fn a_stale_generation_changes_nothing() {
    business_table();
    run("SELECT sendjobs_link_transactions('txn');
         SELECT sendjobs_enqueue('{}', transaction_id => 't1');");
    let (id, old) = claim_one("0 seconds");
    let (_, current) = claim_one("1 minute");
    let before = state();
    for outcome in ["sent", "failed", "retry"] {
        let call = format!("SELECT sendjobs_finalize({id}, {old}, '{outcome}')");
        assert_eq!(one::<String>(&call), "stale", "{outcome}");
        // A generation from the future is just as stale.
        let call = format!("SELECT sendjobs_finalize({id}, {}, '{outcome}')", current + 1);
        assert_eq!(one::<String>(&call), "stale", "{outcome}");
    }
    assert_eq!(one::<String>(&format!("SELECT sendjobs_heartbeat({id}, {old})")), "stale");
    assert_eq!(before, state());
    assert_eq!(
        one::<String>(&format!("SELECT sendjobs_finalize({id}, {current}, 'sent')")),
        "applied"
    );
    assert_eq!(one::<String>("SELECT status FROM txn WHERE id = 't1'"), "success");
}

#[pg_test]
fn heartbeat_extends_the_current_claim_only() {
    run("SELECT sendjobs_enqueue('{}')");
    let (id, generation) = claim_one("1 second");
    let call = format!("SELECT sendjobs_heartbeat({id}, {generation}, '5 minutes')");
    assert_eq!(one::<String>(&call), "applied");
    let extended = one::<bool>(&format!(
        "SELECT lease_expires_at > clock_timestamp() + interval '4 minutes' FROM send_jobs WHERE id = {id}"
    ));
    assert!(extended);
    run(&format!("SELECT sendjobs_finalize({id}, {generation}, 'sent')"));
    assert_eq!(one::<String>(&call), "stale");
}

#[pg_test]
fn applied_terminal_finalizes_stamp_the_linked_business_row() {
    business_table();
    run("SELECT sendjobs_guard_terminal('txn');
         SELECT sendjobs_link_transactions('txn', 'id', 'status', 'success', 'failed');
         SELECT sendjobs_enqueue('{}', transaction_id => 't1');
         SELECT sendjobs_enqueue('{}', transaction_id => 't2');
         SELECT sendjobs_enqueue('{}', transaction_id => 't3');
         SELECT sendjobs_enqueue('{}', transaction_id => 'no-such-row');");
    for (outcome, _) in [("sent", "t1"), ("failed", "t2"), ("retry", "t3"), ("sent", "none")] {
        let (id, generation) = claim_one("1 minute");
        assert_eq!(
            one::<String>(&format!("SELECT sendjobs_finalize({id}, {generation}, '{outcome}')")),
            "applied"
        );
    }
    assert_eq!(
        one::<String>("SELECT string_agg(id || '=' || status, ',' ORDER BY id) FROM txn"),
        "t1=success,t2=failed,t3=pending,t4=pending,t5=pending"
    );
    // The stamp goes through the guard: a business row already terminal keeps its status.
    run("UPDATE txn SET status = 'failed' WHERE id = 't4';
         SELECT sendjobs_enqueue('{}', transaction_id => 't4');");
    let (id, generation) = claim_one("1 minute");
    assert_eq!(one::<String>(&format!("SELECT sendjobs_finalize({id}, {generation}, 'sent')")), "applied");
    assert_eq!(one::<String>("SELECT status FROM txn WHERE id = 't4'"), "failed");
    assert_eq!(one::<String>(&format!("SELECT status FROM send_jobs WHERE id = {id}")), "sent");

    run("SELECT sendjobs_unlink_transactions(); SELECT sendjobs_enqueue('{}', transaction_id => 't5');");
    let (id, generation) = claim_one("1 minute");
    run(&format!("SELECT sendjobs_finalize({id}, {generation}, 'sent')"));
    assert_eq!(one::<String>("SELECT status FROM txn WHERE id = 't5'"), "pending");
}

#[pg_test]
fn a_refused_stamp_in_error_mode_aborts_the_finalize() {
    business_table();
    run("SELECT sendjobs_guard_terminal('txn');
         SELECT sendjobs_link_transactions('txn');
         UPDATE txn SET status = 'failed' WHERE id = 't1';
         SELECT sendjobs_enqueue('{}', transaction_id => 't1');");
    let (id, generation) = claim_one("1 minute");
    run("SET LOCAL sendjobs.guard_action = error");
    let before = state();
    assert_eq!(sqlstate_of(&format!("SELECT sendjobs_finalize({id}, {generation}, 'sent')")), "23514");
    assert_eq!(before, state());
}

#[pg_test]
fn link_works_with_typed_columns() {
    run("CREATE TYPE pay_state AS ENUM ('open', 'paid', 'rejected');
         CREATE TABLE payments (ref bigint PRIMARY KEY, state pay_state NOT NULL DEFAULT 'open');
         INSERT INTO payments VALUES (7);
         SELECT sendjobs_guard_terminal('payments', 'state', '{paid,rejected}', '{}');
         SELECT sendjobs_link_transactions('payments', 'ref', 'state', 'paid', 'rejected');
         SELECT sendjobs_enqueue('{}', transaction_id => '7');");
    let (id, generation) = claim_one("1 minute");
    run(&format!("SELECT sendjobs_finalize({id}, {generation}, 'failed')"));
    assert_eq!(one::<String>("SELECT state::text FROM payments WHERE ref = 7"), "rejected");
    run("UPDATE payments SET state = 'paid' WHERE ref = 7");
    assert_eq!(one::<String>("SELECT state::text FROM payments WHERE ref = 7"), "rejected");
    // A value the column cannot hold is refused when linking, not at the first finalize.
    assert_eq!(sqlstate_of("SELECT sendjobs_link_transactions('payments', 'ref', 'state', 'ok')"), "22P02");
}

#[pg_test]
fn guard_refuses_terminal_flips_and_allows_declared_exits() {
    business_table();
    run("SELECT sendjobs_guard_terminal('txn');
         UPDATE txn SET status = 'success' WHERE id = 't1';
         UPDATE txn SET status = 'failed' WHERE id = 't2';");
    // skip (the default): the row is left alone, the statement goes on.
    let updated = one::<i64>(
        "WITH u AS (UPDATE txn SET status = CASE id WHEN 't1' THEN 'failed' ELSE 'success' END
                     WHERE id IN ('t1', 't2', 't3') RETURNING id) SELECT count(*) FROM u",
    );
    assert_eq!(updated, 1);
    assert_eq!(
        one::<String>("SELECT string_agg(id || '=' || status, ',' ORDER BY id) FROM txn WHERE id <= 't3'"),
        "t1=success,t2=failed,t3=success"
    );
    run("SET LOCAL sendjobs.guard_action = error");
    assert_eq!(sqlstate_of("UPDATE txn SET status = 'failed' WHERE id = 't1'"), "23514");
    assert_eq!(sqlstate_of("UPDATE txn SET status = NULL WHERE id = 't1'"), "23514");
    assert_eq!(sqlstate_of("UPDATE txn SET status = 'pending' WHERE id = 't1'"), "23514");
    // Same-value updates and the declared exit pass.
    assert_eq!(sqlstate_of("UPDATE txn SET status = 'success' WHERE id = 't1'"), "00000");
    assert_eq!(sqlstate_of("UPDATE txn SET status = 'pending' WHERE id = 't2'"), "00000");
    assert_eq!(one::<String>("SELECT status FROM txn WHERE id = 't2'"), "pending");
}

#[pg_test]
fn the_guard_trigger_function_works_in_create_trigger() {
    run("CREATE TABLE jobs2 (k int PRIMARY KEY, state text);
         INSERT INTO jobs2 VALUES (1, 'done'), (2, 'dead'), (3, 'new');
         CREATE TRIGGER g BEFORE UPDATE ON jobs2 FOR EACH ROW
           EXECUTE FUNCTION sendjobs_guard_terminal_trigger('state', '{done,dead}', '{dead:queued}');
         SET LOCAL sendjobs.guard_action = error;");
    assert_eq!(sqlstate_of("UPDATE jobs2 SET state = 'dead' WHERE k = 1"), "23514");
    assert_eq!(sqlstate_of("UPDATE jobs2 SET state = 'queued' WHERE k = 1"), "23514");
    assert_eq!(sqlstate_of("UPDATE jobs2 SET state = 'queued' WHERE k = 2"), "00000");
    assert_eq!(sqlstate_of("UPDATE jobs2 SET state = 'done' WHERE k = 3"), "00000");
    run("CREATE TABLE plain (id int PRIMARY KEY, status text);
         INSERT INTO plain VALUES (1, 'success');
         CREATE TRIGGER g BEFORE UPDATE ON plain FOR EACH ROW
           EXECUTE FUNCTION sendjobs_guard_terminal_trigger();");
    assert_eq!(sqlstate_of("UPDATE plain SET status = 'failed'"), "23514");
    run("INSERT INTO jobs2 VALUES (4, 'new');
         CREATE TRIGGER late AFTER UPDATE ON jobs2 FOR EACH ROW
           EXECUTE FUNCTION sendjobs_guard_terminal_trigger('state');");
    assert_eq!(sqlstate_of("UPDATE jobs2 SET state = 'x' WHERE k = 4"), "39P01");
}

#[pg_test]
fn guard_rules_are_checked() {
    crate::guard::rule_tests::refusals_follow_the_rule();
    crate::guard::rule_tests::bad_exits_are_rejected();
}

#[pg_test]
fn bad_input_is_refused_with_its_sqlstate_and_changes_nothing() {
    business_table();
    run("CREATE VIEW txn_view AS SELECT * FROM txn;
         SELECT sendjobs_enqueue('{}', transaction_id => 't1');");
    let (id, generation) = claim_one("1 minute");
    let cases: Vec<(String, &str)> = vec![
        ("SELECT sendjobs_enqueue(NULL)".into(), "22004"),
        ("SELECT sendjobs_enqueue('{}', queue => NULL)".into(), "22004"),
        ("SELECT sendjobs_enqueue('{}', queue => '')".into(), "22023"),
        ("SELECT sendjobs_enqueue('{}', max_attempts => 0)".into(), "22023"),
        ("SELECT sendjobs_claim(NULL)".into(), "22004"),
        ("SELECT sendjobs_claim(0)".into(), "22023"),
        ("SELECT sendjobs_claim(-5)".into(), "22023"),
        ("SELECT sendjobs_claim(1001)".into(), "22023"),
        ("SELECT sendjobs_claim(1, '-1 second')".into(), "22023"),
        ("SELECT sendjobs_claim(1, '1 day -25 hours')".into(), "22023"),
        (format!("SELECT sendjobs_finalize(NULL, {generation}, 'sent')"), "22004"),
        (format!("SELECT sendjobs_finalize({id}, NULL, 'sent')"), "22004"),
        (format!("SELECT sendjobs_finalize({id}, {generation}, NULL)"), "22004"),
        (format!("SELECT sendjobs_finalize({id}, -1, 'sent')"), "22023"),
        (format!("SELECT sendjobs_finalize({id}, {generation}, 'SENT')"), "22023"),
        (format!("SELECT sendjobs_finalize({id}, {generation}, 'done')"), "22023"),
        (format!("SELECT sendjobs_finalize({id}, {generation}, 'sent', retry_at => now())"), "22023"),
        (format!("SELECT sendjobs_finalize({id}, {generation}, 'sent', 'oops')"), "22023"),
        (format!("SELECT sendjobs_finalize({}, {generation}, 'sent')", id + 1000), "P0002"),
        (format!("SELECT sendjobs_heartbeat(NULL, {generation})"), "22004"),
        (format!("SELECT sendjobs_heartbeat({id}, NULL)"), "22004"),
        (format!("SELECT sendjobs_heartbeat({id}, -3)"), "22023"),
        (format!("SELECT sendjobs_heartbeat({id}, {generation}, '-1 minute')"), "22023"),
        (format!("SELECT sendjobs_heartbeat({}, {generation})", id + 1000), "P0002"),
        ("SELECT sendjobs_guard_terminal(NULL)".into(), "22004"),
        ("SELECT sendjobs_guard_terminal('no_such_table')".into(), "42P01"),
        ("SELECT sendjobs_guard_terminal('txn', 'no_such_column')".into(), "42703"),
        ("SELECT sendjobs_guard_terminal('txn', NULL)".into(), "22004"),
        ("SELECT sendjobs_guard_terminal('txn', 'status', '{}')".into(), "22023"),
        ("SELECT sendjobs_guard_terminal('txn', 'status', '{a,NULL}')".into(), "22004"),
        ("SELECT sendjobs_guard_terminal('txn', 'status', '{a}', '{b:c}')".into(), "22023"),
        ("SELECT sendjobs_guard_terminal('txn_view')".into(), "42809"),
        ("SELECT sendjobs_link_transactions(NULL)".into(), "22004"),
        ("SELECT sendjobs_link_transactions('no_such_table')".into(), "42P01"),
        ("SELECT sendjobs_link_transactions('txn', 'nope')".into(), "42703"),
        ("SELECT sendjobs_link_transactions('txn', 'id', 'nope')".into(), "42703"),
        ("SELECT sendjobs_link_transactions('txn', 'id', 'status', NULL)".into(), "22004"),
        ("SELECT sendjobs_link_transactions('txn_view')".into(), "42809"),
    ];
    let before = state();
    for (sql, expected) in &cases {
        assert_eq!(&sqlstate_of(sql), expected, "{sql}");
    }
    assert_eq!(before, state(), "a refused call changed something");
}

#[pg_test]
fn a_hostile_search_path_does_not_redirect_the_functions() {
    run("CREATE SCHEMA evil;
         CREATE TABLE evil.send_jobs (LIKE public.send_jobs INCLUDING ALL);
         SET LOCAL search_path = evil, public;");
    let id = one::<i64>("SELECT public.sendjobs_enqueue('{}')");
    assert_eq!(one::<i64>("SELECT count(*) FROM public.send_jobs"), 1);
    assert_eq!(one::<i64>("SELECT count(*) FROM evil.send_jobs"), 0);
    assert_eq!(one::<i64>("SELECT id FROM public.sendjobs_claim(1, '1 minute')"), id);
}

/// Rows an index scan node (and its children) returned, summed over the plan.
fn index_rows_read(plan: &serde_json::Value) -> i64 {
    let own = match plan["Node Type"].as_str() {
        Some("Index Scan" | "Index Only Scan" | "Bitmap Index Scan") => plan["Actual Rows"].as_i64().unwrap_or(0),
        _ => 0,
    };
    own + plan["Plans"].as_array().map_or(0, |children| children.iter().map(index_rows_read).sum())
}

fn any_sort(plan: &serde_json::Value) -> bool {
    plan["Node Type"] == "Sort"
        && plan["Actual Rows"].as_i64().unwrap_or(0) > 50
        || plan["Plans"].as_array().is_some_and(|children| children.iter().any(any_sort))
}

/// The claim's cost must not grow with the backlog: with 1,000,000 due rows a batch of
/// 10 reads about 10 index entries, under custom and generic plans alike.
#[pg_test]
fn claim_cost_does_not_grow_with_the_backlog() {
    run("INSERT INTO send_jobs (payload, next_attempt_at)
         SELECT '{}', now() - interval '1 day' + g * interval '1 ms' FROM generate_series(1, 1000000) g;
         ANALYZE send_jobs;");
    let schema_sql = crate::claim::CLAIM_ANY_QUEUE.replace("@extschema@", "public");
    run(&format!("PREPARE claim_probe(timestamptz, int8, interval, text) AS {schema_sql}"));
    for mode in ["force_custom_plan", "force_generic_plan"] {
        run(&format!("SET LOCAL plan_cache_mode = {mode}"));
        let explain = one::<pgrx::Json>(
            "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE claim_probe(clock_timestamp(), 10, '1 minute', NULL)",
        );
        let plan = &explain.0[0]["Plan"];
        let read = index_rows_read(plan);
        assert!(read <= 20, "{mode}: the claim read {read} index entries: {plan}");
        assert!(!any_sort(plan), "{mode}: the claim sorted the backlog: {plan}");
    }
}

fn any_seq_scan(plan: &serde_json::Value) -> bool {
    plan["Node Type"] == "Seq Scan"
        || plan["Plans"].as_array().is_some_and(|children| children.iter().any(any_seq_scan))
}

/// Statistics gathered while nothing was in flight (the usual case after a VACUUM
/// ANALYZE of a queue at rest) must not turn the generic claim plan's expired-lease branch
/// into a scan of the whole table: wide rows make a sequential scan look as cheap as the
/// lease index when the planner does not know how many rows have a lease.
#[pg_test]
fn the_expired_branch_keeps_to_the_lease_index_under_a_generic_plan() {
    run("INSERT INTO send_jobs (payload, next_attempt_at)
         SELECT jsonb_build_object('pad', repeat('x', 1500)), now() - interval '1 day' + g * interval '1 ms'
           FROM generate_series(1, 10000) g;
         ANALYZE send_jobs;");
    let schema_sql = crate::claim::CLAIM_ANY_QUEUE.replace("@extschema@", "public");
    run(&format!("PREPARE claim_probe(timestamptz, int8, interval, text) AS {schema_sql}"));
    run("SET LOCAL plan_cache_mode = force_generic_plan");
    let explain = one::<pgrx::Json>(
        "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE claim_probe(clock_timestamp(), 1, '1 minute', NULL)",
    );
    let plan = &explain.0[0]["Plan"];
    assert!(!any_seq_scan(plan), "the claim scanned the whole table: {plan}");
    assert!(
        plan.to_string().contains("\"Index Name\":\"send_jobs_lease_idx\""),
        "the expired-lease branch does not use the lease index: {plan}"
    );
}

#[pg_test]
fn the_guard_judges_the_final_row_even_when_another_trigger_sets_the_status() {
    business_table();
    run("ALTER TABLE txn ADD COLUMN note text;
         SELECT sendjobs_guard_terminal('txn');
         UPDATE txn SET status = 'success' WHERE id = 't1';
         CREATE FUNCTION sneaky() RETURNS trigger LANGUAGE plpgsql AS
           $$ BEGIN NEW.status := 'failed'; RETURN NEW; END $$;
         CREATE TRIGGER a_sneaky BEFORE UPDATE ON txn FOR EACH ROW EXECUTE FUNCTION sneaky();
         SET LOCAL sendjobs.guard_action = error;");
    // The UPDATE names only `note`; another BEFORE trigger moves the status. Still refused.
    assert_eq!(sqlstate_of("UPDATE txn SET note = 'x' WHERE id = 't1'"), "23514");
    assert_eq!(one::<String>("SELECT status FROM txn WHERE id = 't1'"), "success");
}

#[pg_test]
fn user_triggers_on_the_linked_table_run_with_the_callers_search_path() {
    business_table();
    run("CREATE TABLE txn_history (id text, old_status text, new_status text);
         CREATE FUNCTION record_txn() RETURNS trigger LANGUAGE plpgsql AS
           $$ BEGIN INSERT INTO txn_history VALUES (NEW.id, OLD.status, NEW.status); RETURN NEW; END $$;
         CREATE TRIGGER history AFTER UPDATE ON txn FOR EACH ROW EXECUTE FUNCTION record_txn();
         SELECT sendjobs_guard_terminal('txn');
         SELECT sendjobs_link_transactions('txn');
         SELECT sendjobs_enqueue('{}', transaction_id => 't1');");
    let (id, generation) = claim_one("1 minute");
    assert_eq!(one::<String>(&format!("SELECT sendjobs_finalize({id}, {generation}, 'sent')")), "applied");
    assert_eq!(
        one::<String>("SELECT string_agg(concat_ws(':', id, old_status, new_status), ',') FROM txn_history"),
        "t1:pending:success"
    );
}

#[pg_test]
fn finalize_batch_fences_each_claim_and_reports_in_order() {
    business_table();
    run("SELECT sendjobs_link_transactions('txn');
         SELECT sendjobs_enqueue('{}', transaction_id => 't' || g) FROM generate_series(1, 3) g;");
    let claimed = Spi::connect(|client| {
        client
            .select("SELECT id, claim_generation FROM sendjobs_claim(3, '1 minute')", None, &[])
            .unwrap()
            .map(|row| (row.get::<i64>(1).unwrap().unwrap(), row.get::<i64>(2).unwrap().unwrap()))
            .collect::<Vec<_>>()
    });
    let [(a, ga), (b, gb), (c, gc)] = claimed[..] else { panic!("claimed {claimed:?}") };
    let results = one::<String>(&format!(
        "SELECT string_agg(id || '=' || result, ',')
           FROM sendjobs_finalize_batch(ARRAY[{c}, {a}, {b}], ARRAY[{gc}, {ga}, {}], 'sent')",
        gb + 1
    ));
    assert_eq!(results, format!("{c}=applied,{a}=applied,{b}=stale"));
    assert_eq!(
        one::<String>("SELECT string_agg(id || '=' || status, ',' ORDER BY id) FROM txn WHERE id <= 't3'"),
        "t1=success,t2=pending,t3=success"
    );
    assert_eq!(one::<i64>("SELECT count(*) FROM send_job_events"), 2);
    assert_eq!(
        one::<String>("SELECT coalesce(string_agg(id::text, ','), '') FROM sendjobs_finalize_batch('{}', '{}', 'sent')"),
        ""
    );
    let before = state();
    for (sql, expected) in [
        (format!("SELECT sendjobs_finalize_batch(NULL, ARRAY[{gb}], 'sent')"), "22004"),
        (format!("SELECT sendjobs_finalize_batch(ARRAY[{b}], NULL, 'sent')"), "22004"),
        (format!("SELECT sendjobs_finalize_batch(ARRAY[{b}, NULL], ARRAY[{gb}, 1], 'sent')"), "22004"),
        (format!("SELECT sendjobs_finalize_batch(ARRAY[{b}], ARRAY[{gb}, 1], 'sent')"), "22023"),
        (format!("SELECT sendjobs_finalize_batch(ARRAY[{b}, {b}], ARRAY[{gb}, {gb}], 'sent')"), "22023"),
        (format!("SELECT sendjobs_finalize_batch(ARRAY[{b}], ARRAY[-1], 'sent')"), "22023"),
        (format!("SELECT sendjobs_finalize_batch(ARRAY[{b}], ARRAY[{gb}], 'nope')"), "22023"),
        (format!("SELECT sendjobs_finalize_batch(ARRAY[{b}, {}], ARRAY[{gb}, 1], 'sent')", c + 1000), "P0002"),
    ] {
        assert_eq!(sqlstate_of(&sql), expected, "{sql}");
    }
    assert_eq!(before, state(), "a refused batch changed something");
}

#[pg_test]
fn a_replaced_guard_takes_effect_in_the_same_session() {
    run("CREATE TABLE pay (id text PRIMARY KEY, status text NOT NULL);
         INSERT INTO pay VALUES ('a', 'failed');
         SELECT sendjobs_guard_terminal('pay');
         SET LOCAL sendjobs.guard_action = error;");
    assert_eq!(sqlstate_of("UPDATE pay SET status = 'success' WHERE id = 'a'"), "23514");
    run("SELECT sendjobs_guard_terminal('pay', 'status', '{success}', '{}')");
    assert_eq!(sqlstate_of("UPDATE pay SET status = 'success' WHERE id = 'a'"), "00000");
    assert_eq!(sqlstate_of("UPDATE pay SET status = 'failed' WHERE id = 'a'"), "23514");
}

#[pg_test]
fn transaction_ids_must_fit_the_linked_key() {
    run("CREATE TABLE orders (order_no int PRIMARY KEY, state text NOT NULL DEFAULT 'new');
         SELECT sendjobs_enqueue('{}', transaction_id => 'ORD-7');");
    // An unfinished job whose transaction_id is no int: the link is refused.
    assert_eq!(sqlstate_of("SELECT sendjobs_link_transactions('orders', 'order_no', 'state')"), "22P02");
    assert_eq!(one::<i64>("SELECT count(*) FROM sendjobs_transaction_link"), 0);
    run("UPDATE send_jobs SET transaction_id = '7'; INSERT INTO orders VALUES (7);
         SELECT sendjobs_link_transactions('orders', 'order_no', 'state');");
    // New jobs must carry a valid key too; nothing is created.
    let before_enqueue = state_without_txn();
    assert_eq!(sqlstate_of("SELECT sendjobs_enqueue('{}', transaction_id => 'ORD-8')"), "22P02");
    assert_eq!(before_enqueue, state_without_txn());
    let (id, generation) = claim_one("1 minute");
    assert_eq!(one::<String>(&format!("SELECT sendjobs_finalize({id}, {generation}, 'sent')")), "applied");
    assert_eq!(one::<String>("SELECT state FROM orders WHERE order_no = 7"), "success");
}

#[pg_test]
fn dropping_the_linked_table_removes_the_link() {
    business_table();
    run("SELECT sendjobs_link_transactions('txn');
         SELECT sendjobs_enqueue('{}', transaction_id => 't1');
         DROP TABLE txn;");
    assert_eq!(one::<i64>("SELECT count(*) FROM sendjobs_transaction_link"), 0);
    let (id, generation) = claim_one("1 minute");
    assert_eq!(one::<String>(&format!("SELECT sendjobs_finalize({id}, {generation}, 'sent')")), "applied");
}

#[pg_test]
fn any_role_can_still_drop_its_own_tables() {
    run("CREATE ROLE sendjobs_test_user;
         GRANT CREATE ON SCHEMA public TO sendjobs_test_user;
         SET LOCAL ROLE sendjobs_test_user;
         CREATE TABLE mine (id int);
         DROP TABLE mine;
         RESET ROLE;");
}

/// A finalize probes the primary key, also under its generic plan and with statistics
/// that know nothing of the jobs in flight: its cost must not grow with them.
#[pg_test]
fn finalize_cost_does_not_grow_with_the_jobs_in_flight() {
    run("INSERT INTO send_jobs (payload, next_attempt_at)
         SELECT '{}', now() - interval '1 day' FROM generate_series(1, 20000);
         ANALYZE send_jobs;
         SELECT count(*) FROM sendjobs_claim(1000, '1 hour');");
    run("SET LOCAL plan_cache_mode = force_generic_plan");
    let statements = [
        ("batch", crate::finalize::FINALIZE_SQL),
        ("one", crate::finalize::FINALIZE_ONE_SQL),
    ];
    for (name, sql) in statements {
        let (id, generation) = Spi::get_two::<i64, i64>(
            "SELECT id, claim_generation FROM send_jobs WHERE status = 'in_flight' ORDER BY id LIMIT 1",
        )
        .unwrap();
        let sql = sql.replace("@extschema@", "public");
        run(&format!(
            "PREPARE finalize_{name}(int8[], int8[], text, timestamptz, timestamptz, float8, float8, text) AS {sql}"
        ));
        let explain = one::<pgrx::Json>(&format!(
            "EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE finalize_{name}(ARRAY[{}], ARRAY[{}], 'sent',
                     clock_timestamp(), NULL, 1000, 1000, NULL)",
            id.unwrap(),
            generation.unwrap()
        ));
        let plan = &explain.0[0]["Plan"];
        let read = index_rows_read(plan);
        assert!(read <= 5, "{name}: the finalize read {read} index entries with 1000 jobs in flight: {plan}");
    }
}
