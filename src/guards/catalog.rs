//! Catalog look-ups shared by the guard and the transaction link.

use pgrx::pg_sys;
use pgrx::spi::SpiClient;

use crate::machinery::errors::{Result, SendJobsError};
use crate::machinery::statements::{first, statement, Statement};

// Catalog look-ups, as the caller: what the caller may see of its own tables.
static TABLE_NAME: Statement = statement!("table_name.sql");
static TABLE_KIND: Statement = statement!("table_kind.sql");
static COLUMN_TYPE: Statement = statement!("column_type.sql");

/// The table's name as SQL text (schema-qualified when needed, quoted as needed).
pub fn table_display(client: &SpiClient<'_>, relid: pg_sys::Oid) -> Result<String> {
    Ok(first::<String>(
        TABLE_NAME.select_as_caller(client, &[relid.into()])?,
        "name",
    )?
    .unwrap_or_else(|| format!("relation {}", relid.to_u32())))
}

/// Refuses anything but an ordinary or partitioned table (42809 wrong_object_type).
pub fn require_table(client: &SpiClient<'_>, relid: pg_sys::Oid) -> Result<()> {
    let relkind = first::<String>(
        TABLE_KIND.select_as_caller(client, &[relid.into()])?,
        "relkind",
    )?;
    match relkind.as_deref() {
        Some("r") | Some("p") => Ok(()),
        _ => Err(SendJobsError::NotATable(table_display(client, relid)?)),
    }
}

/// The SQL type of a live column, as `format_type` spells it, or 42703.
pub fn column_type(client: &SpiClient<'_>, relid: pg_sys::Oid, column: &str) -> Result<String> {
    let found = first::<String>(
        COLUMN_TYPE.select_as_caller(client, &[relid.into(), column.into()])?,
        "sql_type",
    )?;
    match found {
        Some(sql_type) => Ok(sql_type),
        None => Err(SendJobsError::UndefinedColumn {
            table: table_display(client, relid)?,
            column: column.to_owned(),
        }),
    }
}
