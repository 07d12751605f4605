//! The loop: claim what there is room for, run each send in its own task under a
//! heartbeat and a timeout, finalize what the sends return, sleep until woken.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::de::DeserializeOwned;

use tokio::sync::{mpsc, watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio::time::{interval_at, sleep, timeout, Instant, MissedTickBehavior};

use crate::config::{Config, Shutdown};
use crate::counters::{bump, Counters};
use crate::db::{Answer, Db, Finalized, Flow};
use crate::error::{Error, Result};
use crate::job::{Job, Outcome};
use crate::SqlState;

/// A worker of one queue (or of all), on one connection, whose sends get each job's
/// payload as a `T`: a [`serde_json::Value`] ([`Worker::new`]) or a type of yours
/// ([`Worker::typed`]). See the crate's documentation.
pub struct Worker<T = serde_json::Value> {
    config: Config,
    counters: Arc<Counters>,
    payload: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for Worker<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worker")
            .field("payload", &std::any::type_name::<T>())
            .field("config", &self.config)
            .field("counters", &self.counters)
            .finish()
    }
}

/// A send's result, on its way to be finalized.
struct Finished {
    id: i64,
    generation: i64,
    outcome: Outcome,
}

impl Worker {
    /// A worker whose sends get each payload as a [`serde_json::Value`]: any JSON, as it
    /// was enqueued. Checks the settings ([`Error::Config`] names the first that cannot
    /// work); connects only in [`Worker::run`].
    pub fn new(config: Config) -> Result<Self> {
        Self::typed(config)
    }
}

impl<T> Worker<T> {
    /// The worker's counters, readable while it runs.
    pub fn counters(&self) -> Arc<Counters> {
        self.counters.clone()
    }
}

impl<T: DeserializeOwned + Send + 'static> Worker<T> {
    /// A worker whose sends get each payload decoded as `T` (with serde, from the job's
    /// `jsonb`): `Worker::<Email>::typed(config)`, or `Worker::typed(config)` with `T`
    /// taken from the send function that [`Worker::run`] is given. Checks the settings as
    /// [`Worker::new`] does.
    ///
    /// # A payload that does not decode
    ///
    /// Its send is not called: the job is finalized `failed` at once, with serde's reason
    /// as its `last_error` (`sendjobs-worker: the payload does not decode as <T>: missing
    /// field ...`), logged as a warning and counted in [`Snapshot::undecodable`] (and in
    /// `failed` once the finalize applies). Not retried, because a retry cannot mend it:
    /// a job's payload never changes and decoding is deterministic, so each retry would
    /// fail the same way, spend an attempt and a backoff, and end `failed` after
    /// `max_attempts` all the same, later. Failed, it is where an operator looks
    /// (`status = 'failed'`, its event in `send_job_events`), and `sendjobs_redrive` sends
    /// it again, same payload, once a worker reads it.
    ///
    /// When payloads change shape, decode tolerantly (`#[serde(default)]` for a new field)
    /// or deploy the workers before the producers. A worker that would rather retry such a
    /// job (a producer deployed ahead of it) takes `Job<serde_json::Value>` and decodes in
    /// its send, returning [`Outcome::retry`] when it cannot.
    ///
    /// [`Snapshot::undecodable`]: crate::Snapshot::undecodable
    pub fn typed(config: Config) -> Result<Self> {
        config.validate()?;
        Ok(Self {
            config,
            counters: Arc::default(),
            payload: PhantomData,
        })
    }

    /// Runs until `shutdown` completes (for instance [`shutdown_signal`](crate::shutdown_signal)),
    /// then stops as [`Config::shutdown`] says and returns.
    ///
    /// `send` is called once per claim of a job, in a task of its own, with the job's
    /// payload decoded as `T` (a payload that does not decode is finalized `failed`
    /// without a send: [`Worker::typed`]); what it returns is finalized. If the job is
    /// lost meanwhile (a heartbeat answers `stale`), or the send outlives its timeout, its
    /// task is aborted: `send` should hold nothing that an abort at an `.await` would
    /// leave inconsistent.
    ///
    /// Returns an error if the first connection fails, or if a claim fails for a reason
    /// that waiting cannot mend (a permission, a batch above `sendjobs.max_batch`: the
    /// SQLSTATE says which). A lost connection is not an error: the worker reconnects.
    /// Once `shutdown` has completed, no call waits more than a lease for a database
    /// that is away or has stopped answering: a claim is not tried again, a heartbeat or
    /// finalize is given up ([`Error::GivenUp`]; its job comes back after its lease).
    pub async fn run<S, F>(self, send: S, shutdown: impl Future<Output = ()>) -> Result<()>
    where
        S: Fn(Job<T>) -> F + Send + Sync + 'static,
        F: Future<Output = Outcome> + Send + 'static,
    {
        let config = &self.config;
        let counters = &self.counters;
        let db = Arc::new(Db::connect(config, counters.clone()).await?);
        let (finished_tx, finished_rx) = mpsc::unbounded_channel();
        let finalizer = tokio::spawn(finalize_loop(db.clone(), finished_rx, counters.clone()));
        let places = Arc::new(Semaphore::new(config.concurrency as usize));
        let (abandon_tx, abandon_rx) = watch::channel(false);
        let send = Arc::new(send);
        let mut sends = JoinSet::new();
        tokio::pin!(shutdown);

        let mut result = Ok(());
        let mut stopping = false;
        // The last claim was made again at once after a short one that took nothing.
        let mut claimed_empty_again = false;
        loop {
            while sends.try_join_next().is_some() {}
            let free = places.available_permits() as u32;
            if free == 0 {
                // Every place is taken: wait for a send to end (its place frees first).
                tokio::select! {
                    _ = &mut shutdown => break,
                    _ = sends.join_next() => continue,
                }
            }
            let wanted = free.min(config.batch);
            // Not dropped at the shutdown: a claim dropped after the server committed it
            // would leave its jobs to wait out their leases, an attempt spent each. A
            // shutdown meanwhile only tells it to give up if the database is away.
            let claim = db.claim(wanted);
            tokio::pin!(claim);
            let claimed = loop {
                tokio::select! {
                    claimed = &mut claim => break claimed,
                    _ = &mut shutdown, if !stopping => {
                        stopping = true;
                        db.stop();
                    }
                }
            };
            let jobs = match claimed {
                Ok(jobs) => jobs,
                // First: a reconnect refused for good while stopping (a password, pg_hba)
                // must not turn a clean stop into an error.
                Err(e) if stopping => {
                    log::warn!("sendjobs-worker: claim given up at shutdown: {e}");
                    Vec::new()
                }
                Err(e) if is_permanent(&e) => {
                    result = Err(e);
                    break;
                }
                Err(e) => {
                    log::warn!("sendjobs-worker: claim failed, trying again: {e}");
                    bump(&counters.errors, 1);
                    Vec::new()
                }
            };
            bump(&counters.claimed, jobs.len() as u64);
            let got = jobs.len() as u32;
            for job in jobs {
                let place = places
                    .clone()
                    .try_acquire_owned()
                    .expect("claimed only for free places");
                let task = SendTask {
                    id: job.id,
                    generation: job.generation,
                    db: db.clone(),
                    config: config.clone(),
                    counters: counters.clone(),
                    finished: finished_tx.clone(),
                    abandon: abandon_rx.clone(),
                    _place: place,
                };
                let send = send.clone();
                sends.spawn(task.run(job, move |job| send(job)));
            }
            if stopping {
                break;
            }
            if got > 0 {
                claimed_empty_again = false;
            }
            if got < wanted {
                // Nothing more is due, or the queue's flow control held jobs back: sleep
                // until a wake-up, the next token of a rate, or the poll interval (a
                // wake-up stored while we claimed ends it at once).
                // A queue with flow control that no longer limits is empty, or a token
                // came back since the claim: it is claimed again at once while the claims
                // take jobs (a rate-limited queue is claimed at its rate, however slow the
                // round trip), and after a claim that took none, once more (the token may
                // have come back after it found none): empty if that one takes none too.
                let claimed_empty = std::mem::take(&mut claimed_empty_again);
                let wait = match db.flow().await {
                    Ok(Flow::Limited(next_token)) => {
                        bump(&counters.limited, 1);
                        next_token.map_or(config.poll_interval, |d| d.min(config.poll_interval))
                    }
                    Ok(Flow::Free) if got > 0 => continue,
                    Ok(Flow::Free) if !claimed_empty => {
                        claimed_empty_again = true;
                        continue;
                    }
                    Ok(Flow::Free | Flow::None) => config.poll_interval,
                    Err(e) => {
                        log::warn!("sendjobs-worker: queue limits unknown: {e}");
                        config.poll_interval
                    }
                };
                tokio::select! {
                    _ = &mut shutdown => break,
                    _ = db.wakeup.notified() => {}
                    _ = sleep(wait) => {}
                }
            }
        }

        // From here, a call that finds the database away gives up (after a lease for a
        // finalize), rather than keep a stopping worker waiting for it.
        db.stop();
        if config.shutdown == Shutdown::Abandon || result.is_err() {
            let _ = abandon_tx.send(true);
        }
        while sends.join_next().await.is_some() {}
        drop(finished_tx);
        let _ = finalizer.await;
        result
    }
}

/// Claim errors that another try cannot mend: bad arguments (22), access and names (42),
/// authorization (28): stop and report. Anything else (a timeout, a conflict) is retried,
/// and so is 42804, which a claim parsed just before `ALTER EXTENSION sendjobs UPDATE`
/// and run after it gets once (docs/operations.md, "Upgrading the extension").
fn is_permanent(e: &Error) -> bool {
    match e.sqlstate() {
        Some(code) => {
            *code != SqlState::DATATYPE_MISMATCH
                && ["22", "42", "28"]
                    .iter()
                    .any(|class| code.code().starts_with(class))
        }
        None => matches!(e, Error::Config(_) | Error::Protocol(_)),
    }
}

/// Errors a finalize may meet that the same call, a moment later, does not: a
/// serialization failure or deadlock (40), a lock not available (55P03), a statement
/// timeout (57014).
fn is_transient(e: &Error) -> bool {
    e.sqlstate().is_some_and(|code| {
        code.code().starts_with("40")
            || *code == SqlState::LOCK_NOT_AVAILABLE
            || *code == SqlState::QUERY_CANCELED
    })
}

/// One claim's send: the job's id and generation name it in its heartbeats and finalize.
struct SendTask {
    id: i64,
    generation: i64,
    db: Arc<Db>,
    config: Config,
    counters: Arc<Counters>,
    finished: mpsc::UnboundedSender<Finished>,
    abandon: watch::Receiver<bool>,
    /// The place this send takes among `concurrency`; freed when the task ends.
    _place: OwnedSemaphorePermit,
}

impl SendTask {
    /// Runs one send to its end: its result, its timeout, a lost lease, or a shutdown
    /// that abandons it. The send runs in a task of its own, so that a panic in it is
    /// caught (the job is retried) and so that it can be aborted. A payload that does
    /// not decode as `T` is not sent: it is finalized `failed` ([`Worker::typed`]).
    async fn run<T, S, F>(mut self, job: Job, send: S)
    where
        T: DeserializeOwned,
        S: FnOnce(Job<T>) -> F,
        F: Future<Output = Outcome> + Send + 'static,
    {
        let job = match job.decode::<T>() {
            Ok(job) => job,
            Err(reason) => {
                log::warn!("{reason} (job {}, finalized failed)", self.id);
                bump(&self.counters.undecodable, 1);
                return self.finish(Outcome::failed(reason));
            }
        };
        let mut handle = tokio::spawn(send(job));
        let deadline = sleep(self.config.send_timeout);
        tokio::pin!(deadline);
        // Renew the lease every half lease, from the claim on: a send that ends within
        // half its lease costs no heartbeat.
        let half = self.config.lease / 2;
        let mut heartbeat = interval_at(Instant::now() + half, half);
        heartbeat.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let outcome = loop {
            tokio::select! {
                joined = &mut handle => break match joined {
                    Ok(outcome) => outcome,
                    Err(e) if e.is_panic() => Outcome::retry("sendjobs-worker: the send panicked"),
                    Err(_) => return,
                },                _ = &mut deadline => {
                    handle.abort();
                    bump(&self.counters.timed_out, 1);
                    break Outcome::retry(format!(
                        "sendjobs-worker: send timed out after {:?}", self.config.send_timeout));
                }                // Bounded by half a lease: a heartbeat stuck behind a reconnect must not
                // keep this loop from seeing the send end, its timeout, or a shutdown.
                _ = heartbeat.tick() => match timeout(half, self.db.heartbeat(self.id, self.generation)).await {
                    Ok(Ok(Answer::Applied)) => bump(&self.counters.heartbeats, 1),
                    Ok(Ok(Answer::Stale)) => {
                        // Lost: the lease expired and another worker holds the job, or it
                        // was cancelled. Stop the send; its result could not apply.
                        handle.abort();
                        bump(&self.counters.stale, 1);
                        return;
                    }                    Ok(Err(e)) => {
                        log::warn!("sendjobs-worker: heartbeat of job {} failed: {e}", self.id);
                        bump(&self.counters.errors, 1);
                    }
                    Err(_) => {
                        log::warn!("sendjobs-worker: heartbeat of job {} took over {half:?}", self.id);
                        bump(&self.counters.errors, 1);
                    }
                },
                Ok(()) = self.abandon.changed() => {
                    handle.abort();
                    break Outcome::retry_after("sendjobs-worker: abandoned at shutdown", Default::default());
                }
            }
        };
        self.finish(outcome);
    }

    /// Hands `outcome` to the finalizer.
    fn finish(self, outcome: Outcome) {
        let _ = self.finished.send(Finished {
            id: self.id,
            generation: self.generation,
            outcome,
        });
    }
}

/// Finalizes results as they come: the `sent` ones of the moment in one
/// `sendjobs_finalize_batch`, the others one by one (each has its own error text).
async fn finalize_loop(
    db: Arc<Db>,
    mut finished: mpsc::UnboundedReceiver<Finished>,
    counters: Arc<Counters>,
) {
    const MOST_AT_ONCE: usize = 1000;
    let mut ready = Vec::new();
    while finished.recv_many(&mut ready, MOST_AT_ONCE).await > 0 {
        let (sent, others): (Vec<Finished>, Vec<Finished>) =
            ready.drain(..).partition(|f| f.outcome == Outcome::Sent);
        let claims: Vec<(i64, i64)> = sent.iter().map(|f| (f.id, f.generation)).collect();
        match claims.len() {
            0 => {}
            1 => finalize_one(&db, &counters, &sent[0]).await,
            _ => match db.finalize_sent(&claims).await {
                Ok(answers) => {
                    for (_, answer) in answers {
                        count(
                            &counters,
                            match answer {
                                Answer::Applied => Finalized::Sent,
                                Answer::Stale => Finalized::Stale,
                            },
                        );
                    }
                }
                Err(e) => {
                    // One claim's stamp can fail the whole call (the guard in error mode):
                    // finalize them one by one, so that only that one stays unfinished.
                    log::warn!("sendjobs-worker: batch finalize failed, one by one now: {e}");
                    for f in &sent {
                        finalize_one(&db, &counters, f).await;
                    }
                }
            },
        }
        for f in &others {
            finalize_one(&db, &counters, f).await;
        }
    }
}

async fn finalize_one(db: &Db, counters: &Counters, f: &Finished) {
    let mut tries = 0;
    loop {
        match db.finalize(f.id, f.generation, &f.outcome).await {
            Ok(finalized) => return count(counters, finalized),
            Err(e) if is_transient(&e) && tries < 3 => {
                tries += 1;
                sleep(std::time::Duration::from_millis(100 << tries)).await;
            }
            Err(e) => {
                // The job stays in flight; it comes back when its lease expires, and gives
                // up after max_attempts (the server's invariant 8).
                log::warn!("sendjobs-worker: finalize of job {} failed: {e}", f.id);
                bump(&counters.errors, 1);
                return;
            }
        }
    }
}

fn count(counters: &Counters, finalized: Finalized) {
    let counter = match finalized {
        Finalized::Stale => &counters.stale,
        Finalized::Sent => &counters.sent,
        Finalized::Failed => &counters.failed,
        Finalized::Retried => &counters.retried,
    };
    bump(counter, 1);
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM (what `systemctl stop`, `docker stop` and
/// Kubernetes send): pass it to [`Worker::run`].
pub async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut terminate) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
