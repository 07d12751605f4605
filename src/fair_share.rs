//! Fair share across queues for a claim from any queue (decision 0019, invariant 21):
//! the claim serves the queues with due jobs in turn, in name order from the one after
//! the last it served, and splits its batch evenly among those it reaches
//! (sql/statements/queue_turns.sql walks them). One queue's backlog then takes at most
//! its share of any claim, whatever its size; a queue with due jobs is reached within
//! ceil(Q / batch) claims of each worker, Q the number of queues with due jobs.
//!
//! The place in the turn is this backend's own: a worker's claims go round the queues
//! without any row, sequence or lock shared with other workers (which a shared cursor
//! would make every claim write). A backend's first claim starts at the queue of the
//! oldest due job, as every claim did before 0.4.0.

use std::cell::RefCell;

use pgrx::prelude::*;
use pgrx::spi::SpiClient;

use crate::errors::Result;
use crate::statements::{statement, Statement};

pub(crate) static QUEUE_TURNS: Statement = statement!("queue_turns.sql");

thread_local! {
    /// The last queue this backend's claims reached (None before its first).
    static LAST_REACHED: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Up to `places` queues with a due job, in turn, passing over those in `skip`; the
/// next call starts after the last of them.
pub fn next_queues(
    client: &SpiClient<'_>,
    now: TimestampWithTimeZone,
    places: usize,
    skip: &[String],
) -> Result<Vec<String>> {
    let cursor = LAST_REACHED.with_borrow(Clone::clone);
    let rows = QUEUE_TURNS.run(
        client,
        &[
            now.into(),
            (places as i64).into(),
            cursor.into(),
            skip.to_vec().into(),
        ],
    )?;
    let mut queues = Vec::with_capacity(places);
    for row in rows {
        queues.extend(row.get::<String>(1)?);
    }
    if let Some(last) = queues.last() {
        LAST_REACHED.set(Some(last.clone()));
    }
    Ok(queues)
}

/// Forgets this backend's place in the turn: its next claim starts as a new session's
/// (src/tests/fair_share.rs starts each case so).
#[cfg(any(test, feature = "pg_test"))]
pub fn forget_place() {
    LAST_REACHED.set(None);
}

/// `places` split among `queues` queues as evenly as it goes, the first ones (those
/// reached first) taking the odd places.
pub fn shares(places: usize, queues: usize) -> impl Iterator<Item = usize> {
    let (each, odd) = (places / queues.max(1), places % queues.max(1));
    (0..queues).map(move |i| each + usize::from(i < odd))
}

#[cfg(test)]
mod unit {
    use super::shares;

    #[test]
    fn shares_add_up_and_differ_by_one_at_most() {
        for places in 1..40 {
            for queues in 1..=places {
                let split: Vec<_> = shares(places, queues).collect();
                assert_eq!(split.iter().sum::<usize>(), places);
                assert!(split.iter().max().unwrap() - split.iter().min().unwrap() <= 1);
                assert!(split.windows(2).all(|w| w[0] >= w[1]));
            }
        }
    }
}
