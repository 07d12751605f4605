//! A worker for [sendjobs](https://github.com/) queues: the PostgreSQL extension that
//! keeps a send-job queue's leases, fencing tokens and outbox inside the database.
//!
//! A [`Worker`] claims jobs in batches (`sendjobs_claim`), runs your async send function
//! once per claimed job, each in a task of its own and under a timeout, renews the lease
//! while a send runs past half of it (`sendjobs_heartbeat`), and finalizes what the send
//! returns (`sendjobs_finalize`, or `sendjobs_finalize_batch` for the sent results of the
//! moment). A job lost meanwhile (its lease expired and another worker took it, or it was
//! cancelled) has its send stopped. Idle, it sleeps until `NOTIFY sendjobs_wakeup` or a
//! poll interval; it reconnects after a lost connection, backing off; it stops on a
//! signal, finishing or abandoning the sends still running, as configured; and it keeps
//! [`Counters`] you can export.
//!
//! ```no_run
//! use std::time::Duration;
//! use sendjobs_worker::{Config, Job, Outcome, Worker};
//!
//! async fn send(job: Job) -> Outcome {
//!     // Call the partner with job.payload and, as its idempotency key, the job's
//!     // (or "sendjobs-{id}"), so that it can drop a repeat (delivery is at-least-once).
//!     match deliver(&job.payload).await {
//!         Ok(()) => Outcome::Sent,
//!         Err(e) if e.is_permanent() => Outcome::failed(e.to_string()),
//!         Err(e) => Outcome::retry(e.to_string()), // the server's backoff
//!     }
//! }
//! # struct PartnerError; impl PartnerError { fn is_permanent(&self) -> bool { false } }
//! # impl std::fmt::Display for PartnerError { fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result { f.write_str("down") } }
//! # async fn deliver(_: &serde_json::Value) -> Result<(), PartnerError> { Ok(()) }
//!
//! # async fn main_() -> Result<(), sendjobs_worker::Error> {
//! let config = Config::new("host=/var/run/postgresql dbname=app user=app_worker")
//!     .queue("acme")
//!     .lease(Duration::from_secs(30));
//! let worker = Worker::new(config)?;
//! let counters = worker.counters(); // export counters.snapshot() as you like
//! worker.run(send, sendjobs_worker::shutdown_signal()).await
//! # }
//! ```
//!
//! # What the database needs
//!
//! The role the worker connects as needs the `worker` access level
//! (`SELECT sendjobs_grant('app_worker', 'worker')`), and `UPDATE` on a linked business
//! table if there is one. The worker names the extension's schema in every call
//! ([`Config::schema`]), so the role's `search_path` plays no part.
//!
//! # Behind a pooler
//!
//! Every call is one unnamed statement (`query_typed`), and no call runs `SET`, so the
//! worker works behind PgBouncer in transaction mode. `LISTEN` does not survive there:
//! set [`Config::listen`] to `false` and rely on the poll interval, or point the worker at
//! the server itself.
//!
//! # TLS
//!
//! Give [`Config::tls`] a connector: the worker then requires TLS over TCP (unless the
//! connection string says `sslmode=disable`). Without a connector, it connects in the
//! clear (a Unix socket, a private network).
//!
//! # What it does not do
//!
//! After a lost connection, a finalize is made again on the new one; if the first had
//! applied, the second answers `stale` and is counted so: the outbox (`send_job_events`)
//! is the record of what was finished. A claim whose answer was lost with the connection
//! leaves the jobs it took to their leases, an attempt spent each.

mod config;
mod counters;
mod db;
mod error;
mod job;
mod worker;

pub use config::{Config, Shutdown};
pub use counters::{Counters, Snapshot};
pub use error::{ConfigError, Error, ProtocolError, Result, Setting};
pub use job::{Job, Outcome};
pub use native_tls;
pub use tokio_postgres::error::SqlState;
pub use worker::{shutdown_signal, Worker};
