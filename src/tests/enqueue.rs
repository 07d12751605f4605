//! sendjobs_enqueue (src/enqueue.rs): defaults, arguments, idempotency keys.

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    use crate::tests::{one, run, state_without_txn};

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
        assert_eq!(
            one::<i32>(&format!(
                "SELECT max_attempts FROM send_jobs WHERE id = {id}"
            )),
            9
        );
    }

    #[pg_test]
    fn enqueue_with_a_known_idempotency_key_returns_the_existing_job() {
        let first = one::<i64>("SELECT sendjobs_enqueue('{\"n\":1}', idempotency_key => 'k')");
        let before = state_without_txn();
        let again = one::<i64>(
            "SELECT sendjobs_enqueue('{\"n\":2}', queue => 'other', idempotency_key => 'k')",
        );
        assert_eq!(first, again);
        assert_eq!(before, state_without_txn());
        assert_eq!(one::<i64>("SELECT count(*) FROM send_jobs"), 1);
    }
}
