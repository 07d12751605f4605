//! Every numeric input has bounds that keep every value computed from it in range
//! (docs/contract.md, "Limits"). A property test drives each input to its bounds and past
//! them: a value past a bound is refused with 22023 and changes nothing; a value within
//! them is accepted, and then every answer computed from it — the limits and their
//! retry_after, the stats, a claim, a heartbeat, a finalize — comes back without an error
//! of range (0.3.0 took a rate of 1e-14, after which sendjobs_queue_limits failed with
//! 22008 for every queue).

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestCaseError, TestRunner};

    use crate::tests::{rolled_back, sqlstate_of};

    /// Values at, just inside and just past `low` and `high`, and any between.
    fn around(low: f64, high: f64) -> impl Strategy<Value = f64> {
        let below = |x: f64| x - x.abs() * 1e-9 - f64::MIN_POSITIVE;
        let above = |x: f64| x + x.abs() * 1e-9 + f64::MIN_POSITIVE;
        prop_oneof![
            Just(low),
            Just(high),
            Just(below(low)),
            Just(above(high)),
            Just(1e-300),
            Just(f64::MAX),
            Just(-1.0),
            Just(0.0),
            low..=high,
        ]
    }

    fn int_around(low: i64, high: i64) -> impl Strategy<Value = i64> {
        prop_oneof![
            Just(low),
            Just(high),
            Just(low - 1),
            Just(high + 1),
            Just(i64::from(i32::MIN)),
            Just(i64::from(i32::MAX)),
            low..=high,
        ]
    }

    #[derive(Debug, Clone)]
    struct Case {
        rate: f64,
        burst: i64,
        max_in_flight: i64,
        priority: i64,
        max_attempts: i64,
        lease_ms: i64,
        /// Seconds from the bucket's last claim to now: far in the past or the future
        /// (the clock stepped).
        bucket_age: f64,
        tokens: f64,
    }

    fn case() -> impl Strategy<Value = Case> {
        (
            around(1.0 / 86_400.0, 1_000_000.0),
            int_around(1, i64::from(i32::MAX)),
            int_around(1, i64::from(i32::MAX)),
            int_around(0, 60),
            int_around(1, i64::from(i32::MAX)),
            int_around(0, 3_600_000),
            prop_oneof![Just(-3.0e9), Just(3.0e9), -1.0e6..1.0e6f64],
            prop_oneof![Just(0.0), Just(1.0), 0.0..1.0e6f64],
        )
            .prop_map(
                |(
                    rate,
                    burst,
                    max_in_flight,
                    priority,
                    max_attempts,
                    lease_ms,
                    bucket_age,
                    tokens,
                )| Case {
                    rate,
                    burst,
                    max_in_flight,
                    priority,
                    max_attempts,
                    lease_ms,
                    bucket_age,
                    tokens,
                },
            )
    }

    /// 00000 within the bounds, 22023 past them, nothing else.
    fn expect(call: &str, within: bool) -> std::result::Result<(), TestCaseError> {
        let got = sqlstate_of(call);
        let wanted = if within { "00000" } else { "22023" };
        prop_assert_eq!(&got, wanted, "{}", call);
        Ok(())
    }

    fn answers_in_range() -> std::result::Result<(), TestCaseError> {
        for call in [
            "SELECT count(*) FROM sendjobs_queue_limits()",
            "SELECT count(*) FROM sendjobs_stats()",
            "SELECT count(*) FROM sendjobs_claim(10, '1 minute', 'q')",
            "SELECT count(*) FROM sendjobs_claim(10, '1 minute')",
        ] {
            prop_assert_eq!(sqlstate_of(call), "00000", "{}", call);
        }
        let retry_after_ok = Spi::get_one::<bool>(
            "SELECT coalesce(bool_and(retry_after BETWEEN interval '0' AND interval '1 day'), true)
               FROM sendjobs_queue_limits()",
        )
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(retry_after_ok, Some(true), "retry_after out of 0 .. 1 day");
        Ok(())
    }

    fn run_case(c: &Case) -> std::result::Result<(), TestCaseError> {
        let rate_ok = (1.0 / 86_400.0..=1_000_000.0).contains(&c.rate);
        let burst_ok = c.burst >= 1 && c.burst <= i64::from(i32::MAX);
        let in_range = |x: i64| x >= i64::from(i32::MIN) && x <= i64::from(i32::MAX);
        let limit = |rate: f64, burst: i64| {
            format!(
                "SELECT sendjobs_limit('q', rate => {rate:e}::float8, burst => ({burst})::int4)"
            )
        };
        if in_range(c.burst) {
            expect(&limit(c.rate, c.burst), rate_ok && burst_ok)?;
        }
        if in_range(c.max_in_flight) {
            expect(
                &format!(
                    "SELECT sendjobs_limit('c', max_in_flight => ({})::int4)",
                    c.max_in_flight
                ),
                c.max_in_flight >= 1,
            )?;
        }
        if in_range(c.priority) && in_range(c.max_attempts) {
            expect(
                &format!(
                    "SELECT sendjobs_enqueue('{{}}', 'q', priority => ({})::int4, max_attempts => ({})::int4)",
                    c.priority, c.max_attempts
                ),
                (0..=60).contains(&c.priority) && c.max_attempts >= 1,
            )?;
        }
        // The bucket as a claim long ago (or, the clock stepped back, in the future) left it.
        Spi::run(&format!(
            "UPDATE sendjobs_queues SET tokens = least(burst, {tokens}),
                    tokens_at = now() - make_interval(secs => {age})
              WHERE rate IS NOT NULL",
            tokens = c.tokens,
            age = c.bucket_age,
        ))
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
        answers_in_range()?;
        // Milliseconds, the unit of sendjobs.max_lease (1 h by default).
        let lease = format!("make_interval(secs => ({})::float8 / 1000)", c.lease_ms);
        let lease_ok = (0..=3_600_000).contains(&c.lease_ms);
        expect(
            &format!("SELECT count(*) FROM sendjobs_claim(1, {lease})"),
            lease_ok,
        )?;
        // A heartbeat's lease is checked when it is called: only with a job in flight.
        let in_flight =
            Spi::get_one::<i64>("SELECT count(*) FROM send_jobs WHERE status = 'in_flight'")
                .map_err(|e| TestCaseError::fail(e.to_string()))?
                .unwrap_or(0);
        if in_flight > 0 {
            expect(
                &format!(
                    "SELECT count(*) FROM send_jobs j, sendjobs_heartbeat(j.id, j.claim_generation, {lease})
                      WHERE j.status = 'in_flight'"
                ),
                lease_ok,
            )?;
        }
        prop_assert_eq!(
            sqlstate_of(
                "SELECT count(*) FROM send_jobs j, sendjobs_finalize(j.id, j.claim_generation, 'retry')
                  WHERE j.status = 'in_flight'"
            ),
            "00000"
        );
        answers_in_range()
    }

    #[pg_test]
    fn every_input_has_bounds_that_keep_what_it_computes_in_range() {
        let mut runner = TestRunner::new(Config {
            cases: 50,
            failure_persistence: None,
            ..Config::default()
        });
        let result = runner.run(&case(), |c| match rolled_back(|| run_case(&c)) {
            Ok(outcome) => outcome,
            Err(_) => Err(TestCaseError::fail("a Postgres error")),
        });
        if let Err(failure) = result {
            panic!("an input within its bounds gave an answer out of range:\n{failure}");
        }
    }
}
