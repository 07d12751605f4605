//! Fair share across queues for a claim from any queue (decision 0019, invariant 21):
//! the claim serves the queues with due jobs in turn, in name order from the one after
//! the last it reached, and splits its batch evenly among those it reaches
//! (sql/statements/claim_shares.sql walks them and claims the shares). One queue's
//! backlog then takes at most its share of any claim, whatever its size; a queue with
//! due jobs is reached within ceil(Q / batch) claims of each worker, Q the number of
//! queues with due jobs.
//!
//! The place in the turn is this backend's own: a worker's claims go round the queues
//! without any row, sequence or lock shared with other workers (which a shared place
//! would make every claim write). A backend's first claim starts at the queue of the
//! oldest pending job, as every claim did before 0.4.0.

use std::cell::{Cell, RefCell};

thread_local! {
    /// The last queue this backend's claims reached (None before its first).
    static LAST_REACHED: RefCell<Option<String>> = const { RefCell::new(None) };
    /// The one queue with due jobs, as this backend's last walk found it (it came round
    /// to the queue it started after): the next claim tries claim.sql's only_queue.
    static ONLY: RefCell<Option<String>> = const { RefCell::new(None) };
    /// Walks to make before `ONLY` is set again, after another queue was seen.
    static BACKOFF: Cell<u32> = const { Cell::new(0) };
}

/// After only_queue found another queue with pending jobs: that many claims walk the
/// queues before the shortcut is tried again (another queue's jobs all due later make it
/// fail every time; each failure costs a claim one statement).
const BACKOFF_CLAIMS: u32 = 64;

/// Where this backend's next claim from any queue starts: after this queue.
pub fn place() -> Option<String> {
    LAST_REACHED.with_borrow(Clone::clone)
}

/// A claim reached `queue` last: the next starts after it.
pub fn reached(queue: String) {
    LAST_REACHED.set(Some(queue));
}

/// The queue a claim may take from as the only one with pending jobs (claim.sql's
/// only_queue, which checks it): cheaper than the walk, and as fair, with one queue.
pub fn only_queue() -> Option<String> {
    ONLY.with_borrow(Clone::clone)
}

/// A walk reached `queue` alone, coming round to it from after it: no other queue had a
/// due job.
pub fn reached_alone(queue: &str) {
    match BACKOFF.get() {
        0 => ONLY.set(Some(queue.to_owned())),
        left => BACKOFF.set(left - 1),
    }
}

/// only_queue found another queue with pending jobs: walk again.
pub fn others_seen() {
    ONLY.set(None);
    BACKOFF.set(BACKOFF_CLAIMS);
}

/// Forgets this backend's place in the turn: its next claim starts as a new session's
/// (src/tests/fair_share.rs starts each case so).
#[cfg(any(test, feature = "pg_test"))]
pub fn forget_place() {
    LAST_REACHED.set(None);
    ONLY.set(None);
    BACKOFF.set(0);
}
