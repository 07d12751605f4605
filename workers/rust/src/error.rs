//! The one error type of the crate.

use tokio_postgres::error::SqlState;

/// What can stop a [`Worker`](crate::Worker) or fail one of its calls.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A setting of [`Config`](crate::Config) that cannot work (a zero lease, a zero batch).
    #[error("sendjobs-worker: {0}")]
    Config(String),

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

    /// The server answered with something this crate does not expect (a result other than
    /// `applied` or `stale`): an extension of another version than this crate's.
    #[error("sendjobs-worker: unexpected answer from the server: {0}")]
    Protocol(String),
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
    /// by the server: `pg_terminate_backend`, a restart, a pooler dropping it). Such calls
    /// are retried on a new connection; any other database error is reported.
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
                    })
            }
            _ => false,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
