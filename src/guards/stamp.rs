//! The business-row stamp: an applied terminal finalize, a job that gave up and a redrive
//! set the linked business row's status (sendjobs_link_transactions, src/verbs/link.rs), in
//! the caller's transaction and through any guard on the table.

use std::ffi::CString;
use std::rc::Rc;

use pgrx::pg_sys;
use pgrx::spi::{OwnedPreparedStatement, SpiClient};

use crate::machinery::errors::{Result, SendJobsError};
use crate::machinery::spi_plans::{plan_as_linker, within_path, Planning, Scope};
use crate::machinery::statements::{statement, Statement};

static LINK_CURRENT: Statement = statement!("link_current.sql");

/// Why a business row is stamped, and so with which of the link's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stamp {
    /// An applied `sent` finalize: `on_sent`.
    Sent,
    /// An applied `failed` finalize, or a job that gave up: `on_failed`.
    Failed,
    /// A failed job sent again by `sendjobs_redrive`: `on_redrive`.
    Redriven,
}

impl Stamp {
    /// The stamp of a job that reached terminal `status`, if that status stamps.
    pub fn of_status(status: &str) -> Option<Self> {
        match status {
            "sent" => Some(Self::Sent),
            "failed" => Some(Self::Failed),
            _ => None,
        }
    }
}

/// Stamps the business row of each `(stamp, transaction_id)`, when a table is linked.
/// The first stamp that fails (a guard in `error` mode) fails the caller's statement.
pub fn stamp_each(client: &mut SpiClient<'_>, rows: &[(Stamp, String)]) -> Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    if let Some(link) = TransactionLink::current(client)? {
        for (stamp, transaction_id) in rows {
            link.stamp(client, *stamp, transaction_id)?;
        }
    }
    Ok(())
}

/// The current link, ready to stamp business rows. Everything that runs the linked table's
/// code (the stamp, which fires its triggers; the key check, which runs its key type's
/// input and a domain's CHECK) runs as the role that linked it, restricted, with the
/// search_path of the table's schema and its types' (sql/statements/link_current.sql):
/// linking lends no one's rights to anyone (tests/pg_regress/sql/security.sql).
pub struct TransactionLink {
    /// The stamp's statement, built by link_current.sql from catalog-quoted names (so a
    /// renamed table still works); prepared only when a row is stamped.
    stamp_sql: String,
    key_check: Rc<OwnedPreparedStatement>,
    linker: pg_sys::Oid,
    path: CString,
    on_sent: String,
    on_failed: String,
    on_redrive: String,
}

impl TransactionLink {
    /// The link as declared now, or None when no table is linked. A linked column that
    /// was dropped or renamed since is reported (42703), not silently skipped.
    pub fn current(client: &SpiClient<'_>) -> Result<Option<Self>> {
        let link = LINK_CURRENT.run(client, &[])?.first();
        if link.is_empty() {
            return Ok(None);
        }
        let text = |name: &str| -> Result<String> {
            link.get_by_name::<String, _>(name)?.ok_or_else(|| {
                SendJobsError::Internal(format!("the transaction link has no {name}"))
            })
        };
        if let Some(column) = link.get_by_name::<String, _>("missing_column")? {
            return Err(SendJobsError::UndefinedColumn {
                table: text("tbl")?,
                column,
            });
        }
        if link.get_by_name::<bool, _>("linker_exists")? != Some(true) {
            return Err(SendJobsError::LinkerGone(text("tbl")?));
        }
        let linker = link
            .get_by_name::<pg_sys::Oid, _>("linked_by")?
            .ok_or_else(|| SendJobsError::Internal("the transaction link has no role".into()))?;
        let path = CString::new(text("search_path")?)
            .map_err(|_| SendJobsError::Internal("a schema name holds a NUL".into()))?;
        // Built here from key_type, which format_type quotes as needed: a cast to the
        // linked table's key type cannot be a statement file.
        let key_check = plan_as_linker(
            client,
            &format!("SELECT CAST($1 AS {})", text("key_type")?),
            &[pg_sys::TEXTOID.into()],
            linker,
            &path,
        )?;
        Ok(Some(Self {
            stamp_sql: text("stamp_sql")?,
            key_check,
            linker,
            path,
            on_sent: text("on_sent")?,
            on_failed: text("on_failed")?,
            on_redrive: text("on_redrive")?,
        }))
    }

    /// Refuses a transaction_id that cannot be a key of the linked table (the key type's
    /// own input error, e.g. 22P02): such a job could never stamp its row.
    pub fn check_key(&self, client: &SpiClient<'_>, transaction_id: &str) -> Result<()> {
        self.as_linker(|| Ok(client.select(&*self.key_check, None, &[transaction_id.into()])?))?;
        Ok(())
    }

    /// Sets the business row `transaction_id` to the link's value for `stamp`. No such
    /// row, or a guard that skips the change: nothing changes. A guard in `error` mode
    /// aborts the caller's statement.
    pub fn stamp(
        &self,
        client: &mut SpiClient<'_>,
        stamp: Stamp,
        transaction_id: &str,
    ) -> Result<()> {
        let value = match stamp {
            Stamp::Sent => &self.on_sent,
            Stamp::Failed => &self.on_failed,
            Stamp::Redriven => &self.on_redrive,
        };
        let stamp = plan_as_linker(
            client,
            &self.stamp_sql,
            &[pg_sys::TEXTOID.into(), pg_sys::TEXTOID.into()],
            self.linker,
            &self.path,
        )?;
        self.as_linker(|| {
            Ok(client.update(
                &*stamp,
                None,
                &[value.as_str().into(), transaction_id.into()],
            )?)
        })?;
        Ok(())
    }

    fn as_linker<R>(&self, f: impl FnOnce() -> Result<R>) -> Result<R> {
        within_path(Scope::Linker(self.linker), Planning::Generic, &self.path, f)
    }
}
