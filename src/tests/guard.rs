//! The terminal guard's rule (src/guards/guard.rs), without a server: what it refuses,
//! which exits it accepts. What the guard does to rows is tests/pg_regress/sql/guard.sql.

/// The rule itself, without a server.
#[cfg(test)]
mod rule {
    use crate::guards::guard::GuardRule;

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
