//! sendjobs_claim: take up to `batch` due jobs under a lease, in one statement.

use std::panic::AssertUnwindSafe;

use pgrx::datum::Timestamp;
use pgrx::prelude::*;
use pgrx::spi::SpiClient;

use crate::clock::wall_clock;
use crate::config;
use crate::errors::{or_raise, required, Result, SendJobsError};
use crate::fence::lease_or_default;
use crate::flow::{self, Lock};
use crate::spi_plans::{queue_relation_oids, Planning};
use crate::stamp::{Stamp, TransactionLink};
use crate::statements::{statement, Statement};
use crate::subtransaction::try_step;
use crate::turns;
use crate::wakeup;

// Two statements, not one with `($4 IS NULL OR queue = $4)`: each keeps its own index
// under a generic plan (sql/statements/claim.sql).
pub(crate) static CLAIM_ANY_QUEUE: Statement = statement!("claim.sql", "any_queue");
static CLAIM_ONE_QUEUE: Statement = statement!("claim.sql", "one_queue");
// Every queue (or the queue named) but those with flow control, each row checked
// against the settings (also the first pass when the list of limited queues may be
// stale: src/flow.rs); one queue with flow control, its settings locked by this claim.
pub(crate) static CLAIM_OTHER_QUEUES: Statement = statement!("claim.sql", "other_queues");
static CLAIM_LIMITED_QUEUE: Statement = statement!("claim.sql", "limited_queue");
// Ordered jobs, after the turn of such claims (src/turns.rs).
static CLAIM_KEYED: Statement = statement!("claim.sql", "keyed");
// Jobs that gave up, finished as failed under the claim's row locks.
static GIVE_UP: Statement = statement!("give_up.sql");
static UNSTAMPED_NOTE: Statement = statement!("unstamped_note.sql");

/// Claims up to `batch` jobs: pending ones that are due, and in_flight ones whose lease
/// (as their own claimer asked for it) has expired. Returns the rows as updated; keep
/// `id` and `claim_generation` to finalize or heartbeat.
#[pg_extern(volatile, parallel_unsafe)]
fn sendjobs_claim(
    batch: default!(Option<i32>, 1),
    lease: default!(Option<Interval>, "NULL"),
    queue: default!(Option<&str>, "NULL"),
) -> SetOfIterator<'static, pgrx::composite_type!('static, "send_jobs")> {
    SetOfIterator::new(or_raise(claim(batch, lease, queue)))
}

/// A send_jobs row (the composite pgrx reads and returns).
type Job = pgrx::composite_type!('static, "send_jobs");

fn claim(batch: Option<i32>, lease: Option<Interval>, queue: Option<&str>) -> Result<Vec<Job>> {
    let batch = required(batch, "batch")?;
    let max = config::max_batch();
    if !(1..=max).contains(&batch) {
        return Err(SendJobsError::BatchOutOfRange { got: batch, max });
    }
    let lease = lease_or_default(lease)?;
    let now = wall_clock();

    Spi::connect_mut(|client| {
        let batch = usize::try_from(batch).unwrap_or(1);
        let mut claimed = Vec::with_capacity(batch);
        // Flow control is in use where this claim would take from (src/flow.rs keeps the
        // list): the queues without it first, then from each queue with it what its
        // settings allow, under its lock. A claim from one queue waits for that queue's
        // lock (and takes its ordered jobs under it); a claim from any queue locks them
        // in name order, skipping one that another claim holds (so two such claims never
        // wait on each other).
        let limited = flow::limited_queues(client)?;
        // The first pass's variant, and its $5 (read by other_queues alone).
        let first = match queue {
            Some(queue) if limited.queues.iter().any(|q| q == queue) => None,
            Some(_) if limited.exact() => Some((&CLAIM_ONE_QUEUE, None, Planning::Generic)),
            None if limited.exact() && limited.queues.is_empty() => {
                Some((&CLAIM_ANY_QUEUE, None, Planning::Generic))
            }
            // A list of limited queues that may have changed (limited_queues says when):
            // every row the pass takes is checked against the settings in its snapshot.
            _ => Some((
                &CLAIM_OTHER_QUEUES,
                Some(limited.queues.clone()),
                Planning::ForTheValues,
            )),
        };
        let mut gave_up = Vec::new();
        let keyed = match first {
            Some((claim, other_than, planning)) => {
                let round = Round {
                    claim,
                    queue,
                    other_than,
                    planning,
                };
                claim_rounds(
                    client,
                    &round,
                    batch,
                    now,
                    lease,
                    &mut claimed,
                    &mut gave_up,
                )?
                .keyed
            }
            None => false,
        };
        // The jobs that gave up are stamped once the settings lock is released: a stamp
        // runs the linked table's code and may wait on its rows.
        flow::first_pass_done(&limited);
        finish_gave_up(client, &mut gave_up)?;
        let (queues, lock) = match queue {
            Some(_) => (
                limited
                    .queues
                    .into_iter()
                    .filter(|q| Some(q.as_str()) == queue)
                    .collect(),
                Lock::Wait,
            ),
            None => (limited.queues, Lock::Skip),
        };
        // Ordered jobs, left by the passes above: after the turn of such claims, in a
        // snapshot that sees every one that committed (src/turns.rs).
        if keyed && claimed.len() < batch {
            in_read_committed(|| "ordered jobs".into())?;
            turns::take_keyed_turn(queue_relation_oids(client)?.0);
            let round = Round {
                claim: &CLAIM_KEYED,
                queue,
                other_than: (!queues.is_empty()).then(|| queues.clone()),
                planning: Planning::Generic,
            };
            claim_rounds(
                client,
                &round,
                batch,
                wall_clock(),
                lease,
                &mut claimed,
                &mut gave_up,
            )?;
            finish_gave_up(client, &mut gave_up)?;
        }
        for queue in queues {
            let wanted = batch - claimed.len();
            if wanted == 0 {
                break;
            }
            in_read_committed(|| format!("queue {queue:?}"))?;
            let Some(allowance) = flow::allowance(client, &queue, wanted, lock)? else {
                continue;
            };
            if allowance.jobs == 0 {
                continue;
            }
            let before = claimed.len();
            let round = Round {
                claim: &CLAIM_LIMITED_QUEUE,
                queue: Some(&queue),
                other_than: None,
                planning: Planning::Generic,
            };
            claim_rounds(
                client,
                &round,
                before + allowance.jobs,
                allowance.now,
                lease,
                &mut claimed,
                &mut gave_up,
            )?;
            finish_gave_up(client, &mut gave_up)?;
            flow::spend(client, &queue, &allowance, claimed.len() - before)?;
        }
        Ok(claimed)
    })
}

/// A claim that takes a turn (a limited queue's lock, the turn of ordered jobs) counts
/// what the claims before it did in a snapshot taken after the turn; REPEATABLE READ and
/// SERIALIZABLE keep the transaction's first snapshot, which may predate them (a cap of 1
/// gave 2 jobs in flight: flow.sql), so such a claim is refused there.
/// `what` names the claim in the error only (no allocation on the hot path).
fn in_read_committed(what: impl FnOnce() -> String) -> Result<()> {
    if !flow::read_committed() {
        return Err(SendJobsError::TurnNeedsReadCommitted(what()));
    }
    Ok(())
}

/// One variant of the claim statement with what it claims from (claim.sql).
struct Round<'a> {
    claim: &'a Statement,
    queue: Option<&'a str>,
    other_than: Option<Vec<String>>,
    planning: Planning,
}

/// What a pass of the claim left to others (its last row, claim.sql).
#[derive(Default)]
struct Left {
    /// Pending ordered jobs, for the pass that takes them.
    keyed: bool,
}

/// Runs a round's claim until `claimed` holds `batch` jobs or a round gives up on
/// nothing: jobs that gave up took places in a round, so the next one claims again for
/// those places. Each round finishes the jobs it gave up on (give_up.sql: they leave
/// send_jobs), so the loop ends; their business rows are the caller's to stamp
/// (`finish_gave_up`). Returns what the statement left to other passes.
fn claim_rounds(
    client: &mut SpiClient<'_>,
    round: &Round<'_>,
    batch: usize,
    now: TimestampWithTimeZone,
    lease: Interval,
    claimed: &mut Vec<Job>,
    gave_up: &mut Vec<(Option<i64>, Option<String>)>,
) -> Result<Left> {
    let mut left = Left::default();
    loop {
        let wanted = (batch - claimed.len()) as i64;
        let rows = round.claim.run_planned(
            client,
            &[
                now.into(),
                wanted.into(),
                lease.into(),
                round.queue.into(),
                round.other_than.clone().into(),
            ],
            round.planning,
        )?;
        let [job, gave_up_flag, id, claim_order, keyed] =
            ["job", "gave_up", "id", "claim_order", "keyed"].map(|c| round.claim.ordinal(c));
        let mut jobs = Vec::with_capacity(rows.len());
        let mut giving_up = Vec::new();
        for row in rows {
            // Almost every row is a claimed job, the flags only on the rows without one.
            if let Some(job) = row.get::<Job>(job)? {
                let order = row
                    .get::<Timestamp>(claim_order)?
                    .map(Timestamp::into_inner);
                jobs.push(((order, row.get::<i64>(id)?), job));
            } else if row.get::<bool>(gave_up_flag)? == Some(true) {
                giving_up.extend(row.get::<i64>(id)?);
            } else if row.get::<bool>(keyed)? == Some(true) {
                left.keyed = true;
            } else {
                return Err(SendJobsError::Internal(
                    "claim returned a row with neither a job nor a flag".into(),
                ));
            }
        }
        // In claim order (the statement leaves it to us: a sort node of its own cost a
        // claim of one job 3% of its instructions).
        jobs.sort_unstable_by_key(|(order, _)| *order);
        claimed.extend(jobs.into_iter().map(|(_, job)| job));
        let finished = give_up(client, giving_up, now, gave_up)?;
        if finished == 0 || claimed.len() == batch {
            return Ok(left);
        }
    }
}

/// Finishes as failed the jobs a claim found with every attempt used under an expired
/// lease, which that claim still holds locked (give_up.sql). Returns how many finished.
fn give_up(
    client: &mut SpiClient<'_>,
    ids: Vec<i64>,
    now: TimestampWithTimeZone,
    gave_up: &mut Vec<(Option<i64>, Option<String>)>,
) -> Result<usize> {
    if ids.is_empty() {
        return Ok(0);
    }
    let before = gave_up.len();
    let mut failed_keys = Vec::new();
    for row in GIVE_UP.run(client, &[ids.into(), now.into()])? {
        let id = row.get_by_name::<i64, _>("id")?;
        if let (Some(id), Some(key), Some(queue)) = (
            id,
            row.get_by_name::<String, _>("ordering_key")?,
            row.get_by_name::<String, _>("queue")?,
        ) {
            failed_keys.push((key, id, queue));
        }
        gave_up.push((id, row.get_by_name::<String, _>("transaction_id")?));
    }
    flow::stop_failed_keys(client, failed_keys)?;
    Ok(gave_up.len() - before)
}

/// Stamps the business rows of the jobs that gave up, and wakes what their finish frees.
fn finish_gave_up(
    client: &mut SpiClient<'_>,
    gave_up: &mut Vec<(Option<i64>, Option<String>)>,
) -> Result<()> {
    if gave_up.is_empty() {
        return Ok(());
    }
    stamp_gave_up(client, gave_up)?;
    wakeup::after_finish(client, None)?;
    gave_up.clear();
    Ok(())
}

/// Stamps the business rows of jobs that gave up as failed, each in a subtransaction: a
/// stamp that fails (a guard in `error` mode, a renamed column, no right to the table) is
/// what may have kept such a job from finishing, so it must not keep it alive now. The
/// job stays failed, with the reason in `last_error` and a WARNING.
fn stamp_gave_up(client: &mut SpiClient<'_>, jobs: &[(Option<i64>, Option<String>)]) -> Result<()> {
    let linked: Vec<_> = jobs
        .iter()
        .filter_map(|(id, transaction_id)| Some(((*id)?, transaction_id.as_deref()?)))
        .collect();
    if linked.is_empty() {
        return Ok(());
    }
    let mut failures = Vec::new();
    match TransactionLink::current(client) {
        Ok(None) => {}
        Ok(Some(link)) => {
            for &(id, transaction_id) in &linked {
                let stamped = try_step(AssertUnwindSafe(|| {
                    link.stamp(client, Stamp::Failed, transaction_id)
                }));
                if let Err(message) = stamped {
                    failures.push((id, message));
                }
            }
        }
        Err(error) => {
            let message = error.to_string();
            failures.extend(linked.iter().map(|&(id, _)| (id, message.clone())));
        }
    }
    if failures.is_empty() {
        return Ok(());
    }
    for (id, message) in failures {
        SendJobsError::Internal(format!(
            "job {id} gave up, but its business row was not stamped: {message}"
        ))
        .warn();
        UNSTAMPED_NOTE.run(client, &[id.into(), message.as_str().into()])?;
    }
    Ok(())
}
