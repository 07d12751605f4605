//! The GUCs of sendjobs. Each is read through a typed accessor; all are per-session settable.

use std::ffi::CStr;

use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting, PostgresGucEnum};

#[derive(PostgresGucEnum, Clone, Copy, PartialEq, Eq, Debug)]
pub enum GuardAction {
    /// Leave the row as it was, let the statement go on, and raise a WARNING.
    #[name = c"skip"]
    Skip,
    /// Fail the statement with SQLSTATE 23514.
    #[name = c"error"]
    Error,
}

static DEFAULT_LEASE_MS: GucSetting<i32> = GucSetting::<i32>::new(90_000);
static MAX_BATCH: GucSetting<i32> = GucSetting::<i32>::new(1_000);
static GUARD_ACTION: GucSetting<GuardAction> = GucSetting::<GuardAction>::new(GuardAction::Skip);
static RETRY_BACKOFF_BASE_MS: GucSetting<i32> = GucSetting::<i32>::new(10_000);
static RETRY_BACKOFF_MAX_MS: GucSetting<i32> = GucSetting::<i32>::new(3_600_000);
static DEFAULT_MAX_ATTEMPTS: GucSetting<i32> = GucSetting::<i32>::new(5);

fn define_ms(
    name: &'static CStr,
    short: &'static CStr,
    long: &'static CStr,
    setting: &'static GucSetting<i32>,
) {
    GucRegistry::define_int_guc(
        name,
        short,
        long,
        setting,
        0,
        i32::MAX,
        GucContext::Userset,
        GucFlags::UNIT_MS,
    );
}

pub fn init() {
    define_ms(
        c"sendjobs.default_lease",
        c"Lease a claim gets when sendjobs_claim or sendjobs_heartbeat is called without one.",
        c"Choose it longer than the slowest send (the default 90 s is three times a 30 s \
           timeout): a job whose lease expires is claimed again and may be sent twice. \
           A value without a unit is milliseconds.",
        &DEFAULT_LEASE_MS,
    );
    GucRegistry::define_int_guc(
        c"sendjobs.max_batch",
        c"Largest batch one sendjobs_claim call may take.",
        c"A larger batch fails with SQLSTATE 22023. Bounds the rows one claim locks and \
           returns.",
        &MAX_BATCH,
        1,
        1_000_000,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_enum_guc(
        c"sendjobs.guard_action",
        c"What the terminal guard does with a refused transition: skip (WARNING) or error (SQLSTATE 23514).",
        c"skip leaves the row as it was and lets the statement go on; error fails the \
           statement, and so a finalize whose business-row stamp is refused.",
        &GUARD_ACTION,
        GucContext::Userset,
        GucFlags::default(),
    );
    define_ms(
        c"sendjobs.retry_backoff_base",
        c"Delay before the first retry when sendjobs_finalize(..., 'retry') gets no retry_at; doubles per attempt.",
        c"The delay after attempt n is this times 2^(n - 1), capped at \
           sendjobs.retry_backoff_max; no jitter. A value without a unit is milliseconds.",
        &RETRY_BACKOFF_BASE_MS,
    );
    define_ms(
        c"sendjobs.retry_backoff_max",
        c"Upper bound of the retry backoff.",
        c"A value without a unit is milliseconds.",
        &RETRY_BACKOFF_MAX_MS,
    );
    GucRegistry::define_int_guc(
        c"sendjobs.default_max_attempts",
        c"max_attempts of a job enqueued without one.",
        c"A retry finalize of a job that has used its attempts fails the job instead.",
        &DEFAULT_MAX_ATTEMPTS,
        1,
        i32::MAX,
        GucContext::Userset,
        GucFlags::default(),
    );
}

pub fn default_lease_ms() -> i32 {
    DEFAULT_LEASE_MS.get()
}

pub fn max_batch() -> i32 {
    MAX_BATCH.get()
}

pub fn guard_action() -> GuardAction {
    GUARD_ACTION.get()
}

pub fn retry_backoff_base_ms() -> i32 {
    RETRY_BACKOFF_BASE_MS.get()
}

pub fn retry_backoff_max_ms() -> i32 {
    RETRY_BACKOFF_MAX_MS.get()
}

pub fn default_max_attempts() -> i32 {
    DEFAULT_MAX_ATTEMPTS.get()
}
