//! sendjobs_link_transactions (src/verbs/link.rs): stamping business rows, key types,
//! search_path.

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    use crate::tests::{
        business_table, claim_one, one, run, sqlstate_of, state, state_without_txn,
    };

    #[pg_test]
    fn applied_terminal_finalizes_stamp_the_linked_business_row() {
        business_table();
        run("SELECT sendjobs_guard_terminal('txn');
             SELECT sendjobs_link_transactions('txn', 'id', 'status', 'success', 'failed');
             SELECT sendjobs_enqueue('{}', transaction_id => 't1');
             SELECT sendjobs_enqueue('{}', transaction_id => 't2');
             SELECT sendjobs_enqueue('{}', transaction_id => 't3');
             SELECT sendjobs_enqueue('{}', transaction_id => 'no-such-row');");
        for (outcome, _) in [
            ("sent", "t1"),
            ("failed", "t2"),
            ("retry", "t3"),
            ("sent", "none"),
        ] {
            let (id, generation) = claim_one("1 minute");
            assert_eq!(
                one::<String>(&format!(
                    "SELECT sendjobs_finalize({id}, {generation}, '{outcome}')"
                )),
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
        assert_eq!(
            one::<String>(&format!(
                "SELECT sendjobs_finalize({id}, {generation}, 'sent')"
            )),
            "applied"
        );
        assert_eq!(
            one::<String>("SELECT status FROM txn WHERE id = 't4'"),
            "failed"
        );
        assert_eq!(
            one::<String>(&format!("SELECT status FROM send_jobs WHERE id = {id}")),
            "sent"
        );

        run("SELECT sendjobs_unlink_transactions(); SELECT sendjobs_enqueue('{}', transaction_id => 't5');");
        let (id, generation) = claim_one("1 minute");
        run(&format!(
            "SELECT sendjobs_finalize({id}, {generation}, 'sent')"
        ));
        assert_eq!(
            one::<String>("SELECT status FROM txn WHERE id = 't5'"),
            "pending"
        );
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
        assert_eq!(
            sqlstate_of(&format!(
                "SELECT sendjobs_finalize({id}, {generation}, 'sent')"
            )),
            "23514"
        );
        assert_eq!(before, state());
    }

    #[pg_test]
    fn link_works_with_typed_columns() {
        run("CREATE TYPE pay_state AS ENUM ('open', 'paid', 'rejected');
             CREATE TABLE payments (ref bigint PRIMARY KEY, state pay_state NOT NULL DEFAULT 'open');
             INSERT INTO payments VALUES (7);
             SELECT sendjobs_guard_terminal('payments', 'state', '{paid,rejected}', '{}');
             SELECT sendjobs_link_transactions('payments', 'ref', 'state', 'paid', 'rejected', 'open');
             SELECT sendjobs_enqueue('{}', transaction_id => '7');");
        let (id, generation) = claim_one("1 minute");
        run(&format!(
            "SELECT sendjobs_finalize({id}, {generation}, 'failed')"
        ));
        assert_eq!(
            one::<String>("SELECT state::text FROM payments WHERE ref = 7"),
            "rejected"
        );
        run("UPDATE payments SET state = 'paid' WHERE ref = 7");
        assert_eq!(
            one::<String>("SELECT state::text FROM payments WHERE ref = 7"),
            "rejected"
        );
        // A value the column cannot hold is refused when linking, not at the first finalize.
        assert_eq!(
            sqlstate_of("SELECT sendjobs_link_transactions('payments', 'ref', 'state', 'ok')"),
            "22P02"
        );
    }

    #[pg_test]
    fn a_hostile_search_path_does_not_redirect_the_functions() {
        run("CREATE SCHEMA evil;
             CREATE TABLE evil.send_jobs (LIKE public.send_jobs INCLUDING ALL);
             SET LOCAL search_path = evil, public;");
        let id = one::<i64>("SELECT public.sendjobs_enqueue('{}')");
        assert_eq!(one::<i64>("SELECT count(*) FROM public.send_jobs"), 1);
        assert_eq!(one::<i64>("SELECT count(*) FROM evil.send_jobs"), 0);
        assert_eq!(
            one::<i64>("SELECT id FROM public.sendjobs_claim(1, '1 minute')"),
            id
        );
    }

    /// The stamp resolves names with `pg_catalog`, the linked table's schema and its types'
    /// schemas, never the caller's search_path (a schema the caller put first holds a table
    /// of the same name, untouched): a user trigger on the table finds its own tables there.
    #[pg_test]
    fn user_triggers_on_the_linked_table_resolve_names_in_its_schema_not_the_callers_path() {
        business_table();
        run("CREATE TABLE txn_history (id text, old_status text, new_status text);
             CREATE FUNCTION record_txn() RETURNS trigger LANGUAGE plpgsql AS
               $$ BEGIN INSERT INTO txn_history VALUES (NEW.id, OLD.status, NEW.status); RETURN NEW; END $$;
             CREATE TRIGGER history AFTER UPDATE ON txn FOR EACH ROW EXECUTE FUNCTION record_txn();
             SELECT sendjobs_guard_terminal('txn');
             SELECT sendjobs_link_transactions('txn');
             SELECT sendjobs_enqueue('{}', transaction_id => 't1');
             CREATE SCHEMA callers;
             CREATE TABLE callers.txn_history (id text, old_status text, new_status text);
             SET LOCAL search_path = callers, public;");
        let (id, generation) = claim_one("1 minute");
        assert_eq!(
            one::<String>(&format!(
                "SELECT sendjobs_finalize({id}, {generation}, 'sent')"
            )),
            "applied"
        );
        assert_eq!(
            one::<String>("SELECT string_agg(concat_ws(':', id, old_status, new_status), ',') FROM public.txn_history"),
            "t1:pending:success"
        );
        assert_eq!(one::<i64>("SELECT count(*) FROM callers.txn_history"), 0);
    }

    #[pg_test]
    fn transaction_ids_must_fit_the_linked_key() {
        run(
            "CREATE TABLE orders (order_no int PRIMARY KEY, state text NOT NULL DEFAULT 'new');
             SELECT sendjobs_enqueue('{}', transaction_id => 'ORD-7');",
        );
        // An unfinished job whose transaction_id is no int: the link is refused.
        assert_eq!(
            sqlstate_of("SELECT sendjobs_link_transactions('orders', 'order_no', 'state')"),
            "22P02"
        );
        assert_eq!(
            one::<i64>("SELECT count(*) FROM sendjobs_transaction_link"),
            0
        );
        run(
            "UPDATE send_jobs SET transaction_id = '7'; INSERT INTO orders VALUES (7);
             SELECT sendjobs_link_transactions('orders', 'order_no', 'state');",
        );
        // New jobs must carry a valid key too; nothing is created.
        let before_enqueue = state_without_txn();
        assert_eq!(
            sqlstate_of("SELECT sendjobs_enqueue('{}', transaction_id => 'ORD-8')"),
            "22P02"
        );
        assert_eq!(before_enqueue, state_without_txn());
        let (id, generation) = claim_one("1 minute");
        assert_eq!(
            one::<String>(&format!(
                "SELECT sendjobs_finalize({id}, {generation}, 'sent')"
            )),
            "applied"
        );
        assert_eq!(
            one::<String>("SELECT state FROM orders WHERE order_no = 7"),
            "success"
        );
    }

    #[pg_test]
    fn dropping_the_linked_table_removes_the_link() {
        business_table();
        run("SELECT sendjobs_link_transactions('txn');
             SELECT sendjobs_enqueue('{}', transaction_id => 't1');
             DROP TABLE txn;");
        assert_eq!(
            one::<i64>("SELECT count(*) FROM sendjobs_transaction_link"),
            0
        );
        let (id, generation) = claim_one("1 minute");
        assert_eq!(
            one::<String>(&format!(
                "SELECT sendjobs_finalize({id}, {generation}, 'sent')"
            )),
            "applied"
        );
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
}
