//! Access levels: sendjobs_grant and sendjobs_revoke give or take `producer`, `worker`,
//! `monitor` or `admin` (sql/statements/access_level.sql says what each holds). EXECUTE
//! on every function is revoked from PUBLIC (sql/comments_and_privileges.sql); no level
//! holds a write privilege on the queue tables.

use pgrx::prelude::*;

use crate::machinery::errors::{named_role, or_raise, required, Result, SendJobsError};
use crate::machinery::spi_plans::{extension_schema, owner_scope, within};
use crate::machinery::sql_types::SqlRole;
use crate::machinery::statements::{first, statement, Statement};

static ACCESS_LEVEL: Statement = statement!("access_level.sql");
static ROLE_NAME: Statement = statement!("role_name.sql");

#[derive(Clone, Copy, PartialEq, Eq)]
enum Change {
    Grant,
    Revoke,
}

/// Gives `role` the access level `access`: producer, worker, monitor, relay or admin.
#[pg_extern(volatile, parallel_unsafe)]
fn sendjobs_grant(role: Option<SqlRole>, access: Option<&str>) {
    or_raise(change_access(role, access, Change::Grant))
}

/// Takes the access level `access` from `role` (what another level also holds goes too;
/// grant that level again).
#[pg_extern(volatile, parallel_unsafe)]
fn sendjobs_revoke(role: Option<SqlRole>, access: Option<&str>) {
    or_raise(change_access(role, access, Change::Revoke))
}

fn change_access(role: Option<SqlRole>, access: Option<&str>, change: Change) -> Result<()> {
    let role = named_role(required(role, "role")?, "role")?;
    let access = required(access, "access")?;
    Spi::connect_mut(|client| {
        let privileges = ACCESS_LEVEL
            .run(client, &[access.into()])?
            .map(|row| row.get_by_name::<String, _>("privilege"))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        if privileges.is_empty() {
            return Err(SendJobsError::InvalidArgument(format!(
                "unknown access level \"{access}\"; expected producer, worker, monitor, relay or admin"
            )));
        }
        // The role's name as SQL text (regrole quotes it as needed); our privileges are
        // fixed text, so nothing the caller passed is pasted in unquoted.
        let role_name = first::<String>(
            ROLE_NAME.select_as_caller(client, &[role.0.into()])?,
            "name",
        )?
        .ok_or_else(|| SendJobsError::Internal("a role without a name".into()))?;
        // GRANT and REVOKE take no parameters: their text is built here, from the
        // extension's schema and the role's name as the catalog quotes them.
        let schema = extension_schema(client)?;
        let mut statements = Vec::with_capacity(privileges.len() + 1);
        if change == Change::Grant {
            // Calling the functions needs USAGE on their schema. A revoke leaves it: it
            // grants nothing by itself (every function needs EXECUTE, every table SELECT),
            // and the schema's owner cannot tell it from a USAGE granted for other reasons
            // (the extension often lives in public): docs/reference.md, sendjobs_revoke.
            statements.push(format!("GRANT USAGE ON SCHEMA {schema} TO {role_name}"));
        }
        statements.extend(
            privileges
                .into_iter()
                .flatten()
                .map(|privilege| privilege.replace("{schema}", &schema))
                .map(|privilege| match change {
                    Change::Grant => format!("GRANT {privilege} TO {role_name}"),
                    Change::Revoke => format!("REVOKE {privilege} FROM {role_name}"),
                }),
        );
        let owner = owner_scope(client)?;
        for statement in statements {
            within(owner, || {
                Ok(client.update(statement.as_str(), None, &[])?)
            })?;
        }
        Ok(())
    })
}
