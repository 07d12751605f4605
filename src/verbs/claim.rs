//! sendjobs_claim: take up to `batch` due jobs under a lease, in one statement.

use std::panic::AssertUnwindSafe;

use pgrx::datum::Timestamp;
use pgrx::prelude::*;
use pgrx::spi::SpiClient;

use crate::flow::allowance::{self, Lock};
use crate::flow::blocked_keys;
use crate::flow::fair_share;
use crate::flow::key_waits;
use crate::flow::limited;
use crate::flow::turns;
use crate::guards::fence::{generation_floor, lease_or_default};
use crate::guards::stamp::{Stamp, TransactionLink};
use crate::machinery::clock::wall_clock;
use crate::machinery::config;
use crate::machinery::errors::{or_raise, required, Result, SendJobsError};
use crate::machinery::spi_plans::{queue_relation_oids, Planning};
use crate::machinery::statements::{statement, Statement};
use crate::machinery::subtransaction::try_step;
use crate::machinery::wakeup;

// A claim from one queue: without flow control there, or (other_queues) when the list
// of limited queues may be stale, each row then checked against the settings
// (sql/statements/claim.sql); a queue with flow control, its settings locked by this
// claim (limited_queue).
pub(crate) static CLAIM_ONE_QUEUE: Statement = statement!("claim.sql", "one_queue");
// A claim from any queue while one queue alone has pending jobs (src/flow/fair_share.rs).
pub(crate) static CLAIM_ONLY_QUEUE: Statement = statement!("claim.sql", "only_queue");
pub(crate) static CLAIM_OTHER_QUEUES: Statement = statement!("claim.sql", "other_queues");
static CLAIM_LIMITED_QUEUE: Statement = statement!("claim.sql", "limited_queue");
// A claim from any queue: each queue its share (src/flow/fair_share.rs), under the settings
// lock (exact) or checking each row against the settings (checked).
pub(crate) static CLAIM_SHARES_EXACT: Statement = statement!("claim_shares.sql", "exact");
pub(crate) static CLAIM_SHARES_CHECKED: Statement = statement!("claim_shares.sql", "checked");
// Ordered jobs in the places the other passes left in their queues, after the turn of
// such claims (src/flow/turns.rs).
pub(crate) static CLAIM_KEYED: Statement = statement!("claim_keyed.sql");
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

/// Jobs that gave up: their ids and transaction ids, for their stamps.
type GaveUp = Vec<(Option<i64>, Option<String>)>;

fn claim(batch: Option<i32>, lease: Option<Interval>, queue: Option<&str>) -> Result<Vec<Job>> {
    let batch = required(batch, "batch")?;
    let max = config::max_batch();
    if !(1..=max).contains(&batch) {
        return Err(SendJobsError::BatchOutOfRange { got: batch, max });
    }
    let lease = lease_or_default(lease)?;
    let now = wall_clock();
    let batch = usize::try_from(batch).unwrap_or(1);

    Spi::connect_mut(|client| {
        // Flow control is in use where this claim would take from (src/flow/limited.rs
        // keeps the list): the queues without it in one statement, then from each queue
        // with it what its settings allow, under its lock.
        let limited = limited::limited_queues(client)?;
        match queue {
            Some(queue) => claim_one_queue(client, queue, batch, now, lease, limited),
            None => claim_any_queue(client, batch, now, lease, limited),
        }
    })
}

/// A claim from `queue`: it waits for the queue's lock if the queue has flow control
/// (and takes its ordered jobs under it).
fn claim_one_queue(
    client: &mut SpiClient<'_>,
    queue: &str,
    batch: usize,
    now: TimestampWithTimeZone,
    lease: Interval,
    mut limited: limited::Limited,
) -> Result<Vec<Job>> {
    let mut claimed = Vec::with_capacity(batch);
    let mut gave_up = Vec::new();
    let is_limited = limited.queues.iter().any(|q| q == queue);
    let mut keyed = false;
    if !is_limited {
        let round = if limited.exact() {
            Round {
                claim: &CLAIM_ONE_QUEUE,
                queue: Some(queue),
                planning: Planning::IndexOrdered,
            }
        } else {
            // A list of limited queues that may have changed (limited_queues says when):
            // every row the pass takes is checked against the settings in its snapshot.
            Round {
                claim: &CLAIM_OTHER_QUEUES,
                queue: Some(queue),
                planning: Planning::ForTheValues,
            }
        };
        keyed = claim_rounds(
            client,
            &round,
            batch,
            now,
            lease,
            &mut claimed,
            &mut gave_up,
        )?
        .keyed;
    }
    // The jobs that gave up are stamped once the settings lock is released: a stamp
    // runs the linked table's code and may wait on its rows.
    limited::first_pass_done(&mut limited);
    finish_gave_up(client, &mut gave_up)?;
    if keyed && claimed.len() < batch {
        in_read_committed(|| "ordered jobs".into())?;
        let places = batch - claimed.len();
        claim_keyed(client, &[(queue.to_owned(), places)], lease, &mut claimed)?;
    }
    if is_limited {
        claim_limited(
            client,
            queue,
            batch,
            Lock::Wait,
            lease,
            &mut claimed,
            &mut gave_up,
        )?;
    }
    Ok(claimed)
}

/// A claim from any queue serves the queues with due jobs in turn, each its share of the
/// batch (src/flow/fair_share.rs; decision 0019): first their jobs without a key, in one
/// statement under the settings lock, places kept for the limited queues the turn reaches,
/// and the places a queue left to its ordered jobs (claim_keyed.sql); then the limited
/// queues reached, each under its lock (skipped when another claim holds it, so two such
/// claims never wait on each other); and the places they left go round again. Under
/// REPEATABLE READ and SERIALIZABLE, where the turn of a limited queue is refused, the
/// limited queues are left to the end (as before 0.4.0), and so are ordered jobs.
fn claim_any_queue(
    client: &mut SpiClient<'_>,
    batch: usize,
    now: TimestampWithTimeZone,
    lease: Interval,
    mut limited: limited::Limited,
) -> Result<Vec<Job>> {
    let mut claimed = Vec::with_capacity(batch);
    let mut gave_up = Vec::new();
    let keep_places = turns::read_committed();
    let limited_queues = limited.queues.clone();
    let mut turn = Turn {
        limited: &limited_queues,
        passed: if keep_places {
            limited.paused.clone()
        } else {
            limited.queues.clone()
        },
        kept: Vec::new(),
        keyed_left: false,
    };
    let mut statement = if limited.exact() {
        &CLAIM_SHARES_EXACT
    } else {
        &CLAIM_SHARES_CHECKED
    };
    let mut tried = Vec::new();
    // One queue alone with pending jobs, as this backend last saw: claimed in one pass
    // without the walk, while that holds (claim.sql's only_queue checks it).
    let mut alone = false;
    if let (true, true, Some(only)) = (
        limited.exact(),
        limited.queues.is_empty(),
        fair_share::only_queue(),
    ) {
        let round = Round {
            claim: &CLAIM_ONLY_QUEUE,
            queue: Some(&only),
            planning: Planning::IndexOrdered,
        };
        let left = claim_rounds(
            client,
            &round,
            batch,
            now,
            lease,
            &mut claimed,
            &mut gave_up,
        )?;
        if left.others {
            fair_share::others_seen();
        } else {
            alone = true;
            limited::first_pass_done(&mut limited);
            finish_gave_up(client, &mut gave_up)?;
            if left.keyed && claimed.len() < batch {
                turn.fill_keyed(
                    client,
                    &[(only, batch - claimed.len())],
                    lease,
                    &mut claimed,
                )?;
            }
        }
    }
    if !alone {
        loop {
            serve_in_turn(
                client,
                statement,
                &mut turn,
                batch,
                now,
                lease,
                &mut claimed,
                &mut gave_up,
            )?;
            // The first pass's jobs that gave up are stamped once the settings lock is
            // released (a stamp runs the linked table's code and may wait on its rows).
            limited::first_pass_done(&mut limited);
            finish_gave_up(client, &mut gave_up)?;
            statement = &CLAIM_SHARES_CHECKED;
            if turn.kept.is_empty() {
                break;
            }
            for (queue, share) in std::mem::take(&mut turn.kept) {
                let wanted = share.min(batch - claimed.len());
                if wanted > 0 {
                    claim_limited(
                        client,
                        &queue,
                        wanted,
                        Lock::Skip,
                        lease,
                        &mut claimed,
                        &mut gave_up,
                    )?;
                }
                tried.push(queue);
            }
            if claimed.len() == batch {
                break;
            }
        }
    }
    // Places still free: the limited queues the turn did not reach, in name order (their
    // expired leases, which only their own pass takes, and work for places nothing else
    // fills), as every claim from any queue did before 0.4.0.
    for queue in limited_queues.iter().filter(|q| !tried.contains(q)) {
        let wanted = batch - claimed.len();
        if wanted == 0 {
            break;
        }
        claim_limited(
            client,
            queue,
            wanted,
            Lock::Skip,
            lease,
            &mut claimed,
            &mut gave_up,
        )?;
    }
    // Ordered jobs left to the end under REPEATABLE READ and SERIALIZABLE: their turn is
    // refused there, as when a claim of 0.3.1 came to them.
    if turn.keyed_left && claimed.len() < batch {
        in_read_committed(|| "ordered jobs".into())?;
    }
    // Jobs a later round gave up on, stamped now (the first round's were, after its pass).
    finish_gave_up(client, &mut gave_up)?;
    Ok(claimed)
}

/// Where a claim from any queue is in its turn of the queues.
struct Turn<'a> {
    /// The queues with flow control.
    limited: &'a [String],
    /// The queues the walk passes over: paused, reached and short of their share, or
    /// limited and reached.
    passed: Vec<String>,
    /// The limited queues reached, with the places kept for each.
    kept: Vec<(String, usize)>,
    /// Ordered jobs were left to the end (REPEATABLE READ, SERIALIZABLE).
    keyed_left: bool,
}

impl Turn<'_> {
    fn kept_places(&self) -> usize {
        self.kept.iter().map(|(_, places)| places).sum()
    }

    /// Ordered jobs in the places that queues left to them (`shares`: queue and places),
    /// after the turn of such claims (claim_keyed.sql); under REPEATABLE READ and
    /// SERIALIZABLE, left to the end. Returns the queues that filled their places.
    fn fill_keyed(
        &mut self,
        client: &mut SpiClient<'_>,
        shares: &[(String, usize)],
        lease: Interval,
        claimed: &mut Vec<Job>,
    ) -> Result<Vec<String>> {
        if !turns::read_committed() {
            self.keyed_left = true;
            return Ok(Vec::new());
        }
        claim_keyed(client, shares, lease, claimed)
    }
}

/// Fills the claim's places with the shares of the queues the turn reaches, round after
/// round (claim_shares.sql), each queue's places its jobs without a key could not fill
/// going to its ordered jobs (`Turn::fill_keyed`): a queue short of its share (empty, or
/// its rows locked by other claims) is passed over from then on, so each round that does
/// not fill the places passes over one more queue, and the walk ends.
#[allow(clippy::too_many_arguments)]
fn serve_in_turn(
    client: &mut SpiClient<'_>,
    statement: &Statement,
    turn: &mut Turn<'_>,
    batch: usize,
    now: TimestampWithTimeZone,
    lease: Interval,
    claimed: &mut Vec<Job>,
    gave_up: &mut GaveUp,
) -> Result<()> {
    loop {
        let places = batch - claimed.len() - turn.kept_places();
        if places == 0 {
            return Ok(());
        }
        let place = fair_share::place();
        let rows = statement.run_planned(
            client,
            &[
                now.into(),
                (places as i64).into(),
                lease.into(),
                place.clone().into(),
                turn.passed.clone().into(),
                turn.limited.to_vec().into(),
                generation_floor().into(),
            ],
            Planning::IndexOrdered,
        )?;
        let before = claimed.len() + gave_up.len();
        let rows = ClaimRows::read(statement, rows, true)?;
        let reached = rows.reached.len();
        let mut wanted = if reached == 0 { places } else { 0 };
        if let Some((queue, _)) = rows.reached.last() {
            // The walk came round to the queue it started after, alone: no other queue
            // had a due job (src/flow/fair_share.rs tries only_queue next).
            if reached == 1 && turn.limited.is_empty() && place.as_deref() == Some(queue.as_str()) {
                fair_share::reached_alone(queue);
            }
            fair_share::reached(queue.clone());
        }
        claimed.extend(rows.jobs);
        let gave_up_now = !rows.giving_up.is_empty();
        let let_go = give_up(client, rows.giving_up, now, gave_up)?.1;
        // The limited queues reached keep their shares for their own passes.
        for (queue, share) in &rows.reached {
            if turn.limited.contains(queue) {
                turn.kept.push((queue.clone(), *share));
                turn.passed.push(queue.clone());
            }
        }
        // The places short queues left, to their ordered jobs (to any queue's, when jobs
        // that waited for the keys of those that gave up were let go after the statement
        // looked), as many as the batch still has: a short queue counts the places it
        // left by its own pending rows, and expired leases may have taken some of them.
        let mut free = batch.saturating_sub(claimed.len() + turn.kept_places());
        let keyed: Vec<(String, usize)> = rows
            .short
            .iter()
            .filter(|short| short.keyed || let_go)
            .map(|short| {
                let places = short.places_left.min(free);
                free -= places;
                (short.queue.clone(), places)
            })
            .filter(|(_, places)| *places > 0)
            .collect();
        let filled = if keyed.is_empty() {
            Vec::new()
        } else {
            turn.fill_keyed(client, &keyed, lease, claimed)?
        };
        let mut every_reached_passed = true;
        for (queue, share) in rows.reached {
            if turn.limited.contains(&queue) {
                continue;
            }
            let short = rows.short.iter().any(|short| short.queue == queue);
            wanted += share;
            every_reached_passed &= short && !filled.contains(&queue);
            if short && !filled.contains(&queue) && !gave_up_now {
                // Jobs that gave up took places the pending rows of a short queue may have
                // lost in the merge: then it is not passed over, and reached again.
                turn.passed.push(queue);
            }
        }
        let took = claimed.len() + gave_up.len() - before;
        // Nothing more to take: fewer expired leases than the places were left, and the
        // walk reached every queue it could (fewer than the places), each passed over now.
        if took < wanted && reached < places && every_reached_passed {
            return Ok(());
        }
    }
}

/// Ordered jobs in the places other passes left in `shares` (queue and places), after the
/// turn of such claims, in a snapshot that sees every one that committed
/// (src/flow/turns.rs; claim_keyed.sql: no expired lease, so none gives up). Returns the
/// queues that filled their places.
fn claim_keyed(
    client: &mut SpiClient<'_>,
    shares: &[(String, usize)],
    lease: Interval,
    claimed: &mut Vec<Job>,
) -> Result<Vec<String>> {
    // Not had without waiting in a transaction that finished an ordered job (two such
    // would wait for each other): its ordered jobs are the next claim's
    // (src/flow/turns.rs).
    if !turns::take_keyed_turn(queue_relation_oids(client)?.0) {
        return Ok(Vec::new());
    }
    let (queues, places): (Vec<String>, Vec<i64>) = shares
        .iter()
        .map(|(queue, places)| (queue.clone(), *places as i64))
        .unzip();
    let statement = &CLAIM_KEYED;
    let rows = statement.run_planned(
        client,
        &[
            wall_clock().into(),
            lease.into(),
            queues.into(),
            places.into(),
            generation_floor().into(),
        ],
        Planning::IndexOrdered,
    )?;
    let [job, id, claim_order, queue, places_left] =
        ["job", "id", "claim_order", "queue", "places_left"].map(|c| statement.ordinal(c));
    let mut jobs = Vec::new();
    let mut filled = Vec::new();
    for row in rows {
        if let Some(job) = row.get::<Job>(job)? {
            let order = row
                .get::<Timestamp>(claim_order)?
                .map(Timestamp::into_inner);
            jobs.push(((order, row.get::<i64>(id)?), job));
        } else if row.get::<i64>(places_left)? == Some(0) {
            filled.extend(row.get::<String>(queue)?);
        }
    }
    jobs.sort_unstable_by_key(|(order, _)| *order);
    claimed.extend(jobs.into_iter().map(|(_, job)| job));
    Ok(filled)
}

/// Up to `wanted` jobs of `queue`, which has flow control: what its settings allow, under
/// its lock.
fn claim_limited(
    client: &mut SpiClient<'_>,
    queue: &str,
    wanted: usize,
    lock: Lock,
    lease: Interval,
    claimed: &mut Vec<Job>,
    gave_up: &mut GaveUp,
) -> Result<()> {
    in_read_committed(|| format!("queue {queue:?}"))?;
    let Some(allowance) = allowance::allowance(client, queue, wanted, lock)? else {
        return Ok(());
    };
    if allowance.jobs == 0 {
        // Nothing to take, but a bucket dated ahead of the clock is dated back (spend).
        return allowance::spend(client, queue, &allowance, 0);
    }
    let before = claimed.len();
    let round = Round {
        claim: &CLAIM_LIMITED_QUEUE,
        queue: Some(queue),
        planning: Planning::IndexOrdered,
    };
    claim_rounds(
        client,
        &round,
        before + allowance.jobs,
        allowance.now,
        lease,
        claimed,
        gave_up,
    )?;
    finish_gave_up(client, gave_up)?;
    allowance::spend(client, queue, &allowance, claimed.len() - before)
}

/// A claim that takes a turn (a limited queue's lock, the turn of ordered jobs) counts
/// what the claims before it did in a snapshot taken after the turn; REPEATABLE READ and
/// SERIALIZABLE keep the transaction's first snapshot, which may predate them (a cap of 1
/// gave 2 jobs in flight: flow.sql), so such a claim is refused there.
/// `what` names the claim in the error only (no allocation on the hot path).
fn in_read_committed(what: impl FnOnce() -> String) -> Result<()> {
    if !turns::read_committed() {
        return Err(SendJobsError::TurnNeedsReadCommitted(what()));
    }
    Ok(())
}

/// One variant of the claim statement with what it claims from (claim.sql).
struct Round<'a> {
    claim: &'a Statement,
    queue: Option<&'a str>,
    planning: Planning,
}

/// What a pass of the claim left to others (its last row, claim.sql).
#[derive(Default)]
struct Left {
    /// Pending ordered jobs, for the pass that takes them.
    keyed: bool,
    /// Another queue has pending jobs (only_queue took no pending job).
    others: bool,
}

/// A queue short of its share (claim_shares.sql).
struct Short {
    queue: String,
    /// The places it left.
    places_left: usize,
    /// It has ordered jobs that may be free, for those places.
    keyed: bool,
}

/// The rows of one run of a claim statement (claim.sql, claim_shares.sql).
struct ClaimRows {
    /// The jobs claimed, in claim order.
    jobs: Vec<Job>,
    /// The queues short of their share (claim_shares.sql).
    short: Vec<Short>,
    /// The queues the walk reached, in its order, with their shares (claim_shares.sql).
    reached: Vec<(String, usize)>,
    /// The jobs found with every attempt used, still locked.
    giving_up: Vec<i64>,
    /// Pending ordered jobs were left to their pass.
    keyed: bool,
    /// Another queue has pending jobs (claim.sql's only_queue).
    others: bool,
}

impl ClaimRows {
    fn read(
        statement: &Statement,
        rows: pgrx::spi::SpiTupleTable<'_>,
        with_shares: bool,
    ) -> Result<ClaimRows> {
        let [job, gave_up_flag, id, claim_order, keyed] =
            ["job", "gave_up", "id", "claim_order", "keyed"].map(|c| statement.ordinal(c));
        let turn =
            with_shares.then(|| ["queue", "short", "step", "share"].map(|c| statement.ordinal(c)));
        let others = (!with_shares).then(|| statement.ordinal("others"));
        let mut jobs = Vec::with_capacity(rows.len());
        let mut steps = Vec::new();
        let mut read = ClaimRows {
            jobs: Vec::new(),
            short: Vec::new(),
            reached: Vec::new(),
            giving_up: Vec::new(),
            keyed: false,
            others: false,
        };
        for row in rows {
            // Almost every row is a claimed job, the flags only on the rows without one.
            if let Some(job) = row.get::<Job>(job)? {
                let order = row
                    .get::<Timestamp>(claim_order)?
                    .map(Timestamp::into_inner);
                jobs.push(((order, row.get::<i64>(id)?), job));
            } else if let Some([queue, short, step, share]) =
                turn.filter(|[queue, ..]| matches!(row.get::<String>(*queue), Ok(Some(_))))
            {
                let name = row.get::<String>(queue)?.unwrap_or_default();
                let share =
                    usize::try_from(row.get::<i64>(share)?.unwrap_or_default()).unwrap_or(0);
                if row.get::<bool>(short)? == Some(true) {
                    read.short.push(Short {
                        queue: name,
                        places_left: share,
                        keyed: row.get::<bool>(keyed)? == Some(true),
                    });
                } else {
                    let at = row.get::<i64>(step)?.unwrap_or_default();
                    steps.push((at, name, share));
                }
            } else if row.get::<bool>(gave_up_flag)? == Some(true) {
                read.giving_up.extend(row.get::<i64>(id)?);
            } else if row.get::<bool>(keyed)? == Some(true) {
                read.keyed = true;
            } else if others.is_some_and(|others| matches!(row.get::<bool>(others), Ok(Some(true))))
            {
                read.others = true;
            } else {
                return Err(SendJobsError::Internal(
                    "claim returned a row with neither a job nor a flag".into(),
                ));
            }
        }
        // In claim order (the statement leaves it to us, which costs less: decision 0014).
        jobs.sort_unstable_by_key(|(order, _)| *order);
        read.jobs = jobs.into_iter().map(|(_, job)| job).collect();
        steps.sort_unstable_by_key(|(at, _, _)| *at);
        read.reached = steps
            .into_iter()
            .map(|(_, queue, share)| (queue, share))
            .collect();
        Ok(read)
    }
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
    gave_up: &mut GaveUp,
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
                generation_floor().into(),
            ],
            round.planning,
        )?;
        let rows = ClaimRows::read(round.claim, rows, false)?;
        left.keyed |= rows.keyed;
        left.others |= rows.others;
        claimed.extend(rows.jobs);
        // The next round sees the jobs that waited for the keys of those that gave up.
        let (finished, _) = give_up(client, rows.giving_up, now, gave_up)?;
        if finished == 0 || claimed.len() == batch {
            return Ok(left);
        }
    }
}

/// Finishes as failed the jobs a claim found with every attempt used under an expired
/// lease, which that claim still holds locked (give_up.sql), and lets the jobs that waited
/// for their keys go (src/flow/key_waits.rs). Returns how many finished, and whether some
/// had a key.
fn give_up(
    client: &mut SpiClient<'_>,
    ids: Vec<i64>,
    now: TimestampWithTimeZone,
    gave_up: &mut GaveUp,
) -> Result<(usize, bool)> {
    if ids.is_empty() {
        return Ok((0, false));
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
    let keys: Vec<String> = failed_keys.iter().map(|(key, _, _)| key.clone()).collect();
    let let_go = !keys.is_empty();
    blocked_keys::stop_failed_keys(client, failed_keys)?;
    key_waits::clear(client, keys)?;
    Ok((gave_up.len() - before, let_go))
}

/// Stamps the business rows of the jobs that gave up, and wakes what their finish frees.
fn finish_gave_up(client: &mut SpiClient<'_>, gave_up: &mut GaveUp) -> Result<()> {
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
