//! Every error sendjobs raises, each with its documented SQLSTATE (see the README).

use pgrx::pg_sys::panic::ErrorReport;
use pgrx::prelude::*;

#[derive(Debug, thiserror::Error)]
pub enum SendJobsError {
    /// 22004 null_value_not_allowed
    #[error("sendjobs: {0} must not be NULL")]
    NullArgument(&'static str),

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

    /// 42703 undefined_column
    #[error("sendjobs: column \"{column}\" of relation {table} does not exist")]
    UndefinedColumn { table: String, column: String },

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
            Self::NullArgument(_) => ERRCODE_NULL_VALUE_NOT_ALLOWED,
            Self::BatchOutOfRange { .. }
            | Self::Negative(_)
            | Self::UnknownOutcome(_)
            | Self::InvalidArgument(_) => ERRCODE_INVALID_PARAMETER_VALUE,
            Self::UnknownJob(_) => ERRCODE_NO_DATA_FOUND,
            Self::NotRedrivable { .. } | Self::OrphanKey { .. } => {
                ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE
            }
            Self::UndefinedColumn { .. } => ERRCODE_UNDEFINED_COLUMN,
            Self::NotATable(_) => ERRCODE_WRONG_OBJECT_TYPE,
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
pub fn or_raise<T>(result: Result<T>) -> T {
    result.unwrap_or_else(|error| error.raise())
}
