//! The GUCs of sendjobs, each read through a typed accessor. Who may set each: the
//! limits an operator puts on workers (`max_batch`, `min_lease`, `max_lease`) and the guard's policy
//! (`guard_action`) only a superuser (or ALTER ROLE/DATABASE ... SET by one); what a
//! worker or producer chooses for itself anyone. The `sendjobs.` prefix is reserved
//! once the library is loaded: a misspelled name fails, and with the library preloaded
//! (session_preload_libraries) so does a bad value, at SET time.

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
static MIN_LEASE_MS: GucSetting<i32> = GucSetting::<i32>::new(0);
static MAX_LEASE_MS: GucSetting<i32> = GucSetting::<i32>::new(3_600_000);
static GUARD_ACTION: GucSetting<GuardAction> = GucSetting::<GuardAction>::new(GuardAction::Skip);
static RETRY_BACKOFF_BASE_MS: GucSetting<i32> = GucSetting::<i32>::new(10_000);
static RETRY_BACKOFF_MAX_MS: GucSetting<i32> = GucSetting::<i32>::new(3_600_000);
static DEFAULT_MAX_ATTEMPTS: GucSetting<i32> = GucSetting::<i32>::new(5);

fn define_ms(
    name: &'static CStr,
    short: &'static CStr,
    long: &'static CStr,
    setting: &'static GucSetting<i32>,
    context: GucContext,
) {
    GucRegistry::define_int_guc(
        name,
        short,
        long,
        setting,
        0,
        i32::MAX,
        context,
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
        GucContext::Userset,
    );
    define_ms(
        c"sendjobs.min_lease",
        c"Shortest lease a claim or heartbeat may ask for (superuser only).",
        c"A shorter lease, given or from sendjobs.default_lease, fails with SQLSTATE \
           22023: a lease that ends before the send does lets another worker send the job \
           again. A value without a unit is milliseconds.",
        &MIN_LEASE_MS,
        GucContext::Suset,
    );
    define_ms(
        c"sendjobs.max_lease",
        c"Longest lease a claim or heartbeat may ask for (superuser only).",
        c"A longer lease, given or from sendjobs.default_lease, fails with SQLSTATE \
           22023. A job whose worker died waits for its lease to end; and a lease given as \
           a bare number is read as seconds, so a lease meant in milliseconds would \
           otherwise hold a job a thousand times longer without a word. Heartbeats keep \
           a long send's lease short. A value without a unit is milliseconds.",
        &MAX_LEASE_MS,
        GucContext::Suset,
    );
    GucRegistry::define_int_guc(
        c"sendjobs.max_batch",
        c"Largest batch one sendjobs_claim call may take (superuser only).",
        c"A larger batch fails with SQLSTATE 22023. Bounds the rows one claim locks and \
           returns.",
        &MAX_BATCH,
        1,
        1_000_000,
        GucContext::Suset,
        GucFlags::default(),
    );
    GucRegistry::define_enum_guc(
        c"sendjobs.guard_action",
        c"What the terminal guard does with a refused transition: skip (WARNING) or error (SQLSTATE 23514); superuser only.",
        c"skip leaves the row as it was and lets the statement go on; error fails the \
           statement, and so a finalize whose business-row stamp is refused.",
        &GUARD_ACTION,
        GucContext::Suset,
        GucFlags::default(),
    );
    define_ms(
        c"sendjobs.retry_backoff_base",
        c"Delay before the first retry when sendjobs_finalize(..., 'retry') gets no retry_at; doubles per attempt.",
        c"The delay after attempt n is this times 2^(n - 1), capped at \
           sendjobs.retry_backoff_max; no jitter. A value without a unit is milliseconds.",
        &RETRY_BACKOFF_BASE_MS,
        GucContext::Userset,
    );
    define_ms(
        c"sendjobs.retry_backoff_max",
        c"Upper bound of the retry backoff.",
        c"A value without a unit is milliseconds.",
        &RETRY_BACKOFF_MAX_MS,
        GucContext::Userset,
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
    // SAFETY: called once from _PG_init, after our GUCs are defined.
    unsafe { pgrx::pg_sys::MarkGUCPrefixReserved(c"sendjobs".as_ptr()) };
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

pub fn max_lease_ms() -> i32 {
    MAX_LEASE_MS.get()
}

pub fn min_lease_ms() -> i32 {
    MIN_LEASE_MS.get()
}
