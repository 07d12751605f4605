//! The statements the functions prepare, read from `sql/statements/` at compile time.
//!
//! One file per statement, as a reader would look for it (`claim.sql`, `finalize.sql`,
//! ...); the benchmark reads the same files (bench/sqlgen.py). A file may hold variants
//! of its statement: the lines after `--- variant NAME` belong to variant NAME only, up
//! to the next `--- variant` or `--- end`; every other line belongs to all variants.
//! Comment lines are dropped, so what the server logs and pg_stat_statements show is the
//! statement alone. `@extschema@` is left for spi_plans to replace.
//!
//! The statements are for the catalog of this release only: a database whose catalog is
//! older keeps the library of its own release until `ALTER EXTENSION sendjobs UPDATE`
//! (docs/decisions/0001-a-library-per-release.md).

use std::sync::LazyLock;

/// A statement's text: its file, or one variant of it.
macro_rules! statement {
    ($file:literal) => {
        LazyLock::new(|| variant(include_str!(concat!("../sql/statements/", $file)), None))
    };
    ($file:literal, $variant:literal) => {
        LazyLock::new(|| {
            variant(
                include_str!(concat!("../sql/statements/", $file)),
                Some($variant),
            )
        })
    };
}

type Statement = LazyLock<String>;

pub static CLAIM_ANY_QUEUE: Statement = statement!("claim.sql", "any_queue");
pub static CLAIM_ONE_QUEUE: Statement = statement!("claim.sql", "one_queue");
pub static FINALIZE_BATCH: Statement = statement!("finalize.sql", "batch");
pub static FINALIZE_ONE: Statement = statement!("finalize.sql", "one");
pub static HEARTBEAT: Statement = statement!("heartbeat.sql");
pub static JOB_EXISTS: Statement = statement!("job_exists.sql");
pub static ENQUEUE_WITH_KEY: Statement = statement!("enqueue.sql", "with_key");
pub static ENQUEUE_NO_KEY: Statement = statement!("enqueue.sql", "no_key");
pub static ENQUEUE_FIND_BY_KEY: Statement = statement!("enqueue_find_by_key.sql");
pub static LINK_SAVE: Statement = statement!("link_save.sql");
pub static LINK_UNLINK: Statement = statement!("link_unlink.sql");
pub static LINK_CURRENT: Statement = statement!("link_current.sql");
pub static LINK_RIGHTS: Statement = statement!("link_rights.sql");
pub static EXTENSION_SCHEMA: Statement = statement!("extension_schema.sql");
pub static TABLE_NAME: Statement = statement!("table_name.sql");
pub static TABLE_KIND: Statement = statement!("table_kind.sql");
pub static COLUMN_TYPE: Statement = statement!("column_type.sql");
pub static PRIMARY_KEY_COLUMNS: Statement = statement!("primary_key_columns.sql");
pub static ACCESS_LEVEL: Statement = statement!("access_level.sql");
pub static UNSTAMPED_NOTE: Statement = statement!("unstamped_note.sql");
pub static CANCEL: Statement = statement!("cancel.sql");
pub static REDRIVE: Statement = statement!("redrive.sql");
pub static REDRIVE_LOCK: Statement = statement!("redrive_lock.sql");
pub static JOB_STATUSES: Statement = statement!("job_statuses.sql");
pub static PURGE: Statement = statement!("purge.sql");
pub static QUEUE_NOTIFY: Statement = statement!("queue_notify.sql");
pub static QUEUE_NOTIFY_SAVE: Statement = statement!("queue_notify_save.sql");
pub static WAKEUP: Statement = statement!("wakeup.sql");
pub static STATS: Statement = statement!("stats.sql");

/// The text of `wanted` (None: a file without variants), without comment lines.
/// Panics when the file does not have that variant: a mistake in this file, which the
/// first test to run the statement reports.
pub(crate) fn variant(text: &str, wanted: Option<&str>) -> String {
    let mut keep = true;
    let mut found = wanted.is_none();
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let code = line.trim_start();
        if let Some(marker) = code.strip_prefix("--- ") {
            let marker = marker.trim();
            if let Some(name) = marker.strip_prefix("variant ") {
                keep = Some(name.trim()) == wanted;
                found |= keep;
            } else {
                // `--- end`
                keep = true;
            }
        } else if keep && !code.is_empty() && !code.starts_with("--") {
            out.push_str(line);
            out.push('\n');
        }
    }
    assert!(found, "no variant {wanted:?} in a statement file");
    out
}
