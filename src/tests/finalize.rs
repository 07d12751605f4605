//! sendjobs_finalize, sendjobs_finalize_batch and sendjobs_heartbeat (src/finalize.rs,
//! sql/statements/finalize.sql, heartbeat.sql): outcomes, events, the fence.

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    use crate::tests::{
        business_table, claim_one, one, run, sqlstate_of, state, state_without_txn,
    };

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
            one::<String>(&format!(
                "SELECT sendjobs_finalize({id}, {generation}, 'failed', 'HTTP 410')"
            )),
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
            let result = one::<String>(&format!(
                "SELECT sendjobs_finalize({id}, {generation}, 'retry')"
            ));
            let delay = one::<String>(&format!(
                "SELECT round(extract(epoch FROM next_attempt_at - '{before}'))::text FROM send_jobs WHERE id = {id}"
            ));
            assert_eq!(
                (result.as_str(), delay.as_str()),
                ("applied", expected_delay)
            );
            run(&format!(
                "UPDATE send_jobs SET next_attempt_at = now() WHERE id = {id}"
            ));
        }
    }

    #[pg_test]
    fn finalize_retry_past_max_attempts_fails_the_job() {
        run("SELECT sendjobs_enqueue('{}', transaction_id => 't1', max_attempts => 2)");
        let (id, generation) = claim_one("0 seconds");
        run(&format!(
            "SELECT sendjobs_finalize({id}, {generation}, 'retry', 'e1', now())"
        ));
        let (_, generation) = claim_one("0 seconds");
        assert_eq!(
            one::<String>(&format!(
                "SELECT sendjobs_finalize({id}, {generation}, 'retry', 'e2')"
            )),
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
            let call = format!(
                "SELECT sendjobs_finalize({id}, {}, '{outcome}')",
                current + 1
            );
            assert_eq!(one::<String>(&call), "stale", "{outcome}");
        }
        assert_eq!(
            one::<String>(&format!("SELECT sendjobs_heartbeat({id}, {old})")),
            "stale"
        );
        assert_eq!(before, state());
        assert_eq!(
            one::<String>(&format!(
                "SELECT sendjobs_finalize({id}, {current}, 'sent')"
            )),
            "applied"
        );
        assert_eq!(
            one::<String>("SELECT status FROM txn WHERE id = 't1'"),
            "success"
        );
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
        run(&format!(
            "SELECT sendjobs_finalize({id}, {generation}, 'sent')"
        ));
        assert_eq!(one::<String>(&call), "stale");
    }

    #[pg_test]
    fn finalize_batch_fences_each_claim_and_reports_in_order() {
        business_table();
        run("SELECT sendjobs_link_transactions('txn');
             SELECT sendjobs_enqueue('{}', transaction_id => 't' || g) FROM generate_series(1, 3) g;");
        let claimed = Spi::connect(|client| {
            client
                .select(
                    "SELECT id, claim_generation FROM sendjobs_claim(3, '1 minute')",
                    None,
                    &[],
                )
                .unwrap()
                .map(|row| {
                    (
                        row.get::<i64>(1).unwrap().unwrap(),
                        row.get::<i64>(2).unwrap().unwrap(),
                    )
                })
                .collect::<Vec<_>>()
        });
        let [(a, ga), (b, gb), (c, gc)] = claimed[..] else {
            panic!("claimed {claimed:?}")
        };
        let results = one::<String>(&format!(
            "SELECT string_agg(id || '=' || result, ',')
               FROM sendjobs_finalize_batch(ARRAY[{c}, {a}, {b}], ARRAY[{gc}, {ga}, {}], 'sent')",
            gb + 1
        ));
        assert_eq!(results, format!("{c}=applied,{a}=applied,{b}=stale"));
        assert_eq!(
            one::<String>(
                "SELECT string_agg(id || '=' || status, ',' ORDER BY id) FROM txn WHERE id <= 't3'"
            ),
            "t1=success,t2=pending,t3=success"
        );
        assert_eq!(one::<i64>("SELECT count(*) FROM send_job_events"), 2);
        assert_eq!(
            one::<String>("SELECT coalesce(string_agg(id::text, ','), '') FROM sendjobs_finalize_batch('{}', '{}', 'sent')"),
            ""
        );
        let before = state();
        for (sql, expected) in [
            (
                format!("SELECT sendjobs_finalize_batch(NULL, ARRAY[{gb}], 'sent')"),
                "22004",
            ),
            (
                format!("SELECT sendjobs_finalize_batch(ARRAY[{b}], NULL, 'sent')"),
                "22004",
            ),
            (
                format!("SELECT sendjobs_finalize_batch(ARRAY[{b}, NULL], ARRAY[{gb}, 1], 'sent')"),
                "22004",
            ),
            (
                format!("SELECT sendjobs_finalize_batch(ARRAY[{b}], ARRAY[{gb}, 1], 'sent')"),
                "22023",
            ),
            (
                format!(
                    "SELECT sendjobs_finalize_batch(ARRAY[{b}, {b}], ARRAY[{gb}, {gb}], 'sent')"
                ),
                "22023",
            ),
            (
                format!("SELECT sendjobs_finalize_batch(ARRAY[{b}], ARRAY[-1], 'sent')"),
                "22023",
            ),
            (
                format!("SELECT sendjobs_finalize_batch(ARRAY[{b}], ARRAY[{gb}], 'nope')"),
                "22023",
            ),
            (
                format!(
                    "SELECT sendjobs_finalize_batch(ARRAY[{b}, {}], ARRAY[{gb}, 1], 'sent')",
                    c + 1000
                ),
                "P0002",
            ),
        ] {
            assert_eq!(sqlstate_of(&sql), expected, "{sql}");
        }
        assert_eq!(before, state(), "a refused batch changed something");
    }
}
