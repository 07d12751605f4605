//! A claimed job, and what its send made of it.

use std::time::Duration;

/// A job this worker holds: the columns of `send_jobs` a send needs.
#[derive(Clone, Debug)]
pub struct Job {
    pub id: i64,
    /// This claim's fencing token (`claim_generation`): it names this attempt. A job is
    /// sent again only under a new generation, after its lease expired (at-least-once).
    pub generation: i64,
    pub queue: String,
    pub payload: serde_json::Value,
    /// Claims so far, this one included.
    pub attempts: i32,
    pub max_attempts: i32,
    /// The business row the job belongs to, if it was enqueued with one.
    pub transaction_id: Option<String>,
    /// The key it was enqueued with, if any: what a partner should deduplicate on (the
    /// same for every attempt of the job; `sendjobs-{id}` is a fallback).
    pub idempotency_key: Option<String>,
}

impl Job {
    /// True on the job's last attempt: a `retry` now finishes it as `failed`.
    pub fn is_last_attempt(&self) -> bool {
        self.attempts >= self.max_attempts
    }
}

/// What a send returns: the outcome the worker finalizes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The partner has it. Finalized `sent` (with the other sent results of the moment,
    /// in one `sendjobs_finalize_batch`).
    Sent,
    /// The partner refused it for good. Finalized `failed`, with `error` kept in
    /// `last_error`.
    Failed { error: String },
    /// Try again: after `after` (by the server's clock), or after the server's backoff
    /// when `None`. On the last attempt the job is finished as `failed` instead.
    Retry {
        error: String,
        after: Option<Duration>,
    },
}

impl Outcome {
    pub fn failed(error: impl Into<String>) -> Self {
        Self::Failed {
            error: error.into(),
        }
    }

    /// Retry after the server's backoff.
    pub fn retry(error: impl Into<String>) -> Self {
        Self::Retry {
            error: error.into(),
            after: None,
        }
    }

    pub fn retry_after(error: impl Into<String>, after: Duration) -> Self {
        Self::Retry {
            error: error.into(),
            after: Some(after),
        }
    }
}
