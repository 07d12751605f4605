//! sendjobs_link_transactions: the business table an applied terminal finalize stamps
//! (the stamp itself: src/guards/stamp.rs).

use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::PgRelation;

use crate::guards::catalog::{column_type, require_table, table_display};
use crate::machinery::errors::{or_raise, required, Result, SendJobsError};
use crate::machinery::spi_plans::{extension_schema, select};
use crate::machinery::sql_types::SqlName;
use crate::machinery::statements::{statement, Statement};

static LINK_RIGHTS: Statement = statement!("link_rights.sql");
static LINK_SAVE: Statement = statement!("link_save.sql");
static LINK_UNLINK: Statement = statement!("link_unlink.sql");

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
        // Built here, not a statement file: a cast to the table's status type, which
        // format_type spells and quotes as needed.
        let cast = format!(
            "SELECT CAST($1 AS {status_type}), CAST($2 AS {status_type}), CAST($3 AS {status_type})"
        );
        select(
            client,
            &cast,
            &[on_sent.into(), on_failed.into(), on_redrive.into()],
        )?;

        let key_type = column_type(client, relid, &key_column.0)?;
        let rights = LINK_RIGHTS
            .select_as_caller(
                client,
                &[
                    relid.into(),
                    status_column.0.as_str().into(),
                    key_column.0.as_str().into(),
                ],
            )?
            .first();
        let may_update = rights.get_by_name::<bool, _>("may_update")?;
        let may_read = rights.get_by_name::<bool, _>("may_read")?;
        if may_update != Some(true) || may_read != Some(true) {
            return Err(SendJobsError::PermissionDenied(format!(
                "linking {} needs UPDATE on its column {} and SELECT on its column {}: \
                 the workers' finalizes stamp it",
                table_display(client, relid)?,
                status_column.0,
                key_column.0
            )));
        }

        // Unfinished jobs must carry transaction_ids that can be keys of the new table:
        // built here like the cast above, from the key type format_type spells.
        let schema = extension_schema(client)?;
        let unfinished = format!(
            "SELECT pg_catalog.count(CAST(transaction_id AS {key_type})) FROM {schema}.send_jobs
              WHERE status IN ('pending', 'in_flight') AND transaction_id IS NOT NULL"
        );
        // As the caller (an admin reads send_jobs): the cast runs the key type's input
        // and a domain's CHECK, which are the table owner's code, never as our owner.
        select(client, &unfinished, &[])?;

        // SAFETY: the role this function runs as, the caller (we are not SECURITY DEFINER).
        let linker = unsafe { pg_sys::GetUserId() };
        LINK_SAVE.run(
            client,
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
        LINK_UNLINK.run(client, &[])?;
        Ok(())
    }))
}
