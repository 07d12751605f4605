#![doc = include_str!("../README.md")]
//!
//! # The API
//!
//! - [`enqueue`] and [`enqueue_many`]: jobs added on your connection or in your
//!   transaction, described by [`NewJob`]; [`Producer`] names the extension's schema.
//!   With the `sqlx` feature, the same on sqlx ([`mod@sqlx`]).
//! - [`Config`]: the settings, built from [`Config::new`]; [`Shutdown`], what a stop
//!   does with the running sends.
//! - [`Worker`]: [`Worker::new`] for payloads as [`serde_json::Value`],
//!   [`Worker::typed`] for payloads of your type; [`Worker::run`] runs it until a
//!   future completes ([`shutdown_signal`]: SIGINT or SIGTERM).
//! - [`Job`]: what a send is given; [`Outcome`]: what it returns.
//! - [`Counters`] and their [`Snapshot`]: what the worker has done.
//! - [`Error`]: what stops a worker, with [`ConfigError`] (and the [`Setting`] it
//!   names) and [`ProtocolError`]; [`SqlState`] to compare [`Error::sqlstate`] with.
//! - [`native_tls`]: the TLS crate whose connector [`Config::tls`] takes.

#![warn(missing_docs)]

mod config;
mod counters;
mod db;
mod enqueue;
mod error;
mod job;
mod worker;

pub use config::{Config, Shutdown};
pub use counters::{Counters, Snapshot};
#[cfg(feature = "sqlx")]
pub use enqueue::sqlx;
pub use enqueue::{enqueue, enqueue_many, NewJob, Producer};
pub use error::{ConfigError, Error, ProtocolError, Result, Setting};
pub use job::{Job, Outcome};
/// The TLS crate of [`Config::tls`]'s connector (OpenSSL on Linux), re-exported so that
/// its version is the one the worker was built with.
pub use native_tls;
/// The SQLSTATE codes of PostgreSQL, to compare [`Error::sqlstate`] with.
pub use tokio_postgres::error::SqlState;
pub use worker::{shutdown_signal, Worker};
