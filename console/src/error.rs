//! The console's errors: at startup (StartError), and a request's (PageError), which
//! becomes a page with its status.

use std::net::SocketAddr;

use axum::http::StatusCode;

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("the connection string: {0}")]
    DatabaseUrl(tokio_postgres::Error),
    #[error("connecting to the database: {}", with_causes(.0))]
    Connect(tokio_postgres::Error),
    #[error(
        "no connection string: set SENDJOBS_CONSOLE_DATABASE_URL, or name a file holding it \
         with --database-url-file"
    )]
    NoDatabaseUrl,
    #[error("the connection string is given twice: by --database-url-file and by SENDJOBS_CONSOLE_DATABASE_URL")]
    DatabaseUrlTwice,
    #[error("--database-url-file {}: {source}", path.display())]
    DatabaseUrlFile {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("TLS to the database: {0}")]
    Tls(String),
    #[error("the pool: {0}")]
    Pool(String),
    #[error("the database: {0}")]
    Database(#[from] DbError),
    #[error("the extension sendjobs is not installed in this database")]
    NoExtension,
    #[error(
        "the role {0} has not the monitor level of sendjobs 0.5.0 (it may not run sendjobs_stats \
         or read send_jobs_finished): SELECT sendjobs_grant('{0}', 'monitor'), after \
         ALTER EXTENSION sendjobs UPDATE if the extension is older"
    )]
    NotMonitor(String),
    #[error("SENDJOBS_CONSOLE_TOKEN must be at least 16 characters (it is {0})")]
    ShortToken(usize),
    #[error("the random secret: {0}")]
    Random(getrandom::Error),
    #[error("listening on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// An error and its causes, as one line (a TLS handshake's says why).
fn with_causes(err: &dyn std::error::Error) -> String {
    let mut line = err.to_string();
    let mut cause = err.source();
    while let Some(err) = cause {
        line.push_str(": ");
        line.push_str(&err.to_string());
        cause = err.source();
    }
    line
}

/// A database call that failed: no connection from the pool, or the statement.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("no connection: {0}")]
    Pool(#[from] deadpool_postgres::PoolError),
    #[error("{}", describe(.0))]
    Query(#[from] tokio_postgres::Error),
}

/// The server's message with its SQLSTATE, as psql's verbose form prints it.
fn describe(err: &tokio_postgres::Error) -> String {
    match err.as_db_error() {
        Some(db) => format!("{}: {}", db.code().code(), db.message()),
        None => err.to_string(),
    }
}

impl DbError {
    pub fn sqlstate(&self) -> Option<&str> {
        match self {
            DbError::Query(err) => err.code().map(|code| code.code()),
            DbError::Pool(_) => None,
        }
    }
}

/// Why a request got no page of its own.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    TooLarge(String),
    #[error("{0}")]
    Timeout(String),
    #[error("the database: {0}")]
    Database(#[from] DbError),
}

impl PageError {
    pub fn status(&self) -> StatusCode {
        match self {
            PageError::BadRequest(_) => StatusCode::BAD_REQUEST,
            PageError::Forbidden(_) => StatusCode::FORBIDDEN,
            PageError::NotFound(_) => StatusCode::NOT_FOUND,
            PageError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            PageError::Timeout(_) => StatusCode::REQUEST_TIMEOUT,
            // Bad input the database refused (a timestamp it cannot read, a value out of
            // range): the request's fault, and nothing changed.
            PageError::Database(err) if err.sqlstate().is_some_and(|s| s.starts_with("22")) => {
                StatusCode::BAD_REQUEST
            }
            PageError::Database(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

pub type PageResult<T> = Result<T, PageError>;
