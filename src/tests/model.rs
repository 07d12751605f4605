//! Model-based randomized test: random operation sequences from simulated workers run
//! against the real extension and against a reference model in plain Rust; the full
//! observable state (jobs, events, guarded business rows) and every call's result are
//! compared after every step. proptest shrinks a failure to a minimal sequence.
//!
//! The lifecycle is in it too: a claim that gives up on a job whose last lease expired,
//! cancel, redrive (whose new job is then given a tick like any other) and purge. And
//! flow control (docs/decisions/0013-flow-control-in-the-claim.md): ordering keys, a
//! pause and a cap on the (one) queue's jobs in flight, which change what a claim takes
//! and in which order (its passes: jobs without a key, then ordered jobs; or the limited
//! queue's one pass), a rate (a bucket that does not refill within a case, so that the
//! claims it lets through are exact); and priorities, a head start in the claim order.
//!
//! Time is controlled, not waited for: due times are fixed instants in the year 2000
//! (a "tick" is one second after 2000-01-01), "future" is any instant after now, and a
//! lease is either zero (expired at once) or an hour, which `Expire` backdates.
//!
//! Each case runs in a subtransaction that is always rolled back, so every case starts
//! from empty tables inside the one transaction of the #[pg_test].

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    use std::collections::HashMap;

    use crate::tests::{check_sequences, one_at_a_time};
    use proptest::prelude::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
    enum Due {
        Tick(u32),
        Future,
    }

    #[derive(Clone, Copy, Debug)]
    enum GenerationChoice {
        Current,
        Older(i64),
        Newer,
    }

    #[derive(Clone, Copy, Debug)]
    enum RetryAt {
        Backoff,
        At(Due),
    }

    #[derive(Clone, Debug)]
    enum Op {
        Enqueue {
            due: Due,
            linked: bool,
            key: Option<u8>,
            order: Option<u8>,
            max_attempts: i32,
            /// Minutes of head start: 1 puts a job ahead of every tick (0..20 seconds).
            priority: u8,
        },
        Pause(bool),
        /// sendjobs_limit: a cap, and a rate too slow to refill within a case (a thousandth
        /// of a claim a second) with a burst: its bucket holds `burst` claims, then none.
        Limit {
            cap: Option<i32>,
            burst: Option<i32>,
        },
        Claim {
            batch: i32,
            zero_lease: bool,
        },
        Finalize {
            job: usize,
            generation: GenerationChoice,
            outcome: &'static str,
            retry_at: RetryAt,
        },
        FinalizeBatch {
            jobs: Vec<(usize, GenerationChoice)>,
            outcome: &'static str,
        },
        Heartbeat {
            job: usize,
            generation: GenerationChoice,
            zero_lease: bool,
        },
        Expire {
            job: usize,
        },
        MakeDue {
            job: usize,
            tick: u32,
        },
        SetBusiness {
            job: usize,
            status: &'static str,
        },
        Cancel {
            job: usize,
        },
        Redrive {
            job: usize,
            tick: u32,
        },
        Purge,
        /// sendjobs_block_keys: whether a job with an ordering key that fails for good
        /// stops the rest of its key.
        BlockKeys(bool),
        /// sendjobs_unblock_key of 'order-{n}'.
        Unblock {
            order: u8,
        },
    }

    fn due() -> impl Strategy<Value = Due> {
        prop_oneof![3 => (0u32..20).prop_map(Due::Tick), 1 => Just(Due::Future)]
    }

    fn generation_choice() -> impl Strategy<Value = GenerationChoice> {
        prop_oneof![
            4 => Just(GenerationChoice::Current),
            2 => (1i64..3).prop_map(GenerationChoice::Older),
            1 => Just(GenerationChoice::Newer),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (due(), any::<bool>(), proptest::option::weighted(0.3, 0u8..3),
                  proptest::option::weighted(0.4, 0u8..2), 1i32..4, prop_oneof![3 => Just(0u8), 1 => Just(1u8)])
                .prop_map(|(due, linked, key, order, max_attempts, priority)| {
                    Op::Enqueue { due, linked, key, order, max_attempts, priority }
                }),
            1 => any::<bool>().prop_map(Op::Pause),
            1 => (proptest::option::weighted(0.6, 1i32..3), proptest::option::weighted(0.4, 1i32..4))
                .prop_map(|(cap, burst)| Op::Limit { cap, burst }),
            4 => (1i32..4, any::<bool>()).prop_map(|(batch, zero_lease)| Op::Claim { batch, zero_lease }),
            5 => (
                any::<usize>(),
                generation_choice(),
                prop_oneof![Just("sent"), Just("failed"), Just("retry")],
                prop_oneof![Just(RetryAt::Backoff), due().prop_map(RetryAt::At)],
            )
                .prop_map(|(job, generation, outcome, retry_at)| Op::Finalize { job, generation, outcome, retry_at }),
            2 => (
                proptest::collection::vec((any::<usize>(), generation_choice()), 1..4),
                prop_oneof![Just("sent"), Just("failed"), Just("retry")],
            )
                .prop_map(|(jobs, outcome)| Op::FinalizeBatch { jobs, outcome }),
            2 => (any::<usize>(), generation_choice(), any::<bool>())
                .prop_map(|(job, generation, zero_lease)| Op::Heartbeat { job, generation, zero_lease }),
            2 => any::<usize>().prop_map(|job| Op::Expire { job }),
            1 => (any::<usize>(), 0u32..20).prop_map(|(job, tick)| Op::MakeDue { job, tick }),
            2 => (any::<usize>(), prop_oneof![Just("pending"), Just("success"), Just("failed")])
                .prop_map(|(job, status)| Op::SetBusiness { job, status }),
            1 => any::<usize>().prop_map(|job| Op::Cancel { job }),
            2 => (any::<usize>(), 0u32..20).prop_map(|(job, tick)| Op::Redrive { job, tick }),
            1 => Just(Op::Purge),
            1 => any::<bool>().prop_map(Op::BlockKeys),
            1 => (0u8..2).prop_map(|order| Op::Unblock { order }),
        ]
    }

    #[derive(Clone, Debug, PartialEq, Eq)]
    struct Job {
        id: i64,
        status: &'static str,
        attempts: i32,
        max_attempts: i32,
        generation: i64,
        due: Due,
        lease_expired: bool,
        transaction: Option<String>,
        event: Option<(&'static str, i64)>,
        order: Option<u8>,
        priority: u8,
    }

    impl Job {
        /// Its place in the claim order (claim.sql): the due time less the head start, in
        /// seconds from EPOCH. Only due jobs are placed.
        fn claim_order(&self) -> i64 {
            match self.due {
                Due::Tick(tick) => i64::from(tick) - 60 * i64::from(self.priority),
                Due::Future => i64::MAX,
            }
        }
    }

    #[derive(Default, Debug)]
    struct Model {
        jobs: Vec<Job>,
        keys: HashMap<u8, i64>,
        business: HashMap<String, &'static str>,
        /// failed job -> the job that redrove it
        redriven: HashMap<i64, i64>,
        /// job -> the claim (generation) and outcome of its last applied finalize: the
        /// same finalize made again is a repeat, applied again and changing nothing,
        /// while the job is still as it left it (decision 0012)
        finalized: HashMap<i64, (i64, &'static str)>,
        /// The queue's flow control.
        paused: bool,
        cap: Option<i32>,
        /// The rate's bucket: whole claims left (it refills by less than one in a case).
        tokens: Option<usize>,
        /// Whether a failure stops its key, and the stopped keys: key -> the job that
        /// stops it (the failed job, then its redrive).
        block_keys: bool,
        blocked: HashMap<u8, i64>,
    }

    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Pass {
        /// Jobs without an ordering key, and every expired lease.
        Unordered,
        /// Pending ordered jobs, after the turn of such claims.
        Ordered,
        /// The one pass of a queue with flow control.
        Limited,
    }

    fn is_terminal(status: &str) -> bool {
        status == "success" || status == "failed"
    }

    impl Model {
        fn job_mut(&mut self, id: i64) -> &mut Job {
            self.jobs
                .iter_mut()
                .find(|job| job.id == id)
                .expect("known job")
        }

        /// The default guard: terminal values are absorbing, failed -> pending is the exit.
        fn guarded_update(&mut self, transaction: &str, status: &'static str) {
            if let Some(current) = self.business.get_mut(transaction) {
                let refused = is_terminal(current)
                    && *current != status
                    && !(*current == "failed" && status == "pending");
                if !refused {
                    *current = status;
                }
            }
        }

        /// In claim order: a job whose last lease expired gives up (failed, its event, its
        /// business row stamped) and takes no place; the others are claimed, up to batch.
        /// A pending ordered job is claimable when no older unfinished job of its key
        /// exists and none of its key is in flight (as the round found them); a stopped
        /// key's only claimable job is the one that stops it (older ones of its key
        /// waiting), while that one is unfinished or failed.
        fn key_free(jobs: &[Job], blocked: &HashMap<u8, i64>, job: &Job) -> bool {
            let Some(order) = job.order else { return true };
            let stopping = blocked.get(&order).copied();
            let holds = |id: i64| {
                jobs.iter()
                    .any(|j| j.id == id && matches!(j.status, "pending" | "in_flight" | "failed"))
            };
            if stopping.is_some_and(|id| id != job.id && holds(id)) {
                return false;
            }
            let first = stopping == Some(job.id);
            !jobs.iter().any(|other| {
                other.order == Some(order)
                    && other.id != job.id
                    && (other.status == "in_flight"
                        || (!first && other.id < job.id && matches!(other.status, "pending")))
            })
        }

        /// A job that failed for good: its key stops there when failures stop keys.
        fn failed_for_good(&mut self, id: i64) {
            let order = self
                .jobs
                .iter()
                .find(|job| job.id == id)
                .and_then(|job| job.order);
            if let (true, Some(order)) = (self.block_keys, order) {
                self.blocked.insert(order, id);
            }
        }

        /// The claim: its passes, each in rounds (a round takes up to what is wanted in
        /// claim order, as the round's statement sees the jobs; jobs that gave up took
        /// places, so another round claims for them).
        fn claim(&mut self, batch: i32, zero_lease: bool) -> Vec<(i64, i64)> {
            let batch = batch as usize;
            let mut claimed = Vec::new();
            if self.paused {
                return claimed;
            }
            if self.cap.is_some() || self.tokens.is_some() {
                // The limited queue's one pass, ordered jobs tested, up to the cap and the
                // bucket's whole tokens; what it claimed is taken from the bucket.
                let in_flight = self
                    .jobs
                    .iter()
                    .filter(|job| job.status == "in_flight" && !job.lease_expired)
                    .count();
                let mut allowance = batch;
                if let Some(cap) = self.cap {
                    allowance = allowance.min((cap as usize).saturating_sub(in_flight));
                }
                if let Some(tokens) = self.tokens {
                    allowance = allowance.min(tokens);
                }
                self.claim_pass(allowance, zero_lease, Pass::Limited, &mut claimed);
                if let Some(tokens) = &mut self.tokens {
                    *tokens -= claimed.len();
                }
                return claimed;
            }
            let keyed_pending = self
                .jobs
                .iter()
                .any(|job| job.status == "pending" && job.order.is_some());
            self.claim_pass(batch, zero_lease, Pass::Unordered, &mut claimed);
            if keyed_pending && claimed.len() < batch {
                self.claim_pass(batch, zero_lease, Pass::Ordered, &mut claimed);
            }
            claimed
        }

        fn claim_pass(
            &mut self,
            batch: usize,
            zero_lease: bool,
            pass: Pass,
            claimed: &mut Vec<(i64, i64)>,
        ) {
            loop {
                let wanted = batch.saturating_sub(claimed.len());
                if wanted == 0 {
                    return;
                }
                let snapshot = self.jobs.clone();
                let blocked = self.blocked.clone();
                let mut eligible: Vec<(i64, i64)> = snapshot
                    .iter()
                    .filter(|job| matches!(job.due, Due::Tick(_)))
                    // A claim made at this instant is never taken back by the same call
                    // (claim.sql: claimed_at < now).
                    .filter(|job| !claimed.iter().any(|(id, _)| *id == job.id))
                    .filter(|job| match (pass, job.status) {
                        (Pass::Unordered, "pending") => job.order.is_none(),
                        (Pass::Ordered, "pending") => {
                            job.order.is_some() && Self::key_free(&snapshot, &blocked, job)
                        }
                        (Pass::Limited, "pending") => Self::key_free(&snapshot, &blocked, job),
                        (Pass::Unordered | Pass::Limited, "in_flight") => job.lease_expired,
                        _ => false,
                    })
                    .map(|job| (job.claim_order(), job.id))
                    .collect();
                eligible.sort();
                let mut gave_up = false;
                let mut round = Vec::new();
                for (_, id) in eligible.into_iter().take(wanted) {
                    let job = self.job_mut(id);
                    if job.status == "in_flight" && job.attempts >= job.max_attempts {
                        job.status = "failed";
                        job.lease_expired = false;
                        job.event = Some(("failed", job.generation));
                        if let Some(transaction) = job.transaction.clone() {
                            self.guarded_update(&transaction, "failed");
                        }
                        self.failed_for_good(id);
                        gave_up = true;
                        continue;
                    }
                    job.status = "in_flight";
                    job.attempts += 1;
                    job.generation += 1;
                    job.lease_expired = zero_lease;
                    round.push((job.claim_order(), id, job.generation));
                }
                // A round's rows come back in claim order.
                round.sort();
                claimed.extend(
                    round
                        .into_iter()
                        .map(|(_, id, generation)| (id, generation)),
                );
                if !gave_up {
                    return;
                }
            }
        }

        fn cancel(&mut self, id: i64) -> &'static str {
            let job = self.job_mut(id);
            if job.status != "pending" && job.status != "in_flight" {
                return "stale";
            }
            job.status = "cancelled";
            job.lease_expired = false;
            job.event = Some(("cancelled", job.generation));
            "applied"
        }

        /// Deletes every finished job (a purge with older_than 0), returning how many, but a
        /// redriven job's new job while the failed job it sends again is still there (this
        /// purge deletes that one; the next deletes the new job), and a failed job that
        /// stops its key; and the stops that their job no longer holds.
        fn purge(&mut self) -> i64 {
            let finished = |job: &Job| matches!(job.status, "sent" | "failed" | "cancelled");
            let mut kept: Vec<i64> = self
                .redriven
                .iter()
                .filter(|(failed, _)| self.jobs.iter().any(|job| job.id == **failed))
                .map(|(_, new)| *new)
                .collect();
            kept.extend(self.blocked.values().filter(|id| {
                self.jobs
                    .iter()
                    .any(|job| job.id == **id && job.status == "failed")
            }));
            let gone: Vec<i64> = self
                .jobs
                .iter()
                .filter(|j| finished(j) && !kept.contains(&j.id))
                .map(|j| j.id)
                .collect();
            self.jobs.retain(|job| !gone.contains(&job.id));
            self.keys.retain(|_, id| !gone.contains(id));
            self.redriven.retain(|failed, _| !gone.contains(failed));
            self.finalized.retain(|id, _| !gone.contains(id));
            let jobs = &self.jobs;
            self.blocked.retain(|_, id| {
                jobs.iter().any(|job| {
                    job.id == *id && matches!(job.status, "pending" | "in_flight" | "failed")
                })
            });
            gone.len() as i64
        }

        fn finalize(
            &mut self,
            id: i64,
            generation: i64,
            outcome: &'static str,
            retry_at: RetryAt,
        ) -> &'static str {
            let last = self.finalized.get(&id).copied();
            let job = self.job_mut(id);
            if job.status != "in_flight" || job.generation != generation {
                let repeat = job.generation == generation
                    && last == Some((generation, outcome))
                    && matches!(job.status, "sent" | "failed" | "pending");
                return if repeat { "applied" } else { "stale" };
            }
            self.finalized.insert(id, (generation, outcome));
            let job = self.job_mut(id);
            job.lease_expired = false;
            let status = match outcome {
                "retry" if job.attempts < job.max_attempts => "pending",
                "retry" => "failed",
                terminal => terminal,
            };
            job.status = status;
            if status == "pending" {
                job.due = match retry_at {
                    RetryAt::Backoff => Due::Future,
                    RetryAt::At(due) => due,
                };
                return "applied";
            }
            job.event = Some((status, job.generation));
            if let Some(transaction) = job.transaction.clone() {
                self.guarded_update(
                    &transaction,
                    if status == "sent" {
                        "success"
                    } else {
                        "failed"
                    },
                );
            }
            if status == "failed" {
                self.failed_for_good(id);
            }
            "applied"
        }
    }

    const EPOCH: &str = "timestamptz '2000-01-01 00:00:00+00'";

    fn due_sql(due: Due) -> String {
        match due {
            Due::Tick(tick) => format!("{EPOCH} + interval '{tick} seconds'"),
            Due::Future => "clock_timestamp() + interval '1 day'".into(),
        }
    }

    fn generation_of(job: &Job, choice: GenerationChoice) -> i64 {
        match choice {
            GenerationChoice::Current => job.generation,
            GenerationChoice::Older(k) => (job.generation - k).max(0),
            GenerationChoice::Newer => job.generation + 1,
        }
    }

    fn sut_one<T: FromDatum + IntoDatum>(sql: &str) -> T {
        Spi::get_one::<T>(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .unwrap_or_else(|| panic!("{sql}: NULL"))
    }

    /// The extension's observable state, in the model's terms.
    fn observed() -> (Vec<Job>, HashMap<String, &'static str>) {
        fn status(text: &str) -> &'static str {
            [
                "pending",
                "in_flight",
                "sent",
                "failed",
                "success",
                "cancelled",
            ]
            .into_iter()
            .find(|s| *s == text)
            .unwrap_or("?")
        }
        let jobs = Spi::connect(|client| {
            client
                .select(
                    &format!(
                        "SELECT j.id, j.status, j.attempts, j.max_attempts, j.claim_generation,
                                CASE WHEN j.next_attempt_at <= clock_timestamp()
                                     THEN extract(epoch FROM j.next_attempt_at - {EPOCH})::int8 END,
                                coalesce(j.lease_expires_at <= clock_timestamp(), false),
                                j.transaction_id, e.kind, e.claim_generation,
                                (SELECT count(*) FROM send_job_events x WHERE x.job_id = j.id),
                                substr(j.ordering_key, 7)::int2, j.priority
                           FROM send_jobs j LEFT JOIN send_job_events e ON e.job_id = j.id
                          ORDER BY j.id"
                    ),
                    None,
                    &[],
                )
                .unwrap()
                .map(|row| {
                    let events = row.get::<i64>(11).unwrap().unwrap();
                    assert!(
                        events <= 1,
                        "job {:?} has {events} events",
                        row.get::<i64>(1)
                    );
                    let kind = row.get::<String>(9).unwrap();
                    Job {
                        id: row.get::<i64>(1).unwrap().unwrap(),
                        status: status(&row.get::<String>(2).unwrap().unwrap()),
                        attempts: row.get::<i32>(3).unwrap().unwrap(),
                        max_attempts: row.get::<i32>(4).unwrap().unwrap(),
                        generation: row.get::<i64>(5).unwrap().unwrap(),
                        due: row
                            .get::<i64>(6)
                            .unwrap()
                            .map_or(Due::Future, |tick| Due::Tick(tick as u32)),
                        lease_expired: row.get::<bool>(7).unwrap().unwrap(),
                        transaction: row.get::<String>(8).unwrap(),
                        event: kind
                            .map(|kind| (status(&kind), row.get::<i64>(10).unwrap().unwrap())),
                        order: row.get::<i16>(12).unwrap().map(|order| order as u8),
                        priority: row.get::<i16>(13).unwrap().unwrap() as u8,
                    }
                })
                .collect::<Vec<_>>()
        });
        let business = Spi::connect(|client| {
            client
                .select("SELECT id, status FROM model_txn", None, &[])
                .unwrap()
                .map(|row| {
                    (
                        row.get::<String>(1).unwrap().unwrap(),
                        status(&row.get::<String>(2).unwrap().unwrap()),
                    )
                })
                .collect::<HashMap<_, _>>()
        });
        (jobs, business)
    }

    /// Runs one operation against both sides; Err describes the first divergence.
    fn step(model: &mut Model, op: &Op, index: usize) -> Result<(), String> {
        let pick = |job: usize| -> Option<Job> {
            (!model.jobs.is_empty()).then(|| model.jobs[job % model.jobs.len()].clone())
        };
        match *op {
            Op::Enqueue {
                due,
                linked,
                key,
                order,
                max_attempts,
                priority,
            } => {
                let transaction = linked.then(|| format!("t{index}"));
                if let Some(transaction) = &transaction {
                    Spi::run(&format!(
                        "INSERT INTO model_txn VALUES ('{transaction}', 'pending')"
                    ))
                    .unwrap();
                    model.business.insert(transaction.clone(), "pending");
                }
                let id = sut_one::<i64>(&format!(
                    "SELECT sendjobs_enqueue('{{}}', run_at => {}, transaction_id => {}, idempotency_key => {},
                                             max_attempts => {max_attempts}, ordering_key => {},
                                             priority => {priority})",
                    due_sql(due),
                    transaction.as_ref().map_or("NULL".into(), |t| format!("'{t}'")),
                    key.map_or("NULL".into(), |k| format!("'key-{k}'")),
                    order.map_or("NULL".into(), |o| format!("'order-{o}'")),
                ));
                match key.and_then(|k| model.keys.get(&k)) {
                    Some(&existing) if existing != id => {
                        return Err(format!("idempotent enqueue gave {id}, want {existing}"))
                    }
                    Some(_) => {}
                    None => {
                        if let Some(k) = key {
                            model.keys.insert(k, id);
                        }
                        model.jobs.push(Job {
                            id,
                            status: "pending",
                            attempts: 0,
                            max_attempts,
                            generation: 0,
                            due,
                            lease_expired: false,
                            transaction,
                            event: None,
                            order,
                            priority,
                        });
                    }
                }
            }
            Op::Pause(paused) => {
                let call = if paused {
                    "sendjobs_pause"
                } else {
                    "sendjobs_resume"
                };
                Spi::run(&format!("SELECT {call}('default')")).unwrap();
                model.paused = paused;
            }
            Op::Limit { cap, burst } => {
                let cap_sql = cap.map_or("NULL".into(), |cap| cap.to_string());
                let (rate_sql, burst_sql) = match burst {
                    Some(b) => ("0.001", b.to_string()),
                    None => ("NULL", "NULL".to_string()),
                };
                Spi::run(&format!(
                    "SELECT sendjobs_limit('default', max_in_flight => {cap_sql}, rate => {rate_sql}, burst => {burst_sql})"
                ))
                .unwrap();
                model.cap = cap;
                model.tokens = burst.map(|b| b as usize);
            }
            Op::Claim { batch, zero_lease } => {
                let lease = if zero_lease { "0 seconds" } else { "1 hour" };
                let got = Spi::connect(|client| {
                    client
                        .select(&format!("SELECT id, claim_generation FROM sendjobs_claim({batch}, '{lease}')"), None, &[])
                        .unwrap()
                        .map(|row| (row.get::<i64>(1).unwrap().unwrap(), row.get::<i64>(2).unwrap().unwrap()))
                        .collect::<Vec<_>>()
                });
                let want = model.claim(batch, zero_lease);
                if got != want {
                    return Err(format!("claim returned {got:?}, model {want:?}"));
                }
            }
            Op::Finalize {
                job,
                generation,
                outcome,
                retry_at,
            } => {
                let Some(job) = pick(job) else { return Ok(()) };
                let generation = generation_of(&job, generation);
                let retry_sql = match (outcome, retry_at) {
                    ("retry", RetryAt::At(due)) => due_sql(due),
                    _ => "NULL".into(),
                };
                let got = sut_one::<String>(&format!(
                    "SELECT sendjobs_finalize({}, {generation}, '{outcome}', retry_at => {retry_sql})",
                    job.id
                ));
                let retry_at = if outcome == "retry" {
                    retry_at
                } else {
                    RetryAt::Backoff
                };
                let want = model.finalize(job.id, generation, outcome, retry_at);
                if got != want {
                    return Err(format!(
                        "finalize({}, {generation}, {outcome}) = {got}, model {want}",
                        job.id
                    ));
                }
            }
            Op::FinalizeBatch { ref jobs, outcome } => {
                let mut claims: Vec<(i64, i64)> = Vec::new();
                for &(job, generation) in jobs {
                    let Some(job) = pick(job) else { return Ok(()) };
                    if claims.iter().all(|(id, _)| *id != job.id) {
                        claims.push((job.id, generation_of(&job, generation)));
                    }
                }
                let (ids, generations): (Vec<String>, Vec<String>) = claims
                    .iter()
                    .map(|(id, generation)| (id.to_string(), generation.to_string()))
                    .unzip();
                let got = Spi::connect(|client| {
                    client
                        .select(
                            &format!(
                                "SELECT id, result FROM sendjobs_finalize_batch('{{{}}}', '{{{}}}', '{outcome}')",
                                ids.join(","),
                                generations.join(",")
                            ),
                            None,
                            &[],
                        )
                        .unwrap()
                        .map(|row| (row.get::<i64>(1).unwrap().unwrap(), row.get::<String>(2).unwrap().unwrap()))
                        .collect::<Vec<_>>()
                });
                let want: Vec<(i64, String)> = claims
                    .iter()
                    .map(|&(id, generation)| {
                        (
                            id,
                            model
                                .finalize(id, generation, outcome, RetryAt::Backoff)
                                .to_string(),
                        )
                    })
                    .collect();
                if got != want {
                    return Err(format!(
                        "finalize_batch({claims:?}, {outcome}) = {got:?}, model {want:?}"
                    ));
                }
            }
            Op::Heartbeat {
                job,
                generation,
                zero_lease,
            } => {
                let Some(job) = pick(job) else { return Ok(()) };
                let generation = generation_of(&job, generation);
                let lease = if zero_lease { "0 seconds" } else { "1 hour" };
                let got = sut_one::<String>(&format!(
                    "SELECT sendjobs_heartbeat({}, {generation}, '{lease}')",
                    job.id
                ));
                let capped = model.cap.is_some();
                let current = model.job_mut(job.id);
                // In a capped queue an expired lease is not extended (decision 0013).
                let want = if current.status == "in_flight"
                    && current.generation == generation
                    && !(capped && current.lease_expired)
                {
                    current.lease_expired = zero_lease;
                    "applied"
                } else {
                    "stale"
                };
                if got != want {
                    return Err(format!(
                        "heartbeat({}, {generation}) = {got}, model {want}",
                        job.id
                    ));
                }
            }
            Op::Expire { job } => {
                let Some(job) = pick(job) else { return Ok(()) };
                Spi::run(&format!(
                    "UPDATE send_jobs SET lease_expires_at = lease_expires_at - interval '2 hours'
                      WHERE id = {} AND status = 'in_flight'",
                    job.id
                ))
                .unwrap();
                let current = model.job_mut(job.id);
                if current.status == "in_flight" {
                    current.lease_expired = true;
                }
            }
            Op::MakeDue { job, tick } => {
                let Some(job) = pick(job) else { return Ok(()) };
                Spi::run(&format!(
                    "UPDATE send_jobs SET next_attempt_at = {} WHERE id = {} AND status = 'pending'",
                    due_sql(Due::Tick(tick)),
                    job.id
                ))
                .unwrap();
                let current = model.job_mut(job.id);
                if current.status == "pending" {
                    current.due = Due::Tick(tick);
                }
            }
            Op::Cancel { job } => {
                let Some(job) = pick(job) else { return Ok(()) };
                let got = sut_one::<String>(&format!("SELECT sendjobs_cancel({})", job.id));
                let want = model.cancel(job.id);
                if got != want {
                    return Err(format!("cancel({}) = {got}, model {want}", job.id));
                }
            }
            Op::Redrive { job, tick } => {
                // Only failed jobs can be redriven (anything else is 55000, errors.sql).
                let Some(job) = pick(job).filter(|job| job.status == "failed") else {
                    return Ok(());
                };
                let got = sut_one::<i64>(&format!(
                    "SELECT new_id FROM sendjobs_redrive(ARRAY[{}::int8])",
                    job.id
                ));
                if let Some(&earlier) = model.redriven.get(&job.id) {
                    if got != earlier {
                        return Err(format!(
                            "redrive({}) again = {got}, model {earlier}",
                            job.id
                        ));
                    }
                } else {
                    // The new job is due now; give it a tick, as MakeDue does.
                    Spi::run(&format!(
                        "UPDATE send_jobs SET next_attempt_at = {} WHERE id = {got}",
                        due_sql(Due::Tick(tick))
                    ))
                    .unwrap();
                    model.redriven.insert(job.id, got);
                    // A failed job that stops its key hands it to its new job.
                    for stopping in model.blocked.values_mut() {
                        if *stopping == job.id {
                            *stopping = got;
                        }
                    }
                    model.jobs.push(Job {
                        id: got,
                        status: "pending",
                        attempts: 0,
                        max_attempts: job.max_attempts,
                        generation: 0,
                        due: Due::Tick(tick),
                        lease_expired: false,
                        transaction: job.transaction.clone(),
                        event: None,
                        order: job.order,
                        priority: job.priority,
                    });
                    if let Some(transaction) = &job.transaction {
                        model.guarded_update(transaction, "pending");
                    }
                }
            }
            Op::Purge => {
                let got = sut_one::<i64>("SELECT sendjobs_purge('0 seconds', 100)");
                let want = model.purge();
                if got != want {
                    return Err(format!("purge = {got}, model {want}"));
                }
            }
            Op::BlockKeys(block) => {
                Spi::run(&format!("SELECT sendjobs_block_keys('default', {block})")).unwrap();
                model.block_keys = block;
            }
            Op::Unblock { order } => {
                let got = sut_one::<bool>(&format!("SELECT sendjobs_unblock_key('order-{order}')"));
                let want = model.blocked.remove(&order).is_some_and(|id| {
                    model.jobs.iter().any(|job| {
                        job.id == id && matches!(job.status, "pending" | "in_flight" | "failed")
                    })
                });
                if got != want {
                    return Err(format!("unblock_key(order-{order}) = {got}, model {want}"));
                }
            }
            Op::SetBusiness { job, status } => {
                let Some(transaction) = pick(job).and_then(|job| job.transaction) else {
                    return Ok(());
                };
                Spi::run(&format!(
                    "UPDATE model_txn SET status = '{status}' WHERE id = '{transaction}'"
                ))
                .unwrap();
                model.guarded_update(&transaction, status);
            }
        }
        let (jobs, business) = observed();
        if jobs != model.jobs {
            return Err(format!(
                "jobs differ\n  extension: {jobs:?}\n  model:     {:?}",
                model.jobs
            ));
        }
        if business != model.business {
            return Err(format!(
                "business rows differ\n  extension: {business:?}\n  model:     {:?}",
                model.business
            ));
        }
        Ok(())
    }

    fn run_case(ops: &[Op]) -> Result<(), String> {
        let mut model = Model::default();
        for (index, op) in ops.iter().enumerate() {
            step(&mut model, op, index)
                .map_err(|divergence| format!("step {index} {op:?}: {divergence}"))?;
        }
        Ok(())
    }

    /// Runs `f` in a subtransaction that is then rolled back, whatever happened inside.
    fn model_cases() -> u32 {
        std::env::var("SENDJOBS_MODEL_CASES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(2000)
    }

    #[pg_test]
    fn the_extension_matches_the_reference_model() {
        one_at_a_time();
        Spi::run(
            "CREATE TABLE model_txn (id text PRIMARY KEY, status text NOT NULL);
             SELECT sendjobs_guard_terminal('model_txn');
             SELECT sendjobs_link_transactions('model_txn');
             SET LOCAL client_min_messages = error;",
        )
        .unwrap();
        check_sequences(
            model_cases(),
            proptest::collection::vec(op(), 1..40),
            |ops| run_case(ops),
            "the extension diverged from the model",
        );
    }
}
