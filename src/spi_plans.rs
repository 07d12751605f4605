//! Prepared SPI plans, kept for the life of the backend, one per statement text.
//!
//! Statement texts (src/statements.rs) name our objects as `@extschema@.x`, as the DDL in `sql/` does; the
//! placeholder is replaced by the extension's schema (quoted) before the text is prepared,
//! so a caller's search_path never decides which table we touch.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use pgrx::datum::DatumWithOid;
use pgrx::pg_sys::{self, PgOid};
use pgrx::spi::{OwnedPreparedStatement, SpiClient, SpiTupleTable};
use pgrx::{FromDatum, IntoDatum};

use crate::errors::{Result, SendJobsError};
use crate::statements::EXTENSION_SCHEMA;

struct PlanCache {
    /// `send_jobs` of the extension the plans were made for: while this relation exists
    /// the extension has not been dropped, so the cached schema and plans still hold.
    send_jobs: pg_sys::Oid,
    schema: String,
    plans: HashMap<String, Rc<OwnedPreparedStatement>>,
}

thread_local! {
    static CACHE: RefCell<Option<PlanCache>> = const { RefCell::new(None) };
}

impl PlanCache {
    fn is_current(&self) -> bool {
        // SAFETY: a syscache probe by OID; it returns '\0' for a relation that is gone.
        unsafe { pg_sys::get_rel_relkind(self.send_jobs) != 0 }
    }

    fn load(client: &SpiClient<'_>) -> Result<Self> {
        let row = client
            .select(EXTENSION_SCHEMA.as_str(), Some(1), &[])?
            .first();
        let (schema, send_jobs) = if row.is_empty() {
            (None, None)
        } else {
            row.get_two::<String, pg_sys::Oid>()?
        };
        match (schema, send_jobs) {
            (Some(schema), Some(send_jobs)) => Ok(Self {
                send_jobs,
                schema,
                plans: HashMap::new(),
            }),
            _ => Err(SendJobsError::Internal(
                "extension sendjobs is not installed".into(),
            )),
        }
    }
}

/// Runs `f` on the backend's cache, (re)loading it when the extension is new to it.
fn with_cache<R>(client: &SpiClient<'_>, f: impl FnOnce(&mut PlanCache) -> R) -> Result<R> {
    let current = CACHE.with_borrow(|cache| cache.as_ref().is_some_and(PlanCache::is_current));
    if !current {
        CACHE.set(Some(PlanCache::load(client)?));
    }
    CACHE.with_borrow_mut(|cache| match cache {
        Some(cache) => Ok(f(cache)),
        None => Err(SendJobsError::Internal("the plan cache is missing".into())),
    })
}

/// The extension's schema, quoted for SQL text.
pub fn extension_schema(client: &SpiClient<'_>) -> Result<String> {
    with_cache(client, |cache| cache.schema.clone())
}

/// Returns the backend's prepared plan for `sql`, preparing and keeping it on first use.
pub fn plan(
    client: &SpiClient<'_>,
    sql: &str,
    args: &[PgOid],
) -> Result<Rc<OwnedPreparedStatement>> {
    let (cached, schema) = with_cache(client, |cache| {
        (cache.plans.get(sql).cloned(), cache.schema.clone())
    })?;
    if let Some(plan) = cached {
        return Ok(plan);
    }
    // Prepared outside the cache's borrow: preparing may run code that plans statements too.
    let text = sql.replace("@extschema@", &schema);
    let prepared = Rc::new(client.prepare_mut(text.as_str(), args)?.keep());
    with_cache(client, |cache| {
        cache.plans.insert(sql.to_owned(), prepared.clone())
    })?;
    Ok(prepared)
}

/// Executes one of our kept statements with its generic plan.
///
/// Why: the plan cache re-plans a statement for its parameter values ("custom plan")
/// whenever that looks cheaper than the generic plan, and for these statements it
/// nearly always does (a 1-element array, a LIMIT of 1), so every call paid for planning
/// (about 0.1 ms, more than executing). Their generic plans are index-ordered and
/// independent of the values (src/tests.rs checks the claim's under a 1,000,000-row
/// backlog), so `plan_cache_mode = force_generic_plan` is set for the statement alone,
/// in a GUC nest level that is popped afterwards (or by the abort, on error). Not used
/// for the business-row stamp, whose triggers are the caller's.
pub fn execute<'conn>(
    client: &SpiClient<'conn>,
    statement: &OwnedPreparedStatement,
    args: &[DatumWithOid<'_>],
) -> Result<SpiTupleTable<'conn>> {
    // SAFETY: the same calls the function manager makes for a function's SET clause.
    let nest_level = unsafe {
        let nest_level = pg_sys::NewGUCNestLevel();
        pg_sys::set_config_option(
            c"plan_cache_mode".as_ptr(),
            c"force_generic_plan".as_ptr(),
            pg_sys::GucContext::PGC_USERSET,
            pg_sys::GucSource::PGC_S_SESSION,
            pg_sys::GucAction::GUC_ACTION_SAVE,
            true,
            0,
            false,
        );
        nest_level
    };
    let rows = client.select(statement, None, args);
    // SAFETY: pops exactly the level pushed above.
    unsafe { pg_sys::AtEOXact_GUC(true, nest_level) };
    Ok(rows?)
}

/// The first column of the first row, or None when there is no row (or it is NULL).
pub fn first_value<T: FromDatum + IntoDatum>(rows: SpiTupleTable<'_>) -> Result<Option<T>> {
    let rows = rows.first();
    if rows.is_empty() {
        return Ok(None);
    }
    Ok(rows.get_one::<T>()?)
}
