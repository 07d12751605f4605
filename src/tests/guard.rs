//! The terminal guard (src/guard.rs): refusals, exits, the trigger used directly.

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    use crate::tests::{business_table, one, run, sqlstate_of};

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
            one::<String>(
                "SELECT string_agg(id || '=' || status, ',' ORDER BY id) FROM txn WHERE id <= 't3'"
            ),
            "t1=success,t2=failed,t3=success"
        );
        run("SET LOCAL sendjobs.guard_action = error");
        assert_eq!(
            sqlstate_of("UPDATE txn SET status = 'failed' WHERE id = 't1'"),
            "23514"
        );
        assert_eq!(
            sqlstate_of("UPDATE txn SET status = NULL WHERE id = 't1'"),
            "23514"
        );
        assert_eq!(
            sqlstate_of("UPDATE txn SET status = 'pending' WHERE id = 't1'"),
            "23514"
        );
        // Same-value updates and the declared exit pass.
        assert_eq!(
            sqlstate_of("UPDATE txn SET status = 'success' WHERE id = 't1'"),
            "00000"
        );
        assert_eq!(
            sqlstate_of("UPDATE txn SET status = 'pending' WHERE id = 't2'"),
            "00000"
        );
        assert_eq!(
            one::<String>("SELECT status FROM txn WHERE id = 't2'"),
            "pending"
        );
    }

    #[pg_test]
    fn the_guard_trigger_function_works_in_create_trigger() {
        run("CREATE TABLE jobs2 (k int PRIMARY KEY, state text);
             INSERT INTO jobs2 VALUES (1, 'done'), (2, 'dead'), (3, 'new');
             CREATE TRIGGER g BEFORE UPDATE ON jobs2 FOR EACH ROW
               EXECUTE FUNCTION sendjobs_guard_terminal_trigger('state', '{done,dead}', '{dead:queued}');
             SET LOCAL sendjobs.guard_action = error;");
        assert_eq!(
            sqlstate_of("UPDATE jobs2 SET state = 'dead' WHERE k = 1"),
            "23514"
        );
        assert_eq!(
            sqlstate_of("UPDATE jobs2 SET state = 'queued' WHERE k = 1"),
            "23514"
        );
        assert_eq!(
            sqlstate_of("UPDATE jobs2 SET state = 'queued' WHERE k = 2"),
            "00000"
        );
        assert_eq!(
            sqlstate_of("UPDATE jobs2 SET state = 'done' WHERE k = 3"),
            "00000"
        );
        run("CREATE TABLE plain (id int PRIMARY KEY, status text);
             INSERT INTO plain VALUES (1, 'success');
             CREATE TRIGGER g BEFORE UPDATE ON plain FOR EACH ROW
               EXECUTE FUNCTION sendjobs_guard_terminal_trigger();");
        assert_eq!(sqlstate_of("UPDATE plain SET status = 'failed'"), "23514");
        run("INSERT INTO jobs2 VALUES (4, 'new');
             CREATE TRIGGER late AFTER UPDATE ON jobs2 FOR EACH ROW
               EXECUTE FUNCTION sendjobs_guard_terminal_trigger('state');");
        assert_eq!(
            sqlstate_of("UPDATE jobs2 SET state = 'x' WHERE k = 4"),
            "39P01"
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
        assert_eq!(
            sqlstate_of("UPDATE txn SET note = 'x' WHERE id = 't1'"),
            "23514"
        );
        assert_eq!(
            one::<String>("SELECT status FROM txn WHERE id = 't1'"),
            "success"
        );
    }

    #[pg_test]
    fn a_replaced_guard_takes_effect_in_the_same_session() {
        run(
            "CREATE TABLE pay (id text PRIMARY KEY, status text NOT NULL);
             INSERT INTO pay VALUES ('a', 'failed');
             SELECT sendjobs_guard_terminal('pay');
             SET LOCAL sendjobs.guard_action = error;",
        );
        assert_eq!(
            sqlstate_of("UPDATE pay SET status = 'success' WHERE id = 'a'"),
            "23514"
        );
        run("SELECT sendjobs_guard_terminal('pay', 'status', '{success}', '{}')");
        assert_eq!(
            sqlstate_of("UPDATE pay SET status = 'success' WHERE id = 'a'"),
            "00000"
        );
        assert_eq!(
            sqlstate_of("UPDATE pay SET status = 'failed' WHERE id = 'a'"),
            "23514"
        );
    }
}

/// The rule itself, without a server.
#[cfg(test)]
mod rule {
    use crate::guard::GuardRule;

    fn rule() -> GuardRule {
        GuardRule::new(
            "status".into(),
            vec!["success".into(), "failed".into()],
            vec!["failed:pending".into()],
        )
        .unwrap()
    }

    #[test]
    fn refusals_follow_the_rule() {
        let rule = rule();
        // (old, new, refused)
        let cases = [
            (Some("success"), Some("failed"), true),
            (Some("failed"), Some("success"), true),
            (Some("success"), None, true),
            (Some("success"), Some("pending"), true),
            (Some("failed"), Some("pending"), false),
            (Some("success"), Some("success"), false),
            (Some("pending"), Some("success"), false),
            (None, Some("failed"), false),
        ];
        for (old, new, refused) in cases {
            assert_eq!(rule.refuses(old, new), refused, "{old:?} -> {new:?}");
        }
    }

    #[test]
    fn bad_exits_are_rejected() {
        for exit in ["failed", "pending:failed", "failed:", "failed:failed"] {
            let rule = GuardRule::new(
                "status".into(),
                vec!["success".into(), "failed".into()],
                vec![exit.into()],
            );
            assert!(rule.is_err(), "{exit} accepted");
        }
        assert!(GuardRule::new("status".into(), vec![], vec![]).is_err());
    }
}
