//! The statements the functions prepare, read from `sql/statements/` at compile time.
//!
//! One file per statement, as a reader would look for it (`claim.sql`, `finalize.sql`,
//! ...); the benchmark reads the same files (bench/sqlgen.py). A file may hold variants
//! of its statement: the lines after `--- variant NAME` belong to variant NAME only, up
//! to the next `--- variant` or `--- end`; every other line belongs to all variants.
//! Comment lines are dropped, so what the server logs and pg_stat_statements show is the
//! statement alone. `@extschema@` is left for spi_plans to replace.
//!
//! Lines after `--- catalog 0.2.0` (up to `--- end`) name objects that a 0.1.0 catalog
//! lacks: the 0.2.0 library runs against a 0.1.0 catalog between the install of its
//! files and `ALTER EXTENSION sendjobs UPDATE` (see the README's "Upgrading"). They are
//! kept, marked with `SINCE_0_2`, and spi_plans drops or keeps them for the catalog it
//! finds (`for_catalog`). A statement whose 0.2.0 form differs more than by a few lines
//! has a second file for a 0.1.0 catalog, in `sql/statements/catalog_0_1/`, and its
//! caller picks one with `spi_plans::catalog_is_0_2`.

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
// The statements that differ for a 0.1.0 catalog (no send_jobs_finished, no send_job_keys),
// which the 0.2.0 library meets between the install of its files and the update.
pub static CLAIM_ANY_QUEUE_0_1: Statement = statement!("catalog_0_1/claim.sql", "any_queue");
pub static CLAIM_ONE_QUEUE_0_1: Statement = statement!("catalog_0_1/claim.sql", "one_queue");
pub static FINALIZE_BATCH_0_1: Statement = statement!("catalog_0_1/finalize.sql", "batch");
pub static FINALIZE_ONE_0_1: Statement = statement!("catalog_0_1/finalize.sql", "one");
pub static ENQUEUE_0_1: Statement = statement!("catalog_0_1/enqueue.sql");
pub static ENQUEUE_FIND_BY_KEY_0_1: Statement = statement!("catalog_0_1/enqueue_find_by_key.sql");
pub static HEARTBEAT: Statement = statement!("heartbeat.sql");
pub static JOB_EXISTS: Statement = statement!("job_exists.sql");
pub static ENQUEUE_WITH_KEY: Statement = statement!("enqueue.sql", "with_key");
pub static ENQUEUE_NO_KEY: Statement = statement!("enqueue.sql", "no_key");
pub static ENQUEUE_FIND_BY_KEY: Statement = statement!("enqueue_find_by_key.sql");
pub static LINK_SAVE: Statement = statement!("link_save.sql");
pub static LINK_UNLINK: Statement = statement!("link_unlink.sql");
pub static LINK_CURRENT: Statement = statement!("link_current.sql");
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
    let mut since_0_2 = false;
    let mut found = wanted.is_none();
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let code = line.trim_start();
        if let Some(marker) = code.strip_prefix("--- ") {
            let marker = marker.trim();
            if let Some(name) = marker.strip_prefix("variant ") {
                keep = Some(name.trim()) == wanted;
                found |= keep;
            } else if marker == "catalog 0.2.0" {
                since_0_2 = true;
            } else {
                // `--- end`
                keep = true;
                since_0_2 = false;
            }
        } else if keep && !code.is_empty() && !code.starts_with("--") {
            out.push_str(line);
            if since_0_2 {
                out.push_str(SINCE_0_2);
            }
            out.push('\n');
        }
    }
    assert!(found, "no variant {wanted:?} in a statement file");
    out
}

/// The mark `variant` puts on the lines of a `--- catalog 0.2.0` block.
pub(crate) const SINCE_0_2: &str = " --since 0.2.0";

/// A statement's text for the catalog installed: the lines marked `SINCE_0_2` kept
/// (unmarked) when it is 0.2.0 or later, dropped when it is 0.1.0.
pub(crate) fn for_catalog(text: &str, catalog_0_2: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        match line.strip_suffix(SINCE_0_2) {
            Some(line) if catalog_0_2 => out.push_str(line),
            Some(_) => continue,
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}
