//! sendjobs_finalize and sendjobs_heartbeat: fenced by (status = in_flight, claim_generation).

use std::str::FromStr;

use pgrx::prelude::*;
use pgrx::spi::SpiClient;

use crate::flow::blocked_keys;
use crate::flow::key_waits;
use crate::flow::limited;
use crate::flow::turns;
use crate::guards::fence::{fenced_generation, lease_or_default, stale_or_unknown, APPLIED, STALE};
use crate::guards::stamp::{stamp_each, Stamp};
use crate::machinery::clock::wall_clock;
use crate::machinery::config;
use crate::machinery::errors::{distinct_id, finite, or_raise, required, Result, SendJobsError};
use crate::machinery::statements::{statement, Statement};
use crate::machinery::wakeup;

// A batch of one (every sendjobs_finalize) skips the unnest and its join; the terminal
// statement moves jobs to send_jobs_finished, the retry statement puts them back.
pub(crate) static FINALIZE_BATCH: Statement = statement!("finalize.sql", "batch");
pub(crate) static FINALIZE_ONE: Statement = statement!("finalize.sql", "one");
pub(crate) static FINALIZE_BATCH_RETRY: Statement = statement!("finalize.sql", "batch_retry");
pub(crate) static FINALIZE_ONE_RETRY: Statement = statement!("finalize.sql", "one_retry");
static FINALIZE_UNAPPLIED: Statement = statement!("finalize_unapplied.sql");
static HEARTBEAT: Statement = statement!("heartbeat.sql");
static HEARTBEAT_QUEUE_LOCK: Statement = statement!("heartbeat_queue_lock.sql");

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Sent,
    Failed,
    Retry,
}

impl FromStr for Outcome {
    type Err = SendJobsError;

    fn from_str(text: &str) -> Result<Self> {
        match text {
            "sent" => Ok(Self::Sent),
            "failed" => Ok(Self::Failed),
            "retry" => Ok(Self::Retry),
            other => Err(SendJobsError::UnknownOutcome(other.to_owned())),
        }
    }
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Self::Sent => "sent",
            Self::Failed => "failed",
            Self::Retry => "retry",
        }
    }
}

/// Records the outcome of the claim `(id, generation)`: `applied` when that claim is
/// still the current one of an in_flight job (or when this very finalize of it was
/// already applied: a repeat), otherwise `stale` and nothing changes.
#[pg_extern(volatile, parallel_unsafe)]
fn sendjobs_finalize(
    id: Option<i64>,
    generation: Option<i64>,
    outcome: Option<&str>,
    error: default!(Option<&str>, "NULL"),
    retry_at: default!(Option<TimestampWithTimeZone>, "NULL"),
) -> &'static str {
    let claim = required(id, "id").and_then(|id| Ok((id, fenced_generation(generation)?)));
    let answers = or_raise(claim.and_then(|claim| finalize(&[claim], outcome, error, retry_at)));
    answers.first().map_or(STALE, Answer::result)
}

/// `sendjobs_finalize` for many claims in one call: `ids[i]` with `generations[i]`, each
/// fenced on its own, all with one outcome. Returns one row per claim, in input order:
/// `applied` or `stale`, what the job is now and its attempts, and whether the claim had
/// already been finalized so (`repeated`: this call changed nothing).
#[pg_extern(volatile, parallel_unsafe)]
fn sendjobs_finalize_batch(
    ids: Option<Vec<Option<i64>>>,
    generations: Option<Vec<Option<i64>>>,
    outcome: Option<&str>,
    error: default!(Option<&str>, "NULL"),
    retry_at: default!(Option<TimestampWithTimeZone>, "NULL"),
) -> TableIterator<
    'static,
    (
        name!(id, i64),
        name!(result, &'static str),
        name!(status, String),
        name!(attempts, i32),
        name!(repeated, bool),
    ),
> {
    let answers = or_raise(
        batch_claims(ids, generations)
            .and_then(|claims| finalize(&claims, outcome, error, retry_at)),
    );
    TableIterator::new(answers.into_iter().map(|answer| {
        (
            answer.id,
            answer.result(),
            answer.status,
            answer.attempts,
            answer.repeated,
        )
    }))
}

/// What a finalize did to one claim (docs/decisions/0012-answers-that-say-what-happened.md).
#[derive(Clone)]
struct Answer {
    id: i64,
    /// It applied now, or had applied before (`repeated`).
    applied: bool,
    /// The job's status after the call: `sent`, `failed`, `pending` (retried) for an
    /// applied one; whatever the job is now for a stale one.
    status: String,
    /// The job's attempts after the call (an applied one: the attempt its claim was).
    attempts: i32,
    /// This claim had already been finalized with this outcome; nothing changed now.
    repeated: bool,
}

impl Answer {
    fn result(&self) -> &'static str {
        if self.applied {
            APPLIED
        } else {
            STALE
        }
    }
}

/// Pairs up the ids and generations of a batch, refusing NULLs, mismatched lengths and
/// repeated ids (one call may finalize a job once).
fn batch_claims(
    ids: Option<Vec<Option<i64>>>,
    generations: Option<Vec<Option<i64>>>,
) -> Result<Vec<(i64, i64)>> {
    let ids = required(ids, "ids")?;
    let generations = required(generations, "generations")?;
    if ids.len() != generations.len() {
        return Err(SendJobsError::InvalidArgument(format!(
            "ids and generations must have the same length, got {} and {}",
            ids.len(),
            generations.len()
        )));
    }
    let mut seen = std::collections::HashSet::with_capacity(ids.len());
    ids.into_iter()
        .zip(generations)
        .map(|(id, generation)| {
            let generation = required(generation, "an element of generations")?;
            Ok((
                distinct_id(id, &mut seen)?,
                fenced_generation(Some(generation))?,
            ))
        })
        .collect()
}

fn finalize(
    claims: &[(i64, i64)],
    outcome: Option<&str>,
    error: Option<&str>,
    retry_at: Option<TimestampWithTimeZone>,
) -> Result<Vec<Answer>> {
    let outcome: Outcome = required(outcome, "outcome")?.parse()?;
    if retry_at.is_some() && outcome != Outcome::Retry {
        return Err(SendJobsError::InvalidArgument(
            "retry_at is only accepted with outcome 'retry'".into(),
        ));
    }
    if let Some(retry_at) = retry_at {
        finite(retry_at, "retry_at")?;
    }
    if error.is_some() && outcome == Outcome::Sent {
        return Err(SendJobsError::InvalidArgument(
            "error is only accepted with outcome 'failed' or 'retry'".into(),
        ));
    }
    if claims.is_empty() {
        return Ok(Vec::new());
    }
    let now = wall_clock();
    let pass = Pass {
        outcome,
        now,
        retry_at,
        error,
    };

    Spi::connect_mut(|client| {
        // One slot per claim, in input order; None for a claim that did not apply.
        let mut answers: Vec<Option<Answer>> = vec![None; claims.len()];
        let mut finished = Finished {
            limited: limited::known_limited_queues(client)?,
            ..Finished::default()
        };
        // A retry puts the jobs with attempts left back (retried); those on their last
        // attempt fail, by the terminal statement, run only when there are any.
        let first = match outcome {
            Outcome::Retry => Variant::Retry,
            Outcome::Sent | Outcome::Failed => Variant::Terminal,
        };
        pass.run(client, first, claims, &mut answers, &mut finished)?;
        if outcome == Outcome::Retry && answers.iter().any(Option::is_none) {
            pass.run(
                client,
                Variant::Terminal,
                claims,
                &mut answers,
                &mut finished,
            )?;
        }
        let unapplied: Vec<(i64, i64)> = claims
            .iter()
            .zip(&answers)
            .filter_map(|(claim, answer)| answer.is_none().then_some(*claim))
            .collect();
        let mut looked_up = unapplied_answers(client, &unapplied, outcome)?.into_iter();
        let answers = answers
            .into_iter()
            .map(|answer| answer.or_else(|| looked_up.next()))
            .collect::<Option<Vec<Answer>>>()
            .ok_or_else(|| {
                SendJobsError::Internal("a claim that did not apply was not looked up".into())
            })?;
        blocked_keys::stop_failed_keys(client, std::mem::take(&mut finished.failed_keys))?;
        key_waits::clear(client, std::mem::take(&mut finished.keys))?;
        // In the call's order, as the claims were given.
        finished.to_stamp.sort_by_key(|(slot, _)| *slot);
        let to_stamp: Vec<(Stamp, String)> = finished
            .to_stamp
            .into_iter()
            .map(|(_, stamp)| stamp)
            .collect();
        stamp_each(client, &to_stamp)?;
        if finished.readers.is_some() {
            wakeup::after_finish(client, finished.readers)?;
        }
        for queue in &finished.freed {
            limited::wake_when_freed(client, queue)?;
        }
        Ok(answers)
    })
}

/// Which statement of finalize.sql a pass runs.
#[derive(Clone, Copy)]
enum Variant {
    /// Jobs move to send_jobs_finished: sent, failed, or a retry on its last attempt.
    Terminal,
    /// A retry with attempts left: the job is pending again.
    Retry,
}

/// What one finalize call passes to each of its statements.
struct Pass<'a> {
    outcome: Outcome,
    now: TimestampWithTimeZone,
    retry_at: Option<TimestampWithTimeZone>,
    error: Option<&'a str>,
}

/// What the applied claims of a call leave to do after its statements.
#[derive(Default)]
struct Finished {
    /// The business rows to stamp, each with its claim's place in the call.
    to_stamp: Vec<(usize, (Stamp, String))>,
    /// Whether the outbox has consumers to wake, once a claim finished its job (the
    /// statement says it on every row).
    readers: Option<bool>,
    /// The queues with flow control (mostly none), and those of them a job of this call
    /// left in flight in (a place came free).
    limited: Vec<String>,
    freed: Vec<String>,
    /// The jobs with an ordering key that failed for good (their key may stop).
    failed_keys: Vec<blocked_keys::FailedKey>,
    /// The ordering keys of the jobs finished or retried: the jobs that waited for them
    /// may be free now (src/flow/key_waits.rs).
    keys: Vec<String>,
}

impl Pass<'_> {
    /// Runs `variant` for the claims whose answer is still None, and fills in the answers
    /// of those it applied.
    fn run(
        &self,
        client: &SpiClient<'_>,
        variant: Variant,
        claims: &[(i64, i64)],
        answers: &mut [Option<Answer>],
        finished: &mut Finished,
    ) -> Result<()> {
        let slots: Vec<usize> = (0..claims.len())
            .filter(|&i| answers[i].is_none())
            .collect();
        let (ids, generations): (Vec<i64>, Vec<i64>) = slots.iter().map(|&i| claims[i]).unzip();
        let statement = match (variant, slots.len() == 1) {
            (Variant::Terminal, true) => &FINALIZE_ONE,
            (Variant::Terminal, false) => &FINALIZE_BATCH,
            (Variant::Retry, true) => &FINALIZE_ONE_RETRY,
            (Variant::Retry, false) => &FINALIZE_BATCH_RETRY,
        };
        let rows = statement.run(
            client,
            &[
                ids.into(),
                generations.into(),
                self.outcome.as_str().into(),
                self.now.into(),
                self.retry_at.into(),
                f64::from(config::retry_backoff_base_ms()).into(),
                f64::from(config::retry_backoff_max_ms()).into(),
                self.error.into(),
            ],
        )?;
        let [id_column, status_column, attempts_column, transaction_column, readers_column, queue_column, key_column] =
            [
                "id",
                "status",
                "attempts",
                "transaction_id",
                "readers",
                "queue",
                "ordering_key",
            ]
            .map(|column| statement.ordinal(column));
        // A row for each claim it applied, in no particular order: each to its claim's
        // slot (the ids of a call are distinct).
        let slot_of: std::collections::HashMap<i64, usize> =
            slots.iter().map(|&slot| (claims[slot].0, slot)).collect();
        for row in rows {
            let id = row.get::<i64>(id_column)?.unwrap_or_default();
            let (Some(&slot), Some(status)) = (slot_of.get(&id), row.get::<String>(status_column)?)
            else {
                return Err(SendJobsError::Internal(format!(
                    "finalize returned a row for job {id}, which it was not given"
                )));
            };
            if !finished.limited.is_empty() {
                if let Some(queue) = row.get::<String>(queue_column)? {
                    if finished.limited.contains(&queue) && !finished.freed.contains(&queue) {
                        finished.freed.push(queue);
                    }
                }
            }
            if let Some(key) = row.get::<String>(key_column)? {
                if status == "failed" {
                    if let Some(queue) = row.get::<String>(queue_column)? {
                        finished
                            .failed_keys
                            .push((key.clone(), claims[slot].0, queue));
                    }
                }
                finished.keys.push(key);
            }
            let stamp = Stamp::of_status(&status);
            if stamp.is_some() && finished.readers.is_none() {
                finished.readers = Some(row.get::<bool>(readers_column)? == Some(true));
            }
            if let (Some(transaction_id), Some(stamp)) =
                (row.get::<String>(transaction_column)?, stamp)
            {
                finished.to_stamp.push((slot, (stamp, transaction_id)));
            }
            let attempts = row.get::<i32>(attempts_column)?.unwrap_or_default();
            answers[slot] = Some(Answer {
                id: claims[slot].0,
                applied: true,
                status,
                attempts,
                repeated: false,
            });
        }
        Ok(())
    }
}

/// The answers of the claims whose finish did not apply, in their order: a repeat of an
/// applied finalize (`applied`, `repeated`), or `stale`; an unknown id fails the call.
fn unapplied_answers(
    client: &SpiClient<'_>,
    claims: &[(i64, i64)],
    outcome: Outcome,
) -> Result<Vec<Answer>> {
    if claims.is_empty() {
        return Ok(Vec::new());
    }
    let (ids, generations): (Vec<i64>, Vec<i64>) = claims.iter().copied().unzip();
    let rows = FINALIZE_UNAPPLIED.run(
        client,
        &[ids.into(), generations.into(), outcome.as_str().into()],
    )?;
    rows.into_iter()
        .map(|row| {
            let id = row.get_by_name::<i64, _>("id")?.unwrap_or_default();
            let (Some(status), Some(attempts)) = (
                row.get_by_name::<String, _>("status")?,
                row.get_by_name::<i32, _>("attempts")?,
            ) else {
                return Err(SendJobsError::UnknownJob(id));
            };
            let repeated = row.get_by_name::<bool, _>("repeated")? == Some(true);
            Ok(Answer {
                id,
                applied: repeated,
                status,
                attempts,
                repeated,
            })
        })
        .collect()
}

/// Extends the lease of the claim `(id, generation)` to `now + lease`: `applied` while
/// that claim is current, `stale` when the worker has lost the job and must stop.
#[pg_extern(volatile, parallel_unsafe)]
fn sendjobs_heartbeat(
    id: Option<i64>,
    generation: Option<i64>,
    lease: default!(Option<Interval>, "NULL"),
) -> &'static str {
    or_raise(heartbeat(id, generation, lease))
}

fn heartbeat(
    id: Option<i64>,
    generation: Option<i64>,
    lease: Option<Interval>,
) -> Result<&'static str> {
    let id = required(id, "id")?;
    let generation = fenced_generation(generation)?;
    let lease = lease_or_default(lease)?;
    let now = wall_clock();

    Spi::connect_mut(|client| {
        // A capped queue's heartbeat takes its turn with the queue's claims, and reads
        // the clock after it (heartbeat_queue_lock.sql); under REPEATABLE READ the cap as
        // committed now, not in the snapshot (decision 0017).
        let capped = if turns::read_committed() {
            !HEARTBEAT_QUEUE_LOCK.run(client, &[id.into()])?.is_empty()
        } else {
            !HEARTBEAT_QUEUE_LOCK
                .run_now(client, &[id.into()])?
                .is_empty()
        };
        let now = if capped { wall_clock() } else { now };
        let extended = HEARTBEAT.run(
            client,
            &[
                id.into(),
                generation.into(),
                now.into(),
                lease.into(),
                capped.into(),
            ],
        )?;
        if extended.is_empty() {
            return stale_or_unknown(client, id);
        }
        Ok(APPLIED)
    })
}
