//! sendjobs_claim (src/claim.rs, sql/statements/claim.sql): order, leases, queues, expired leases, the clock.

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    use crate::tests::{claim_one, one, run};

    #[pg_test]
    fn claim_takes_due_jobs_in_order_under_a_lease() {
        let recent: Vec<i64> = (0..3)
            .map(|_| {
                one::<i64>("SELECT sendjobs_enqueue('{}', run_at => now() - interval '1 minute')")
            })
            .collect();
        let overdue =
            one::<i64>("SELECT sendjobs_enqueue('{}', run_at => now() - interval '1 hour')");
        let future =
            one::<i64>("SELECT sendjobs_enqueue('{}', run_at => now() + interval '1 hour')");
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
        assert_eq!(
            one::<String>(&format!("SELECT status FROM send_jobs WHERE id = {future}")),
            "pending"
        );
    }

    #[pg_test]
    fn claim_without_a_lease_uses_the_default_lease_setting() {
        run("SET LOCAL sendjobs.default_lease = '42s'; SELECT sendjobs_enqueue('{}');");
        let lease =
            one::<String>("SELECT (lease_expires_at - claimed_at)::text FROM sendjobs_claim()");
        assert_eq!(lease, "00:00:42");
    }

    #[pg_test]
    fn claim_filters_by_queue() {
        run("SELECT sendjobs_enqueue('{}', 'a'); SELECT sendjobs_enqueue('{}', 'b');");
        let claim_b =
            "SELECT coalesce(string_agg(queue, ','), '') FROM sendjobs_claim(10, queue => 'b')";
        assert_eq!(one::<String>(claim_b), "b");
        assert_eq!(one::<String>(claim_b), "");
        assert_eq!(
            one::<String>("SELECT coalesce(string_agg(queue, ','), '') FROM sendjobs_claim(10)"),
            "a"
        );
    }

    #[pg_test]
    fn an_unexpired_lease_is_not_reclaimed() {
        run("SELECT sendjobs_enqueue('{}', run_at => now() - interval '1 day')");
        claim_one("1 hour");
        // Overdue by a day, claimed a moment ago: its own lease, not its schedule, decides.
        assert_eq!(
            one::<i64>("SELECT count(*) FROM sendjobs_claim(10, '0 seconds')"),
            0
        );
    }

    #[pg_test]
    fn an_expired_lease_is_reclaimed_with_a_new_generation() {
        run("SELECT sendjobs_enqueue('{}')");
        let (id, generation) = claim_one("0 seconds");
        let first_claim = one::<String>(&format!(
            "SELECT claimed_at::text FROM send_jobs WHERE id = {id}"
        ));
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
        assert_eq!(
            one::<i64>("SELECT id FROM sendjobs_claim(1, '1 minute')"),
            id
        );
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
}
