//! Catalog look-ups shared by the guard and the transaction link.

use pgrx::pg_sys;
use pgrx::spi::SpiClient;

use crate::errors::{Result, SendJobsError};
use crate::spi_plans::{first_value, select};
use crate::statements::{COLUMN_TYPE, TABLE_KIND, TABLE_NAME};

/// The table's name as SQL text (schema-qualified when needed, quoted as needed).
pub fn table_display(client: &SpiClient<'_>, relid: pg_sys::Oid) -> Result<String> {
    Ok(
        first_value::<String>(select(client, &TABLE_NAME, &[relid.into()])?)?
            .unwrap_or_else(|| format!("relation {}", relid.to_u32())),
    )
}

/// Refuses anything but an ordinary or partitioned table (42809 wrong_object_type).
pub fn require_table(client: &SpiClient<'_>, relid: pg_sys::Oid) -> Result<()> {
    let relkind = first_value::<String>(select(client, &TABLE_KIND, &[relid.into()])?)?;
    match relkind.as_deref() {
        Some("r") | Some("p") => Ok(()),
        _ => Err(SendJobsError::NotATable(table_display(client, relid)?)),
    }
}

/// The SQL type of a live column, as `format_type` spells it, or 42703.
pub fn column_type(client: &SpiClient<'_>, relid: pg_sys::Oid, column: &str) -> Result<String> {
    let found = first_value::<String>(select(
        client,
        &COLUMN_TYPE,
        &[relid.into(), column.into()],
    )?)?;
    match found {
        Some(sql_type) => Ok(sql_type),
        None => Err(SendJobsError::UndefinedColumn {
            table: table_display(client, relid)?,
            column: column.to_owned(),
        }),
    }
}
