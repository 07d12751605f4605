//! A claimed job, and what its send made of it.

use std::time::Duration;

use serde::de::DeserializeOwned;

/// A job this worker holds: the columns of `send_jobs` a send needs, its payload decoded
/// as `T` (by default a [`serde_json::Value`], any JSON).
///
/// A worker of `Job<T>` ([`Worker::typed`](crate::Worker::typed)) decodes each claimed
/// payload with serde before the send is called; a payload that does not decode never
/// reaches the send: the job is finalized `failed` (see
/// [`Worker::typed`](crate::Worker::typed) for why).
///
/// The worker makes its jobs from claims. [`Job::new`] makes one for a test of a send
/// function; a column may be added in a minor release (`#[non_exhaustive]`), so set
/// the fields on what it returns:
///
/// ```
/// use sendjobs_client::Job;
/// let mut job = Job::new(7, 1, serde_json::json!({"to": "acme"}));
/// job.attempts = 5;
/// assert!(job.is_last_attempt());
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Job<T = serde_json::Value> {
    /// The job's id (`send_jobs.id`): the same for every attempt.
    pub id: i64,
    /// This claim's fencing token (`claim_generation`): it names this attempt. A job is
    /// sent again only under a new generation, after its lease expired (at-least-once).
    pub generation: i64,
    /// The queue it was enqueued into.
    pub queue: String,
    /// What it was enqueued with (`send_jobs.payload`, a `jsonb`), decoded as `T`.
    pub payload: T,
    /// Claims so far, this one included.
    pub attempts: i32,
    /// The claims it may have: a `retry` on the last finishes it as `failed`.
    pub max_attempts: i32,
    /// The business row the job belongs to, if it was enqueued with one.
    pub transaction_id: Option<String>,
    /// The key it was enqueued with, if any: what a partner should deduplicate on (the
    /// same for every attempt of the job; `sendjobs-{id}` is a fallback).
    pub idempotency_key: Option<String>,
}

impl<T> Job<T> {
    /// A job as a first claim would hand it out: queue `default`, attempt 1 of 5 (the
    /// table's defaults), no transaction, no idempotency key. For tests of a send
    /// function; change the fields as the test needs.
    pub fn new(id: i64, generation: i64, payload: T) -> Self {
        Self {
            id,
            generation,
            queue: "default".into(),
            payload,
            attempts: 1,
            max_attempts: 5,
            transaction_id: None,
            idempotency_key: None,
        }
    }

    /// True on the job's last attempt: a `retry` now finishes it as `failed`.
    pub fn is_last_attempt(&self) -> bool {
        self.attempts >= self.max_attempts
    }

    /// The same job with `payload` in place of its own.
    pub(crate) fn with_payload<U>(self, payload: U) -> Job<U> {
        Job {
            id: self.id,
            generation: self.generation,
            queue: self.queue,
            payload,
            attempts: self.attempts,
            max_attempts: self.max_attempts,
            transaction_id: self.transaction_id,
            idempotency_key: self.idempotency_key,
        }
    }
}

impl Job {
    /// The job with its payload decoded as `T`; if it does not decode, why: the error the
    /// worker finalizes it `failed` with (its `last_error`), serde's reason in it.
    pub(crate) fn decode<T: DeserializeOwned>(mut self) -> Result<Job<T>, String> {
        let json = std::mem::take(&mut self.payload);
        match serde_json::from_value(json) {
            Ok(payload) => Ok(self.with_payload(payload)),
            Err(e) => Err(format!(
                "sendjobs-worker: the payload does not decode as {}: {e}",
                std::any::type_name::<T>()
            )),
        }
    }
}

/// What a send returns: the outcome the worker finalizes.
///
/// Build one with [`Outcome::failed`], [`Outcome::retry`] or [`Outcome::retry_after`]
/// (or `Outcome::Sent`). Another outcome, or another field of one, may come in a minor
/// release (`#[non_exhaustive]`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The partner has it. Finalized `sent` (with the other sent results of the moment,
    /// in one `sendjobs_finalize_batch`).
    Sent,
    /// The partner refused it for good. Finalized `failed`, with `error` kept in
    /// `last_error`.
    #[non_exhaustive]
    Failed {
        /// Why: kept in the job's `last_error`.
        error: String,
    },
    /// Try again: after `after` (by the server's clock), or after the server's backoff
    /// when `None`. On the last attempt the job is finished as `failed` instead.
    #[non_exhaustive]
    Retry {
        /// Why: kept in the job's `last_error`.
        error: String,
        /// When to try again, from now; `None` for the server's backoff
        /// (`sendjobs.retry_backoff_base`, doubling).
        after: Option<Duration>,
    },
}

impl Outcome {
    /// The partner refused it for good: finalize `failed`, keeping `error`.
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

    /// Retry once `after` has passed (by the server's clock; `Duration::ZERO`: due now).
    pub fn retry_after(error: impl Into<String>, after: Duration) -> Self {
        Self::Retry {
            error: error.into(),
            after: Some(after),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Email {
        to: String,
        #[serde(default)]
        cc: Vec<String>,
    }

    fn claimed(payload: serde_json::Value) -> Job {
        let mut job = Job::new(42, 3, payload);
        job.queue = "mail".into();
        job.attempts = 2;
        job.transaction_id = Some("tx-1".into());
        job.idempotency_key = Some("tx-1/mail".into());
        job
    }

    /// A payload that fits `T` decodes, and every other column comes along unchanged.
    #[test]
    fn a_payload_decodes_into_its_type() {
        let job = claimed(serde_json::json!({"to": "a@example.com"}));
        let typed: Job<Email> = job.clone().decode().unwrap();
        let expected = Email {
            to: "a@example.com".into(),
            cc: vec![],
        };
        assert_eq!(typed, job.with_payload(expected));
    }

    /// The default payload type takes any JSON as it is.
    #[test]
    fn any_json_decodes_as_a_value() {
        for json in [
            serde_json::json!(null),
            serde_json::json!([1, "two"]),
            serde_json::json!({"n": 1.5}),
        ] {
            let job = claimed(json.clone()).decode::<serde_json::Value>().unwrap();
            assert_eq!(job.payload, json);
        }
    }

    /// A payload that does not fit does not decode: the reason (the job's `last_error`,
    /// the worker finalizing it `failed`) names the type and gives serde's reason, so
    /// that it says what to fix.
    #[test]
    fn a_payload_that_does_not_decode_fails_its_job() {
        let cases = [
            (serde_json::json!({"cc": []}), "missing field `to`"),
            (
                serde_json::json!({"to": 7}),
                "invalid type: integer `7`, expected a string",
            ),
            (serde_json::json!("a@example.com"), "expected struct Email"),
        ];
        for (json, reason) in cases {
            let error = claimed(json).decode::<Email>().unwrap_err();
            // The type as std::any::type_name writes it (a path, which it does not promise).
            let prefix = "sendjobs-worker: the payload does not decode as ";
            assert!(
                error.starts_with(prefix) && error.contains("Email: "),
                "{error}"
            );
            assert!(error.contains(reason), "{error}");
        }
    }

    /// `Job::new` is a first claim with the table's defaults.
    #[test]
    fn a_new_job_is_a_first_claim() {
        let job = Job::new(1, 1, ());
        assert_eq!(
            (job.queue.as_str(), job.attempts, job.max_attempts),
            ("default", 1, 5)
        );
        assert!(!job.is_last_attempt());
        assert_eq!((job.transaction_id, job.idempotency_key), (None, None));
    }
}
