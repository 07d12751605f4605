//! The crate's errors: [`Error`], and the typed reasons it carries ([`ConfigError`],
//! [`ProtocolError`]).

use std::fmt;
use std::time::Duration;

use tokio_postgres::error::SqlState;

/// What can stop a [`Worker`](crate::Worker) or fail one of its calls.
///
/// New variants may come in a minor release (`#[non_exhaustive]`): match the ones you
/// act on and keep a `_` arm.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A setting of [`Config`](crate::Config) that cannot work (a lease under 10 ms, a
    /// zero batch): [`Worker::new`](crate::Worker::new) and
    /// [`Worker::typed`](crate::Worker::typed) refuse it, before any connection.
    #[error("sendjobs-worker: {0}")]
    Config(#[from] ConfigError),

    /// The database refused a call or could not be reached. [`Error::sqlstate`] says which
    /// (sendjobs documents its SQLSTATEs: 22023 for an argument out of range, and so on).
    #[error("sendjobs-worker: {0}")]
    Db(#[from] tokio_postgres::Error),

    /// The worker was stopping, and the database did not answer within a lease of the
    /// shutdown (away, or no longer answering): the call was given up. Its job, if any,
    /// comes back to be claimed when its lease expires.
    #[error(
        "sendjobs-worker: no answer from the database within a lease of the shutdown: given up"
    )]
    GivenUp,

    /// The server answered with something this crate does not expect: an extension of
    /// another version than this crate's.
    #[error("sendjobs-worker: unexpected answer from the server: {0}")]
    Protocol(#[from] ProtocolError),
}

/// A [`Config`](crate::Config) setting that cannot work, with the value it was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A setting that must not be zero is: a batch or a concurrency of 0 would claim
    /// nothing, a zero send timeout would stop every send at once, a zero poll interval
    /// would claim in a busy loop.
    #[error("{setting} must not be zero")]
    Zero {
        /// Which setting.
        setting: Setting,
    },

    /// The lease is shorter than [`Config::MIN_LEASE`](crate::Config::MIN_LEASE) (the
    /// worker renews a lease every half lease: a zero one could not be renewed at all).
    #[error(
        "the lease must be at least {:?}, got {lease:?}",
        crate::Config::MIN_LEASE
    )]
    LeaseTooShort {
        /// The lease given.
        lease: Duration,
    },

    /// The reconnect backoff starts at zero, or ends below where it starts.
    #[error(
        "the reconnect backoff must be non-zero, its max at least its min, got {min:?} to {max:?}"
    )]
    ReconnectBackoff {
        /// The first wait given.
        min: Duration,
        /// The longest wait given.
        max: Duration,
    },
}

/// A setting of [`Config`](crate::Config), as named in a [`ConfigError`]. It displays as
/// the name of the `Config` method that sets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Setting {
    /// [`Config::batch`](crate::Config::batch).
    Batch,
    /// [`Config::concurrency`](crate::Config::concurrency).
    Concurrency,
    /// [`Config::send_timeout`](crate::Config::send_timeout).
    SendTimeout,
    /// [`Config::poll_interval`](crate::Config::poll_interval).
    PollInterval,
    /// The timeout of [`Config::listen_check`](crate::Config::listen_check).
    ListenCheckTimeout,
}

impl fmt::Display for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Batch => "batch",
            Self::Concurrency => "concurrency",
            Self::SendTimeout => "send_timeout",
            Self::PollInterval => "poll_interval",
            Self::ListenCheckTimeout => "listen_check's timeout",
        })
    }
}

/// An answer of the server that this crate does not expect.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// A fenced call (a heartbeat, a finalize) answered something other than `applied`
    /// or `stale`.
    #[error("a fenced call returned {answer:?}")]
    UnexpectedAnswer {
        /// What it answered.
        answer: String,
    },

    /// A call that answers one row answered another number of them.
    #[error("{rows} rows where one was expected")]
    RowCount {
        /// How many rows it answered.
        rows: usize,
    },
}

impl Error {
    /// The SQLSTATE of a database error, if the server sent one (a lost connection has none).
    pub fn sqlstate(&self) -> Option<&SqlState> {
        match self {
            Self::Db(e) => e.code(),
            _ => None,
        }
    }

    /// True when the call failed because the connection is gone (closed, reset, or ended
    /// by the server: `pg_terminate_backend`, a restart, a pooler dropping it), or because
    /// its server no longer takes writes (25006, `read_only_sql_transaction`: a primary
    /// demoted by a failover). Such calls are retried on a new connection, which goes to
    /// a host that takes writes; any other database error is reported.
    pub fn is_connection_lost(&self) -> bool {
        match self {
            Self::Db(e) => {
                e.is_closed()
                    || std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>())
                    || e.code().is_some_and(|c| {
                        c.code().starts_with("08")
                            || *c == SqlState::ADMIN_SHUTDOWN
                            || *c == SqlState::CRASH_SHUTDOWN
                            || *c == SqlState::CANNOT_CONNECT_NOW
                            || *c == SqlState::READ_ONLY_SQL_TRANSACTION
                    })
            }
            _ => false,
        }
    }
}

/// `Result` with this crate's [`Error`] by default.
pub type Result<T, E = Error> = std::result::Result<T, E>;
