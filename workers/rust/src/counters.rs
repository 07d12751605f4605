//! What a worker has done, for a user to export (Prometheus, logs, a status page).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Running totals since the worker started. Read them with [`Counters::snapshot`].
#[derive(Debug, Default)]
pub struct Counters {
    pub(crate) claimed: AtomicU64,
    pub(crate) sent: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) retried: AtomicU64,
    pub(crate) stale: AtomicU64,
    pub(crate) timed_out: AtomicU64,
    pub(crate) heartbeats: AtomicU64,
    pub(crate) wakeups: AtomicU64,
    pub(crate) limited: AtomicU64,
    pub(crate) reconnects: AtomicU64,
    pub(crate) server_warnings: AtomicU64,
    pub(crate) errors: AtomicU64,
    pub(crate) undecodable: AtomicU64,
}

/// The counters at one moment. A counter may be added in a minor release
/// (`#[non_exhaustive]`): read the fields, or start from `Snapshot::default()`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Snapshot {
    /// Jobs claimed (each claim of a job counts: a job reclaimed after a lost lease twice).
    pub claimed: u64,
    /// Finalized `sent`, and applied (the server took them).
    pub sent: u64,
    /// Finalized `failed`, and applied, or a `retry` on the job's last attempt (the
    /// server finished it as failed: the answer says so); payloads that did not decode
    /// included ([`Snapshot::undecodable`]).
    pub failed: u64,
    /// Finalized `retry`, applied, and the job pending again.
    pub retried: u64,
    /// Jobs this worker lost: a heartbeat or a finalize answered `stale` (the lease had
    /// expired and another worker had reclaimed the job, or it was cancelled). Their sends
    /// were stopped, or their results dropped.
    pub stale: u64,
    /// Sends stopped by the send timeout (their jobs are retried).
    pub timed_out: u64,
    /// Heartbeats applied.
    pub heartbeats: u64,
    /// `NOTIFY sendjobs_wakeup` received for the worker's queue.
    pub wakeups: u64,
    /// Short claims that found the worker's queue limited by its flow control (paused,
    /// its cap reached, its rate spent): the worker then waited for the next token, a
    /// wake-up or its poll interval.
    pub limited: u64,
    /// Connections opened again after one was lost.
    pub reconnects: u64,
    /// WARNINGs the server sent (the terminal guard's refusals, for one), also logged.
    pub server_warnings: u64,
    /// Calls that failed other than by a lost connection (also logged); the jobs they
    /// concern come back when their leases expire.
    pub errors: u64,
    /// Jobs whose payload did not decode as the worker's payload type
    /// ([`Worker::typed`](crate::Worker::typed)): not sent, finalized `failed` with
    /// serde's reason (then counted in `failed` too, once applied).
    pub undecodable: u64,
}

impl Counters {
    /// The counters now (each read on its own: a snapshot taken while the worker runs
    /// may count a job as claimed and not yet as sent).
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            claimed: self.claimed.load(Relaxed),
            sent: self.sent.load(Relaxed),
            failed: self.failed.load(Relaxed),
            retried: self.retried.load(Relaxed),
            stale: self.stale.load(Relaxed),
            timed_out: self.timed_out.load(Relaxed),
            heartbeats: self.heartbeats.load(Relaxed),
            wakeups: self.wakeups.load(Relaxed),
            limited: self.limited.load(Relaxed),
            reconnects: self.reconnects.load(Relaxed),
            server_warnings: self.server_warnings.load(Relaxed),
            errors: self.errors.load(Relaxed),
            undecodable: self.undecodable.load(Relaxed),
        }
    }
}

pub(crate) fn bump(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Relaxed);
}
