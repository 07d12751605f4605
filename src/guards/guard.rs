//! The terminal guard: a BEFORE UPDATE trigger that makes terminal statuses absorbing.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::rc::Rc;

use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::spi::{quote_literal, SpiClient};
use pgrx::PgRelation;

use crate::guards::catalog::{column_type, require_table, table_display};
use crate::machinery::config::{self, GuardAction};
use crate::machinery::errors::{self, or_raise, required, SendJobsError};
use crate::machinery::spi_plans::{extension_schema, within, Scope};
use crate::machinery::sql_types::SqlName;
use crate::machinery::statements::{first, statement, Statement};

static PRIMARY_KEY_COLUMNS: Statement = statement!("primary_key_columns.sql");
static TEXT_ARRAY_OUT: Statement = statement!("text_array_out.sql");
static TEXT_ARRAY_IN: Statement = statement!("text_array_in.sql");

const DEFAULT_COLUMN: &str = "status";
const DEFAULT_TERMINAL: &str = "{success,failed}";
const DEFAULT_EXITS: &str = "{failed:pending}";
/// BEFORE triggers fire in name order; this name sorts last, so no other BEFORE trigger
/// can change the status after the guard has judged it. The trigger fires on every
/// UPDATE, not `UPDATE OF status`: another BEFORE trigger may change the status of an
/// UPDATE that never names the column.
const TRIGGER_NAME: &str = "zz_sendjobs_guard_terminal";

/// What one guard enforces: terminal values of a column and the transitions allowed out.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct GuardRule {
    column: String,
    terminal: Vec<String>,
    exits: Vec<(String, String)>,
}

impl GuardRule {
    pub(crate) fn new(
        column: String,
        terminal: Vec<String>,
        exits: Vec<String>,
    ) -> errors::Result<Self> {
        if terminal.is_empty() || terminal.iter().any(String::is_empty) {
            return Err(SendJobsError::InvalidArgument(
                "terminal must list at least one non-empty status".into(),
            ));
        }
        let exits = exits
            .iter()
            .map(|exit| match exit.split_once(':') {
                Some((from, to))
                    if terminal.iter().any(|t| t == from) && !to.is_empty() && from != to =>
                {
                    Ok((from.to_owned(), to.to_owned()))
                }
                _ => Err(SendJobsError::InvalidArgument(format!(
                    "exit \"{exit}\" must read from:to, from a terminal status to another status"
                ))),
            })
            .collect::<errors::Result<Vec<_>>>()?;
        Ok(Self {
            column,
            terminal,
            exits,
        })
    }

    /// Whether moving the column from `old` to `new` is refused.
    pub(crate) fn refuses(&self, old: Option<&str>, new: Option<&str>) -> bool {
        let Some(old) = old else { return false };
        if !self.terminal.iter().any(|t| t == old) || Some(old) == new {
            return false;
        }
        !matches!(new, Some(new) if self.exits.iter().any(|(from, to)| from == old && to == new))
    }
}

/// Attaches the guard to `tbl` (replacing a guard it already has).
#[pg_extern(volatile, parallel_unsafe)]
fn sendjobs_guard_terminal(
    tbl: Option<PgRelation>,
    status_column: default!(Option<SqlName>, "'status'"),
    terminal: default!(Option<Vec<Option<String>>>, "'{success,failed}'"),
    exits: default!(Option<Vec<Option<String>>>, "'{failed:pending}'"),
) {
    or_raise(guard_terminal(tbl, status_column, terminal, exits))
}

fn no_null_elements(
    values: Option<Vec<Option<String>>>,
    name: &'static str,
    element: &'static str,
) -> errors::Result<Vec<String>> {
    required(values, name)?
        .into_iter()
        .map(|value| value.ok_or(SendJobsError::NullArgument(element)))
        .collect()
}

fn guard_terminal(
    tbl: Option<PgRelation>,
    status_column: Option<SqlName>,
    terminal: Option<Vec<Option<String>>>,
    exits: Option<Vec<Option<String>>>,
) -> errors::Result<()> {
    let tbl = required(tbl, "tbl")?;
    let column = required(status_column, "status_column")?.0;
    let rule = GuardRule::new(
        column,
        no_null_elements(terminal, "terminal", "an element of terminal")?,
        no_null_elements(exits, "exits", "an element of exits")?,
    )?;
    let relid = tbl.oid();

    Spi::connect_mut(|client| {
        require_table(client, relid)?;
        column_type(client, relid, &rule.column)?;
        // CREATE TRIGGER takes no parameters: its text is built here from quoted names and
        // literals (the table's name as regclass writes it, the schema as quote_ident does).
        let schema = extension_schema(client)?;
        let create = format!(
            "CREATE OR REPLACE TRIGGER {trigger} BEFORE UPDATE ON {table} FOR EACH ROW \
             EXECUTE FUNCTION {schema}.sendjobs_guard_terminal_trigger({column_arg}, {terminal}, {exits})",
            trigger = pgrx::spi::quote_identifier(TRIGGER_NAME),
            table = table_display(client, relid)?,
            column_arg = quote_literal(&rule.column),
            terminal = quote_literal(array_literal(client, &rule.terminal)?),
            exits = quote_literal(array_literal(
                client,
                &rule.exits.iter().map(|(from, to)| format!("{from}:{to}")).collect::<Vec<_>>(),
            )?),
        );
        within(Scope::Caller, || {
            Ok(client.update(create.as_str(), None, &[])?)
        })?;
        Ok(())
    })
}

/// A text[] literal, as Postgres itself writes it (quoting included).
fn array_literal(client: &SpiClient<'_>, values: &[String]) -> errors::Result<String> {
    first::<String>(
        TEXT_ARRAY_OUT.select_as_caller(client, &[values.to_vec().into()])?,
        "literal",
    )?
    .ok_or_else(|| SendJobsError::Internal("could not format a text[] literal".into()))
}

thread_local! {
    /// Parsed rules, by the trigger's arguments (not by trigger OID: CREATE OR REPLACE
    /// TRIGGER keeps the OID and changes the arguments, and a rolled-back replacement
    /// must not leave its rule behind).
    static RULES: RefCell<HashMap<Vec<String>, Rc<GuardRule>>> = RefCell::new(HashMap::new());
}

fn parse_array(client: &SpiClient<'_>, literal: &str) -> errors::Result<Vec<String>> {
    let values = first::<Vec<Option<String>>>(
        TEXT_ARRAY_IN.select_as_caller(client, &[literal.into()])?,
        "elements",
    )?;
    no_null_elements(values, "guard argument", "an element of a guard argument")
}

fn rule_for(trigger: &PgTrigger<'_>) -> errors::Result<Rc<GuardRule>> {
    let args = trigger
        .extra_args()
        .map_err(|e| SendJobsError::TriggerMisuse(format!("unreadable trigger arguments: {e}")))?;
    if let Some(rule) = RULES.with_borrow(|rules| rules.get(&args).cloned()) {
        return Ok(rule);
    }
    if args.len() > 3 {
        return Err(SendJobsError::TriggerMisuse(
            "the guard takes at most 3 arguments: status column, terminal statuses, exits".into(),
        ));
    }
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or_else(|| default.to_owned());
    let rule = Spi::connect(|client| {
        GuardRule::new(
            arg(0, DEFAULT_COLUMN),
            parse_array(client, &arg(1, DEFAULT_TERMINAL))?,
            parse_array(client, &arg(2, DEFAULT_EXITS))?,
        )
    })?;
    let rule = Rc::new(rule);
    RULES.with_borrow_mut(|rules| rules.insert(args, rule.clone()));
    Ok(rule)
}

/// A value for a message: `"text"`, or `NULL` without quotes.
fn quoted_or_null(value: Option<String>) -> String {
    value.map_or_else(|| "NULL".into(), |value| format!("\"{value}\""))
}

/// The column's value as text (its type's output function), or None for NULL.
unsafe fn column_text(
    tuple: pg_sys::HeapTuple,
    tupdesc: pg_sys::TupleDesc,
    attnum: i32,
) -> Option<String> {
    let text = unsafe { pg_sys::SPI_getvalue(tuple, tupdesc, attnum) };
    if text.is_null() {
        return None;
    }
    Some(
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// The trigger function. Arguments (all optional): status column (default `status`),
/// terminal statuses as a text[] literal (default `{success,failed}`), exits as `from:to`
/// pairs (default `{failed:pending}`). Attach it BEFORE UPDATE ... FOR EACH ROW.
///
/// Its SQL is written here: pgrx 0.18 writes a trigger function's library as
/// `MODULE_PATHNAME`, which Postgres replaces only when the control file names one, and
/// ours names none, so that each release gets a library of its own, `sendjobs-<version>`
/// (docs/decisions/0001-a-library-per-release.md). `@MODULE_PATHNAME@` is that library.
#[pg_trigger(sql = r#"
CREATE FUNCTION "sendjobs_guard_terminal_trigger"()
	RETURNS TRIGGER
	LANGUAGE c
	AS '@MODULE_PATHNAME@', '@FUNCTION_NAME@';
"#)]
fn sendjobs_guard_terminal_trigger<'a>(
    trigger: &'a PgTrigger<'a>,
) -> std::result::Result<Option<PgHeapTuple<'a, AllocatedByPostgres>>, std::convert::Infallible> {
    Ok(or_raise(guard_row(trigger)))
}

fn guard_row<'a>(
    trigger: &'a PgTrigger<'a>,
) -> errors::Result<Option<PgHeapTuple<'a, AllocatedByPostgres>>> {
    let event = trigger.event();
    if !(event.fired_by_update() && event.fired_before() && event.fired_for_row()) {
        return Err(SendJobsError::TriggerMisuse(
            "sendjobs_guard_terminal_trigger must fire BEFORE UPDATE ... FOR EACH ROW".into(),
        ));
    }
    let rule = rule_for(trigger)?;
    let data = trigger.trigger_data();
    // SAFETY: a row-level UPDATE trigger has a relation, the old tuple and the new one.
    let (old, new) = unsafe {
        let tupdesc = (*data.tg_relation).rd_att;
        let column = CString::new(rule.column.as_str())
            .map_err(|_| SendJobsError::InvalidArgument("column name contains NUL".into()))?;
        let attnum = pg_sys::SPI_fnumber(tupdesc, column.as_ptr());
        if attnum <= 0 {
            return Err(SendJobsError::UndefinedColumn {
                table: relation_display(trigger),
                column: rule.column.clone(),
            });
        }
        (
            column_text(data.tg_trigtuple, tupdesc, attnum),
            column_text(data.tg_newtuple, tupdesc, attnum),
        )
    };
    if !rule.refuses(old.as_deref(), new.as_deref()) {
        return Ok(trigger.new());
    }
    let refusal = SendJobsError::TerminalTransition {
        table: relation_display(trigger),
        column: rule.column.clone(),
        key: row_key(trigger),
        from: quoted_or_null(old),
        to: quoted_or_null(new),
    };
    match config::guard_action() {
        GuardAction::Error => Err(refusal),
        GuardAction::Skip => {
            refusal.warn();
            Ok(None)
        }
    }
}

fn relation_display(trigger: &PgTrigger<'_>) -> String {
    match (trigger.table_schema(), trigger.table_name()) {
        (Ok(schema), Ok(table)) => pgrx::spi::quote_qualified_identifier(schema, table),
        _ => "the guarded table".into(),
    }
}

/// Names the refused row by its primary key, e.g. `(id)=(42)`, or by its ctid.
fn row_key(trigger: &PgTrigger<'_>) -> String {
    let data = trigger.trigger_data();
    // SAFETY: the relation and old tuple of a row-level UPDATE trigger are valid here.
    let (relid, tupdesc, old) = unsafe {
        (
            (*data.tg_relation).rd_id,
            (*data.tg_relation).rd_att,
            data.tg_trigtuple,
        )
    };
    let key_columns = Spi::connect(|client| {
        PRIMARY_KEY_COLUMNS
            .select_as_caller(client, &[relid.into()])?
            .map(|row| {
                Ok((
                    row.get_by_name::<i32, _>("attnum")?.unwrap_or(0),
                    row.get_by_name::<String, _>("attname")?.unwrap_or_default(),
                ))
            })
            .collect::<errors::Result<Vec<_>>>()
    });
    match key_columns {
        Ok(columns) if !columns.is_empty() => {
            let names: Vec<_> = columns
                .iter()
                .map(|(_, name)| pgrx::spi::quote_identifier(name))
                .collect();
            // SAFETY: attnums come from the table's own primary key.
            let values: Vec<_> = columns
                .iter()
                .map(|(attnum, _)| {
                    unsafe { column_text(old, tupdesc, *attnum) }.unwrap_or_else(|| "NULL".into())
                })
                .collect();
            format!("({})=({})", names.join(", "), values.join(", "))
        }
        // SAFETY: t_self of the old tuple is its location.
        _ => unsafe {
            let ctid = (*old).t_self;
            let block = (u32::from(ctid.ip_blkid.bi_hi) << 16) | u32::from(ctid.ip_blkid.bi_lo);
            format!("ctid ({},{})", block, ctid.ip_posid)
        },
    }
}
