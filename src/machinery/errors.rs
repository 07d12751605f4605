//! Every error sendjobs raises, each with its documented SQLSTATE (docs/reference.md, "SQLSTATEs").

use pgrx::pg_sys::panic::ErrorReport;
use pgrx::prelude::*;

use crate::machinery::sql_types::SqlRole;

#[derive(Debug, thiserror::Error)]
pub enum SendJobsError {
    /// 22004 null_value_not_allowed
    #[error("sendjobs: {0} must not be NULL")]
    NullArgument(&'static str),

    /// 22004 null_value_not_allowed: an element of an array argument, counted from 1
    #[error("sendjobs: {array}[{position}] must not be NULL")]
    NullElement {
        array: &'static str,
        position: usize,
    },

    /// 22023 invalid_parameter_value
    #[error("sendjobs: batch must be between 1 and sendjobs.max_batch ({max}), got {got}")]
    BatchOutOfRange { got: i32, max: i32 },

    /// 22023 invalid_parameter_value
    #[error("sendjobs: {0} must not be negative")]
    Negative(&'static str),

    /// 22023 invalid_parameter_value
    #[error("sendjobs: unknown outcome \"{0}\"; expected sent, failed or retry")]
    UnknownOutcome(String),

    /// 22023 invalid_parameter_value
    #[error("sendjobs: {0}")]
    InvalidArgument(String),

    /// 22023 invalid_parameter_value: a new queue's name that is not a name
    /// (src/machinery/queue_names.rs); `escaped` as queue_names::escaped draws it, so that
    /// the message draws as what it holds
    #[error("sendjobs: a new queue's name may not hold {problem}: {escaped}")]
    NotAName {
        escaped: String,
        problem: &'static str,
    },

    /// P0002 no_data_found
    #[error("sendjobs: no send job with id {0}")]
    UnknownJob(i64),

    /// 55000 object_not_in_prerequisite_state: sendjobs_redrive of a job that is not failed
    #[error("sendjobs: job {id} is {status}; only failed jobs can be redriven")]
    NotRedrivable { id: i64, status: String },

    /// 55000 object_not_in_prerequisite_state: sendjobs_enqueue with a key whose job was
    /// deleted other than by sendjobs_purge (which deletes the key with it)
    #[error("sendjobs: idempotency key {key:?} is held by job {job_id}, which no longer exists")]
    OrphanKey { key: String, job_id: i64 },

    /// 55000 object_not_in_prerequisite_state: this library called for a catalog of
    /// another release
    #[error(
        "sendjobs: the extension's catalog is at version {0}, this library is version {library}",
        library = env!("CARGO_PKG_VERSION")
    )]
    CatalogVersion(String),

    /// 0A000 feature_not_supported: a claim that must take its turn (a queue with flow
    /// control, ordered jobs) in a transaction whose snapshot was taken before the turn
    #[error(
        "sendjobs: a claim of {0} takes its turn with the other claims, which needs READ COMMITTED"
    )]
    TurnNeedsReadCommitted(String),

    /// 40001 serialization_failure: a claim under REPEATABLE READ or SERIALIZABLE while a
    /// change of a queue's pause or limits is committing
    #[error("sendjobs: a change of a queue's pause or limits is committing")]
    SettingsChanging,

    /// 42703 undefined_column
    #[error("sendjobs: column \"{column}\" of relation {table} does not exist")]
    UndefinedColumn { table: String, column: String },

    /// 42501 insufficient_privilege
    #[error("sendjobs: permission denied: {0}")]
    PermissionDenied(String),

    /// 42704 undefined_object: the role that linked the business table was dropped
    #[error("sendjobs: the role that linked {0} no longer exists")]
    LinkerGone(String),

    /// 42704 undefined_object: no consumer of the outbox by that name
    #[error("sendjobs: there is no consumer {0:?} of the outbox")]
    UnknownConsumer(String),

    /// 42710 duplicate_object: a consumer of the outbox by that name exists already
    #[error("sendjobs: a consumer {0:?} of the outbox exists already")]
    DuplicateConsumer(String),

    /// 42809 wrong_object_type
    #[error("sendjobs: {0} is not a table")]
    NotATable(String),

    /// 23514 check_violation, raised by the terminal guard when sendjobs.guard_action = error
    #[error(
        "sendjobs: refused to change {column} of {table} from terminal {from} to {to} ({key})"
    )]
    TerminalTransition {
        table: String,
        column: String,
        key: String,
        from: String,
        to: String,
    },

    /// 39P01 trigger_protocol_violated: the guard attached other than BEFORE UPDATE FOR EACH ROW
    #[error("sendjobs: {0}")]
    TriggerMisuse(String),

    /// XX000 internal_error: a broken assumption, never bad input.
    #[error("sendjobs: {0}")]
    Internal(String),

    /// Errors of the SPI layer (a query failed to prepare or run): internal errors.
    #[error("sendjobs: {0}")]
    Spi(#[from] pgrx::spi::SpiError),
}

impl SendJobsError {
    pub fn sqlstate(&self) -> PgSqlErrorCode {
        use PgSqlErrorCode::*;
        match self {
            Self::NullArgument(_) | Self::NullElement { .. } => ERRCODE_NULL_VALUE_NOT_ALLOWED,
            Self::BatchOutOfRange { .. }
            | Self::Negative(_)
            | Self::UnknownOutcome(_)
            | Self::InvalidArgument(_)
            | Self::NotAName { .. } => ERRCODE_INVALID_PARAMETER_VALUE,
            Self::UnknownJob(_) => ERRCODE_NO_DATA_FOUND,
            Self::NotRedrivable { .. } | Self::OrphanKey { .. } | Self::CatalogVersion(_) => {
                ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE
            }
            Self::TurnNeedsReadCommitted(_) => ERRCODE_FEATURE_NOT_SUPPORTED,
            Self::SettingsChanging => ERRCODE_T_R_SERIALIZATION_FAILURE,
            Self::UndefinedColumn { .. } => ERRCODE_UNDEFINED_COLUMN,
            Self::NotATable(_) => ERRCODE_WRONG_OBJECT_TYPE,
            Self::PermissionDenied(_) => ERRCODE_INSUFFICIENT_PRIVILEGE,
            Self::LinkerGone(_) | Self::UnknownConsumer(_) => ERRCODE_UNDEFINED_OBJECT,
            Self::DuplicateConsumer(_) => ERRCODE_DUPLICATE_OBJECT,
            Self::TerminalTransition { .. } => ERRCODE_CHECK_VIOLATION,
            Self::TriggerMisuse(_) => ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED,
            Self::Internal(_) | Self::Spi(_) => ERRCODE_INTERNAL_ERROR,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            Self::TerminalTransition { .. } => Some(
                "Terminal states are absorbing; only the declared exits may leave them. \
                 SET sendjobs.guard_action = skip to leave such rows unchanged instead.",
            ),
            Self::UnknownOutcome(_) => {
                Some("Pass the outcome as text: 'sent', 'failed' or 'retry'.")
            }
            Self::CatalogVersion(_) => Some(
                "Each release's functions use its own library (sendjobs-<version>): run \
                 ALTER EXTENSION sendjobs UPDATE, or call the functions its catalog defines.",
            ),
            Self::TurnNeedsReadCommitted(_) => Some(
                "Under REPEATABLE READ or SERIALIZABLE the count of jobs in flight, and the \
                 jobs of an ordering key, would be read in a snapshot taken before the turn: \
                 claim in a READ COMMITTED transaction of its own.",
            ),
            Self::NotAName { .. } => Some(
                "Queue names are read in logs and on screens: use printable characters, \
                 with no control, invisible or bidirectional ones, and no white space at \
                 either end.",
            ),
            Self::SettingsChanging => Some(
                "Under REPEATABLE READ or SERIALIZABLE a claim reads which queues have flow \
                 control as committed now, and cannot while a change commits: retry the \
                 transaction.",
            ),
            Self::LinkerGone(_) => Some(
                "Stamps run as the role that linked the table: link it again \
                 (sendjobs_link_transactions) as a role that may update it.",
            ),
            Self::OrphanKey { .. } => Some(
                "Delete finished jobs with sendjobs_purge, which frees their keys; a job \
                 deleted by hand leaves its key in send_job_keys: delete that row too.",
            ),
            _ => None,
        }
    }

    fn report(&self) -> ErrorReport {
        let report = ErrorReport::new(self.sqlstate(), self.to_string(), "sendjobs");
        match self.hint() {
            Some(hint) => report.set_hint(hint),
            None => report,
        }
    }

    /// Raises this error as a PostgreSQL ERROR; the caller's statement is aborted.
    pub fn raise(self) -> ! {
        self.report().report(PgLogLevel::ERROR);
        unreachable!("an ERROR report does not return")
    }

    /// Emits this error's text as a WARNING and carries on.
    pub fn warn(&self) {
        ErrorReport::new(
            PgSqlErrorCode::ERRCODE_WARNING,
            self.to_string(),
            "sendjobs",
        )
        .report(PgLogLevel::WARNING);
    }
}

pub type Result<T> = std::result::Result<T, SendJobsError>;

/// Unwraps a required argument, or names it in a 22004 error.
pub fn required<T>(value: Option<T>, name: &'static str) -> Result<T> {
    value.ok_or(SendJobsError::NullArgument(name))
}

/// The longest queue name, in bytes. A queue's wake-up carries its name as the NOTIFY
/// payload, whose limit is 8,000 bytes: before 0.2.1 a longer name made every enqueue into
/// the queue fail once its wake-ups were on. 128 leaves room and is more than any partner
/// name needs (tests/pg_regress/sql/errors.sql).
pub const MAX_QUEUE_BYTES: usize = 128;

/// Refuses a queue name that is empty or longer than `MAX_QUEUE_BYTES` (22023).
pub fn queue_name(queue: &str) -> Result<&str> {
    short_name(queue, "queue")
}

/// Refuses a name (of a queue, of a consumer of the outbox) that is empty or longer than
/// `MAX_QUEUE_BYTES` (22023).
pub fn short_name<'a>(name: &'a str, what: &str) -> Result<&'a str> {
    if name.is_empty() {
        return Err(SendJobsError::InvalidArgument(format!(
            "{what} must not be empty"
        )));
    }
    if name.len() > MAX_QUEUE_BYTES {
        return Err(SendJobsError::InvalidArgument(format!(
            "a {what} name must be at most {MAX_QUEUE_BYTES} bytes, got {}",
            name.len()
        )));
    }
    Ok(name)
}

/// Refuses an infinite timestamp, and one before the year 1 (22023). A job due at
/// -infinity stays first in the claim order whatever is enqueued after it, and one due at
/// +infinity is never claimed; before 0.2.1 either could be given, and a job due at
/// -infinity made every sendjobs_stats call fail (22008) until it was claimed. A time
/// within a head start of the earliest one Postgres holds (4714 BC) made the claim
/// order's subtraction fail (22008), the whole batch of a finalize with it
/// (tests/pg_regress/sql/errors.sql, stats.sql).
pub fn finite(at: TimestampWithTimeZone, name: &'static str) -> Result<TimestampWithTimeZone> {
    if at.is_finite() && i64::from(at) >= YEAR_ONE_MICROS {
        Ok(at)
    } else {
        Err(SendJobsError::InvalidArgument(format!(
            "{name} must be a finite timestamp, from the year 1 on"
        )))
    }
}

/// 0001-01-01 00:00:00+00 as Postgres keeps a timestamptz: microseconds from 2000-01-01
/// (730,119 days before it).
const YEAR_ONE_MICROS: i64 = -730_119 * 86_400 * 1_000_000;

/// Unwraps one element of an `ids` array, refusing a NULL (22004) and an id already in
/// `seen` (22023: one call may act on a job once).
pub fn distinct_id(id: Option<i64>, seen: &mut std::collections::HashSet<i64>) -> Result<i64> {
    let id = required(id, "an element of ids")?;
    if !seen.insert(id) {
        return Err(SendJobsError::InvalidArgument(format!(
            "job {id} appears twice in ids"
        )));
    }
    Ok(id)
}

/// Runs a function body and raises its error, if any, with the right SQLSTATE.
/// A regrole argument that names a role: regrole reads '-' as no role (oid 0).
pub fn named_role(role: SqlRole, name: &'static str) -> Result<SqlRole> {
    if role.0 == pg_sys::InvalidOid {
        return Err(SendJobsError::InvalidArgument(format!(
            "{name} must name a role; '-' names none"
        )));
    }
    Ok(role)
}

pub fn or_raise<T>(result: Result<T>) -> T {
    result.unwrap_or_else(|error| error.raise())
}
