//! The row rule of send_jobs and send_jobs_finished (src/guards/job_state.rs), as their
//! CHECKs apply it to any writer.

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    use crate::tests::{one, sqlstate_of, state_without_txn};

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

        // The rule holds in send_jobs_finished too (its own CHECK): a finished job without
        // finished_at, or with a lease, and an unfinished job are refused there.
        for refused in [
            "INSERT INTO send_jobs_finished (payload, status) VALUES ('{}', 'sent')",
            "INSERT INTO send_jobs_finished (payload, status, finished_at, claimed_at, lease_expires_at) \
             VALUES ('{}', 'sent', now(), now(), now())",
            "INSERT INTO send_jobs_finished (payload, status, finished_at) VALUES ('{}', 'pending', now())",
            "INSERT INTO send_jobs_finished (payload, status, finished_at) VALUES ('{}', 'bogus', now())",
        ] {
            assert_eq!(sqlstate_of(refused), "23514", "{refused}");
        }

        // Rows that agree with their status are accepted, whoever writes them: in
        // send_jobs an unfinished one, in send_jobs_finished a finished one.
        let update = format!("UPDATE send_jobs SET status = 'in_flight', {lease} WHERE id = {id}");
        assert_eq!(sqlstate_of(&update), "00000", "{update}");
        let finished = "INSERT INTO send_jobs_finished (payload, status, finished_at) \
                        VALUES ('{}', 'cancelled', now())";
        assert_eq!(sqlstate_of(finished), "00000", "{finished}");
    }
}
