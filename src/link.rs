//! sendjobs_link_transactions: the business table an applied terminal finalize stamps.

use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::spi::SpiClient;
use pgrx::PgRelation;

use crate::catalog::{column_type, require_table, table_display};
use crate::errors::{or_raise, required, Result, SendJobsError};
use crate::spi_plans::{
    execute, extension_schema, plan, plan_as_linker, select, within_path, Planning, Scope,
};
use crate::sql_types::SqlName;
use crate::statements::{LINK_CURRENT, LINK_RIGHTS, LINK_SAVE, LINK_UNLINK};

/// Declares the business table `send_jobs.transaction_id` points at. From now on an
/// applied `sent` / `failed` finalize sets that row's status to `on_sent` / `on_failed`
/// in the same transaction, through any guard on the table, and `sendjobs_redrive` sets
/// it to `on_redrive`. Calling it again replaces the link.
#[pg_extern(volatile, parallel_unsafe)]
fn sendjobs_link_transactions(
    tbl: Option<PgRelation>,
    key_column: default!(Option<SqlName>, "'id'"),
    status_column: default!(Option<SqlName>, "'status'"),
    on_sent: default!(Option<&str>, "'success'"),
    on_failed: default!(Option<&str>, "'failed'"),
    on_redrive: default!(Option<&str>, "'pending'"),
) {
    or_raise(link_transactions(
        tbl,
        key_column,
        status_column,
        [on_sent, on_failed, on_redrive],
    ))
}

fn link_transactions(
    tbl: Option<PgRelation>,
    key_column: Option<SqlName>,
    status_column: Option<SqlName>,
    [on_sent, on_failed, on_redrive]: [Option<&str>; 3],
) -> Result<()> {
    let tbl = required(tbl, "tbl")?;
    let key_column = required(key_column, "key_column")?;
    let status_column = required(status_column, "status_column")?;
    let on_sent = required(on_sent, "on_sent")?;
    let on_failed = required(on_failed, "on_failed")?;
    let on_redrive = required(on_redrive, "on_redrive")?;
    let relid = tbl.oid();

    Spi::connect_mut(|client| {
        require_table(client, relid)?;
        let status_type = column_type(client, relid, &status_column.0)?;
        // The values must be valid for the status column now, not at the first finalize.
        // status_type comes from format_type, which quotes what needs quoting.
        let cast = format!(
            "SELECT CAST($1 AS {status_type}), CAST($2 AS {status_type}), CAST($3 AS {status_type})"
        );
        select(
            client,
            &cast,
            &[on_sent.into(), on_failed.into(), on_redrive.into()],
        )?;

        let key_type = column_type(client, relid, &key_column.0)?;
        let rights = select(
            client,
            &LINK_RIGHTS,
            &[
                relid.into(),
                status_column.0.as_str().into(),
                key_column.0.as_str().into(),
            ],
        )?
        .first();
        let (may_update, may_read) = rights.get_two::<bool, bool>()?;
        if may_update != Some(true) || may_read != Some(true) {
            return Err(SendJobsError::PermissionDenied(format!(
                "linking {} needs UPDATE on its column {} and SELECT on its column {}: \
                 the workers' finalizes stamp it",
                table_display(client, relid)?,
                status_column.0,
                key_column.0
            )));
        }

        // Unfinished jobs must carry transaction_ids that can be keys of the new table.
        let schema = extension_schema(client)?;
        let unfinished = format!(
            "SELECT pg_catalog.count(CAST(transaction_id AS {key_type})) FROM {schema}.send_jobs
              WHERE status IN ('pending', 'in_flight') AND transaction_id IS NOT NULL"
        );
        // As the caller (an admin reads send_jobs): the cast runs the key type's input
        // and a domain's CHECK, which are the table owner's code, never as our owner.
        select(client, &unfinished, &[])?;

        let save = plan(
            client,
            &LINK_SAVE,
            &[
                pg_sys::REGCLASSOID.into(),
                pg_sys::TEXTOID.into(),
                pg_sys::TEXTOID.into(),
                pg_sys::TEXTOID.into(),
                pg_sys::TEXTOID.into(),
                pg_sys::TEXTOID.into(),
                pg_sys::OIDOID.into(),
            ],
        )?;
        // SAFETY: the role this function runs as, the caller (we are not SECURITY DEFINER).
        let linker = unsafe { pg_sys::GetUserId() };
        execute(
            client,
            &save,
            &[
                relid.into(),
                key_column.0.as_str().into(),
                status_column.0.as_str().into(),
                on_sent.into(),
                on_failed.into(),
                on_redrive.into(),
                linker.into(),
            ],
        )?;
        Ok(())
    })
}

/// Removes the link: finalizes stop stamping any business table.
#[pg_extern(volatile, parallel_unsafe)]
fn sendjobs_unlink_transactions() {
    or_raise(Spi::connect_mut(|client| {
        let unlink = plan(client, &LINK_UNLINK, &[])?;
        execute(client, &unlink, &[])?;
        Ok(())
    }))
}

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

/// The current link, ready to stamp business rows. Everything that runs the linked table's
/// code (the stamp, which fires its triggers; the key check, which runs its key type's
/// input and a domain's CHECK) runs as the role that linked it, restricted, with the
/// search_path of the table's schema and its types' (sql/statements/link_current.sql):
/// linking lends no one's rights to anyone (tests/pg_regress/sql/security.sql).
pub struct TransactionLink {
    /// Prepared only when a row is stamped.
    stamp_sql: String,
    key_check: std::rc::Rc<pgrx::spi::OwnedPreparedStatement>,
    linker: pg_sys::Oid,
    path: std::ffi::CString,
    on_sent: String,
    on_failed: String,
    on_redrive: String,
}

impl TransactionLink {
    /// The link as declared now, or None when no table is linked. A linked column that
    /// was dropped or renamed since is reported (42703), not silently skipped.
    pub fn current(client: &SpiClient<'_>) -> Result<Option<Self>> {
        let lookup = plan(client, &LINK_CURRENT, &[])?;
        let link = execute(client, &lookup, &[])?.first();
        if link.is_empty() {
            return Ok(None);
        }
        let (stamp_sql, on_sent, on_failed) = link.get_three::<String, String, String>()?;
        if let Some(column) = link.get::<String>(5)? {
            let table = link.get::<String>(4)?.unwrap_or_default();
            return Err(SendJobsError::UndefinedColumn { table, column });
        }
        let key_type = link.get::<String>(6)?;
        let on_redrive = link.get::<String>(7)?;
        let linker = link.get::<pg_sys::Oid>(8)?;
        if link.get::<bool>(9)? != Some(true) {
            return Err(SendJobsError::LinkerGone(
                link.get::<String>(4)?.unwrap_or_default(),
            ));
        }
        let path = link.get::<String>(10)?;
        let (
            Some(stamp_sql),
            Some(on_sent),
            Some(on_failed),
            Some(key_type),
            Some(on_redrive),
            Some(linker),
            Some(path),
        ) = (
            stamp_sql, on_sent, on_failed, key_type, on_redrive, linker, path,
        )
        else {
            return Err(SendJobsError::Internal(
                "the transaction link is incomplete".into(),
            ));
        };
        let path = std::ffi::CString::new(path)
            .map_err(|_| SendJobsError::Internal("a schema name holds a NUL".into()))?;
        // key_type comes from format_type, which quotes what needs quoting.
        let key_check = plan_as_linker(
            client,
            &format!("SELECT CAST($1 AS {key_type})"),
            &[pg_sys::TEXTOID.into()],
            linker,
            &path,
        )?;
        Ok(Some(Self {
            stamp_sql,
            key_check,
            linker,
            path,
            on_sent,
            on_failed,
            on_redrive,
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
