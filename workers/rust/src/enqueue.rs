//! The producer's side: jobs added on the caller's own connection or transaction, so
//! that a job commits with the business write that asked for it, or not at all.
//!
//! One statement a call: `sendjobs_enqueue` for one job, `sendjobs_enqueue_many` for
//! many (docs/reference.md). Unnamed statements only, as the worker's: they work behind
//! PgBouncer in transaction mode.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::GenericClient;

/// A job to add: its payload, and what `sendjobs_enqueue` takes with it. Unset, each is
/// the function's default: queue `default`, due now, no transaction id, no keys,
/// `sendjobs.default_max_attempts`, priority 0.
#[derive(Clone, Debug, PartialEq)]
pub struct NewJob {
    payload: serde_json::Value,
    queue: Option<String>,
    due: Option<Due>,
    transaction_id: Option<String>,
    idempotency_key: Option<String>,
    max_attempts: Option<i32>,
    ordering_key: Option<String>,
    priority: Option<i32>,
}

/// When a job is due: at a time, or after a delay on the database's clock (which judges
/// leases and due times: docs/decisions/0004-the-clock.md).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Due {
    At(SystemTime),
    After(Duration),
}

impl NewJob {
    /// A job with this payload (any JSON value).
    pub fn new(payload: serde_json::Value) -> Self {
        Self {
            payload,
            queue: None,
            due: None,
            transaction_id: None,
            idempotency_key: None,
            max_attempts: None,
            ordering_key: None,
            priority: None,
        }
    }

    /// A job whose payload is `payload` serialized to JSON.
    pub fn serialize<T: Serialize + ?Sized>(payload: &T) -> Result<Self, serde_json::Error> {
        Ok(Self::new(serde_json::to_value(payload)?))
    }

    /// The queue (the partner) it goes to.
    pub fn queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = Some(queue.into());
        self
    }

    /// Due at `at` (the database compares it with its own clock).
    pub fn run_at(mut self, at: SystemTime) -> Self {
        self.due = Some(Due::At(at));
        self
    }

    /// Due `delay` after the database's clock reads the enqueue.
    pub fn run_after(mut self, delay: Duration) -> Self {
        self.due = Some(Due::After(delay));
        self
    }

    /// The business row it belongs to (stamped when the job finishes, once a table is
    /// linked: `sendjobs_link_transactions`).
    pub fn transaction_id(mut self, id: impl Into<String>) -> Self {
        self.transaction_id = Some(id.into());
        self
    }

    /// A key that makes the enqueue idempotent: a repeat gives the first job's id.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    /// How many claims it may have before it fails.
    pub fn max_attempts(mut self, attempts: i32) -> Self {
        self.max_attempts = Some(attempts);
        self
    }

    /// Jobs that share this key are claimed one at a time, in the order they were added.
    pub fn ordering_key(mut self, key: impl Into<String>) -> Self {
        self.ordering_key = Some(key.into());
        self
    }

    /// Minutes of head start in the claim order, 0 to 60.
    pub fn priority(mut self, minutes: i32) -> Self {
        self.priority = Some(minutes);
        self
    }

    fn run_at_micros(&self) -> Option<i64> {
        match self.due? {
            Due::At(at) => Some(micros_since_epoch(at)),
            Due::After(_) => None,
        }
    }

    fn delay_micros(&self) -> Option<i64> {
        match self.due? {
            Due::After(delay) => Some(i64::try_from(delay.as_micros()).unwrap_or(i64::MAX)),
            Due::At(_) => None,
        }
    }
}

fn micros_since_epoch(at: SystemTime) -> i64 {
    match at.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_micros()).unwrap_or(i64::MAX),
        Err(before) => -i64::try_from(before.duration().as_micros()).unwrap_or(i64::MAX),
    }
}

/// Where the producer finds the extension's functions.
#[derive(Clone, Debug, Default)]
pub struct Producer {
    schema: Option<String>,
}

impl Producer {
    /// Calls the functions by name, as the connection's `search_path` finds them.
    pub fn new() -> Self {
        Self::default()
    }

    /// Calls the functions of the extension in `schema` (quoted as an identifier).
    pub fn in_schema(schema: impl Into<String>) -> Self {
        Self {
            schema: Some(schema.into()),
        }
    }

    fn function(&self, name: &str) -> String {
        match &self.schema {
            Some(schema) => format!("\"{}\".{name}", schema.replace('"', "\"\"")),
            None => name.to_owned(),
        }
    }

    /// The statement of one job: `sendjobs_enqueue`, its due time from the database's
    /// clock when the job has a delay.
    fn one_statement(&self) -> String {
        format!(
            "SELECT {}($1, coalesce($2, 'default'), {DUE}, $5, $6, $7, $8, coalesce($9, 0))",
            self.function("sendjobs_enqueue")
        )
    }

    fn many_statement(&self) -> String {
        format!(
            "SELECT {}($1, $2, ARRAY(SELECT {DUE_OF} FROM unnest($3::int8[], $4::int8[]) WITH ORDINALITY \
             AS due (at, delay, ord) ORDER BY due.ord), $5, $6, $7, $8, $9)",
            self.function("sendjobs_enqueue_many")
        )
    }

    /// Adds `job` on `client` (a connection, or a transaction: the job is then the
    /// transaction's, and goes if it rolls back) and returns its id; a repeated
    /// idempotency key returns the first job's id.
    pub async fn enqueue<C: GenericClient>(
        &self,
        client: &C,
        job: &NewJob,
    ) -> Result<i64, tokio_postgres::Error> {
        let params: [(&(dyn ToSql + Sync), Type); 9] = [
            (&job.payload, Type::JSONB),
            (&job.queue, Type::TEXT),
            (&job.run_at_micros(), Type::INT8),
            (&job.delay_micros(), Type::INT8),
            (&job.transaction_id, Type::TEXT),
            (&job.idempotency_key, Type::TEXT),
            (&job.max_attempts, Type::INT4),
            (&job.ordering_key, Type::TEXT),
            (&job.priority, Type::INT4),
        ];
        let row = client
            .query_typed_one(&self.one_statement(), &params)
            .await?;
        row.try_get(0)
    }

    /// Adds `jobs` in one statement and returns their ids in order (each as
    /// [`enqueue`](Self::enqueue) would). None is added unless every one is valid.
    pub async fn enqueue_many<C: GenericClient>(
        &self,
        client: &C,
        jobs: &[NewJob],
    ) -> Result<Vec<i64>, tokio_postgres::Error> {
        let columns = Columns::of(jobs);
        let params: [(&(dyn ToSql + Sync), Type); 9] = [
            (&columns.payloads, Type::JSONB_ARRAY),
            (&columns.queues, Type::TEXT_ARRAY),
            (&columns.run_at, Type::INT8_ARRAY),
            (&columns.delays, Type::INT8_ARRAY),
            (&columns.transaction_ids, Type::TEXT_ARRAY),
            (&columns.idempotency_keys, Type::TEXT_ARRAY),
            (&columns.max_attempts, Type::INT4_ARRAY),
            (&columns.ordering_keys, Type::TEXT_ARRAY),
            (&columns.priorities, Type::INT4_ARRAY),
        ];
        let row = client
            .query_typed_one(&self.many_statement(), &params)
            .await?;
        row.try_get(0)
    }
}

/// A job's due time from its two parameters: a time (microseconds since 1970), or a
/// delay on the database's clock; neither, now (the function's default).
const DUE: &str = "CASE WHEN $3::int8 IS NOT NULL THEN 'epoch'::timestamptz + $3 * interval '1 microsecond' \
                   WHEN $4::int8 IS NOT NULL THEN clock_timestamp() + $4 * interval '1 microsecond' END";
/// The same, of one element of the two arrays.
const DUE_OF: &str = "CASE WHEN due.at IS NOT NULL THEN 'epoch'::timestamptz + due.at * interval '1 microsecond' \
                      WHEN due.delay IS NOT NULL THEN clock_timestamp() + due.delay * interval '1 microsecond' END";

/// `sendjobs_enqueue_many`'s arrays, one value per job (its defaults where a job has
/// none: queue `default`, priority 0).
struct Columns<'a> {
    payloads: Vec<&'a serde_json::Value>,
    queues: Vec<&'a str>,
    run_at: Vec<Option<i64>>,
    delays: Vec<Option<i64>>,
    transaction_ids: Vec<Option<&'a str>>,
    idempotency_keys: Vec<Option<&'a str>>,
    max_attempts: Vec<Option<i32>>,
    ordering_keys: Vec<Option<&'a str>>,
    priorities: Vec<i32>,
}

impl<'a> Columns<'a> {
    fn of(jobs: &'a [NewJob]) -> Self {
        Self {
            payloads: jobs.iter().map(|job| &job.payload).collect(),
            queues: jobs
                .iter()
                .map(|job| job.queue.as_deref().unwrap_or("default"))
                .collect(),
            run_at: jobs.iter().map(NewJob::run_at_micros).collect(),
            delays: jobs.iter().map(NewJob::delay_micros).collect(),
            transaction_ids: jobs
                .iter()
                .map(|job| job.transaction_id.as_deref())
                .collect(),
            idempotency_keys: jobs
                .iter()
                .map(|job| job.idempotency_key.as_deref())
                .collect(),
            max_attempts: jobs.iter().map(|job| job.max_attempts).collect(),
            ordering_keys: jobs.iter().map(|job| job.ordering_key.as_deref()).collect(),
            priorities: jobs.iter().map(|job| job.priority.unwrap_or(0)).collect(),
        }
    }
}

/// [`Producer::enqueue`] with the functions found by the connection's `search_path`.
pub async fn enqueue<C: GenericClient>(
    client: &C,
    job: &NewJob,
) -> Result<i64, tokio_postgres::Error> {
    Producer::new().enqueue(client, job).await
}

/// [`Producer::enqueue_many`] with the functions found by the connection's `search_path`.
pub async fn enqueue_many<C: GenericClient>(
    client: &C,
    jobs: &[NewJob],
) -> Result<Vec<i64>, tokio_postgres::Error> {
    Producer::new().enqueue_many(client, jobs).await
}

/// The same calls on sqlx (the `sqlx` feature): on a `&mut PgConnection`, a
/// `&mut Transaction` (`&mut *tx`) or a `&PgPool`, each one unnamed statement.
#[cfg(feature = "sqlx")]
pub mod sqlx {
    use super::{Columns, NewJob, Producer};

    impl Producer {
        /// [`Producer::enqueue`] on a sqlx executor.
        pub async fn enqueue_sqlx<'e, E: ::sqlx::PgExecutor<'e>>(
            &self,
            executor: E,
            job: &NewJob,
        ) -> Result<i64, ::sqlx::Error> {
            ::sqlx::query_scalar(&self.one_statement())
                .persistent(false)
                .bind(&job.payload)
                .bind(job.queue.as_deref())
                .bind(job.run_at_micros())
                .bind(job.delay_micros())
                .bind(job.transaction_id.as_deref())
                .bind(job.idempotency_key.as_deref())
                .bind(job.max_attempts)
                .bind(job.ordering_key.as_deref())
                .bind(job.priority)
                .fetch_one(executor)
                .await
        }

        /// [`Producer::enqueue_many`] on a sqlx executor.
        pub async fn enqueue_many_sqlx<'e, E: ::sqlx::PgExecutor<'e>>(
            &self,
            executor: E,
            jobs: &[NewJob],
        ) -> Result<Vec<i64>, ::sqlx::Error> {
            let columns = Columns::of(jobs);
            let payloads: Vec<serde_json::Value> = columns.payloads.into_iter().cloned().collect();
            ::sqlx::query_scalar(&self.many_statement())
                .persistent(false)
                .bind(payloads)
                .bind(columns.queues)
                .bind(columns.run_at)
                .bind(columns.delays)
                .bind(columns.transaction_ids)
                .bind(columns.idempotency_keys)
                .bind(columns.max_attempts)
                .bind(columns.ordering_keys)
                .bind(columns.priorities)
                .fetch_one(executor)
                .await
        }
    }

    /// [`Producer::enqueue_sqlx`] with the functions found by the connection's `search_path`.
    pub async fn enqueue<'e, E: ::sqlx::PgExecutor<'e>>(
        executor: E,
        job: &NewJob,
    ) -> Result<i64, ::sqlx::Error> {
        Producer::new().enqueue_sqlx(executor, job).await
    }

    /// [`Producer::enqueue_many_sqlx`] with the functions found by the connection's `search_path`.
    pub async fn enqueue_many<'e, E: ::sqlx::PgExecutor<'e>>(
        executor: E,
        jobs: &[NewJob],
    ) -> Result<Vec<i64>, ::sqlx::Error> {
        Producer::new().enqueue_many_sqlx(executor, jobs).await
    }
}
