//! The GUCs of sendjobs, each read through a typed accessor. Who may set each: the
//! limits an operator puts on workers (`max_batch`, `min_lease`, `max_lease`) and the guard's policy
//! (`guard_action`) only a superuser (or ALTER ROLE/DATABASE ... SET by one); what a
//! worker or producer chooses for itself anyone. The `sendjobs.` prefix is reserved
//! once the library is loaded: a misspelled name fails, and with the library preloaded
//! (session_preload_libraries) so does a bad value, at SET time.
//!
//! Each release has its own library (`sendjobs-<version>.so`: docs/decisions/
//! 0001-a-library-per-release.md), and a backend that served a database before its
//! `ALTER EXTENSION sendjobs UPDATE` has the older library loaded too. Postgres lets one
//! library define a setting: a setting the older one defined first stays its, and this
//! library reads it by name (`elsewhere`), so both read the same value. But for the limits
//! only a superuser may set: 0.1.0 let anyone set `max_batch` and `guard_action`, so what
//! a session set under an older library is taken only where it is stricter than this
//! library's default (`limit`), until the session reconnects and loads this one first.

use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, Ordering};

use pgrx::{pg_sys, GucContext, GucFlags, GucRegistry, GucSetting, PostgresGucEnum};

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

/// Which settings another sendjobs library in this backend defined before ours loaded,
/// by the setting's name; read by `int` and `guard_action`.
static ELSEWHERE: [AtomicBool; 8] = [const { AtomicBool::new(false) }; 8];

/// The settings by index into `ELSEWHERE` (the accessors below name them by these).
const DEFAULT_LEASE: usize = 0;
const MIN_LEASE: usize = 1;
const MAX_LEASE: usize = 2;
const MAX_BATCH_AT: usize = 3;
const GUARD: usize = 4;
const BACKOFF_BASE: usize = 5;
const BACKOFF_MAX: usize = 6;
const MAX_ATTEMPTS: usize = 7;
const NAMES: [&CStr; 8] = [
    c"sendjobs.default_lease",
    c"sendjobs.min_lease",
    c"sendjobs.max_lease",
    c"sendjobs.max_batch",
    c"sendjobs.guard_action",
    c"sendjobs.retry_backoff_base",
    c"sendjobs.retry_backoff_max",
    c"sendjobs.default_max_attempts",
];

/// Whether `name` may be defined here: false when a library of another release loaded in
/// this backend has defined it already (a placeholder, made by a SET before any library
/// loaded, is ours to define). Remembered for the accessors.
fn ours(name: &'static CStr) -> bool {
    // SAFETY: look-ups by name; with missing_ok, a setting that does not exist gives NULL.
    let defined = unsafe {
        !pg_sys::GetConfigOption(name.as_ptr(), true, false).is_null()
            && pg_sys::GetConfigOptionFlags(name.as_ptr(), true) as u32
                & pg_sys::GUC_CUSTOM_PLACEHOLDER
                == 0
    };
    if let Some(index) = NAMES.iter().position(|known| *known == name) {
        ELSEWHERE[index].store(defined, Ordering::Relaxed);
    }
    !defined
}

/// The value of a setting that another release's library defined, as Postgres shows it
/// to that library (`GetConfigOption`: an integer in its base unit, an enum by name).
fn elsewhere(index: usize) -> Option<String> {
    if !ELSEWHERE[index].load(Ordering::Relaxed) {
        return None;
    }
    // SAFETY: the setting exists (it was defined when we loaded); the returned string is
    // Postgres's, copied at once.
    let value = unsafe { pg_sys::GetConfigOption(NAMES[index].as_ptr(), true, false) };
    (!value.is_null()).then(|| {
        unsafe { CStr::from_ptr(value) }
            .to_string_lossy()
            .into_owned()
    })
}

fn int(index: usize, setting: &GucSetting<i32>) -> i32 {
    elsewhere(index)
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| setting.get())
}

/// A superuser-only limit: as `int`, but a value defined elsewhere counts only as far as
/// it is stricter than this library's default (`stricter` picks the stricter of two).
fn limit(index: usize, setting: &GucSetting<i32>, stricter: fn(i32, i32) -> i32) -> i32 {
    match elsewhere(index).and_then(|value| value.parse().ok()) {
        Some(value) => stricter(value, setting.get()),
        None => setting.get(),
    }
}

fn define_ms(
    name: &'static CStr,
    short: &'static CStr,
    long: &'static CStr,
    setting: &'static GucSetting<i32>,
    context: GucContext,
) {
    if !ours(name) {
        return;
    }
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
    if ours(c"sendjobs.max_batch") {
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
    }
    if ours(c"sendjobs.guard_action") {
        GucRegistry::define_enum_guc(
            c"sendjobs.guard_action",
            c"What the terminal guard does with a refused transition: skip (WARNING) or error (SQLSTATE 23514); superuser only.",
            c"skip leaves the row as it was and lets the statement go on; error fails the \
               statement, and so a finalize whose business-row stamp is refused.",
            &GUARD_ACTION,
            GucContext::Suset,
            GucFlags::default(),
        );
    }
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
    if ours(c"sendjobs.default_max_attempts") {
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
    // SAFETY: called once from _PG_init, after our GUCs are defined (a second library's
    // call only repeats the first's).
    unsafe { pg_sys::MarkGUCPrefixReserved(c"sendjobs".as_ptr()) };
}

pub fn default_lease_ms() -> i32 {
    int(DEFAULT_LEASE, &DEFAULT_LEASE_MS)
}

pub fn max_batch() -> i32 {
    limit(MAX_BATCH_AT, &MAX_BATCH, std::cmp::min)
}

pub fn guard_action() -> GuardAction {
    // As a limit: `error` is the stricter; a value this library does not know fails closed.
    match elsewhere(GUARD).as_deref() {
        Some("skip") => GUARD_ACTION.get(),
        Some(_) => GuardAction::Error,
        None => GUARD_ACTION.get(),
    }
}

pub fn retry_backoff_base_ms() -> i32 {
    int(BACKOFF_BASE, &RETRY_BACKOFF_BASE_MS)
}

pub fn retry_backoff_max_ms() -> i32 {
    int(BACKOFF_MAX, &RETRY_BACKOFF_MAX_MS)
}

pub fn default_max_attempts() -> i32 {
    int(MAX_ATTEMPTS, &DEFAULT_MAX_ATTEMPTS)
}

pub fn max_lease_ms() -> i32 {
    limit(MAX_LEASE, &MAX_LEASE_MS, std::cmp::min)
}

pub fn min_lease_ms() -> i32 {
    limit(MIN_LEASE, &MIN_LEASE_MS, std::cmp::max)
}
