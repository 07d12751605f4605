//! Prepared SPI plans, kept for the life of the backend, one per statement text.
//!
//! Statement texts name our objects as `@extschema@.x`, as the files in `sql/` do; the
//! placeholder is replaced by the extension's schema (quoted) before the text is prepared,
//! so a caller's search_path never decides which table we touch.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use pgrx::pg_sys::{self, PgOid};
use pgrx::spi::{OwnedPreparedStatement, SpiClient, SpiTupleTable};
use pgrx::{FromDatum, IntoDatum};

use crate::errors::{Result, SendJobsError};

struct PlanCache {
    extension_oid: pg_sys::Oid,
    schema: String,
    plans: HashMap<String, Rc<OwnedPreparedStatement>>,
}

thread_local! {
    static CACHE: RefCell<Option<PlanCache>> = const { RefCell::new(None) };
}

pub fn extension_oid() -> Result<pg_sys::Oid> {
    // SAFETY: a catalog lookup by name; with missing_ok it returns InvalidOid instead of raising.
    let oid = unsafe { pg_sys::get_extension_oid(c"sendjobs".as_ptr(), true) };
    if oid == pg_sys::InvalidOid {
        return Err(SendJobsError::Internal(
            "extension sendjobs is not installed".into(),
        ));
    }
    Ok(oid)
}

pub fn extension_schema(client: &SpiClient<'_>, extension_oid: pg_sys::Oid) -> Result<String> {
    let schema = first_value::<String>(client.select(
        "SELECT pg_catalog.quote_ident(n.nspname)
               FROM pg_catalog.pg_extension e
               JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
              WHERE e.oid = $1",
        Some(1),
        &[extension_oid.into()],
    )?)?;
    schema.ok_or_else(|| SendJobsError::Internal("the schema of extension sendjobs is gone".into()))
}

/// Returns the backend's prepared plan for `sql`, preparing and keeping it on first use.
/// A re-created extension (new OID) starts a fresh cache.
pub fn plan(
    client: &SpiClient<'_>,
    sql: &str,
    args: &[PgOid],
) -> Result<Rc<OwnedPreparedStatement>> {
    let extension_oid = extension_oid()?;
    let cached = CACHE.with_borrow(|cache| match cache {
        Some(cache) if cache.extension_oid == extension_oid => Some(cache.plans.get(sql).cloned()),
        _ => None,
    });
    let schema = match cached {
        Some(Some(plan)) => return Ok(plan),
        Some(None) => CACHE.with_borrow(|cache| cache.as_ref().map(|c| c.schema.clone())),
        None => None,
    };
    let schema = match schema {
        Some(schema) => schema,
        None => {
            let schema = extension_schema(client, extension_oid)?;
            CACHE.set(Some(PlanCache {
                extension_oid,
                schema: schema.clone(),
                plans: HashMap::new(),
            }));
            schema
        }
    };
    let text = sql.replace("@extschema@", &schema);
    let prepared = Rc::new(client.prepare_mut(text.as_str(), args)?.keep());
    CACHE.with_borrow_mut(|cache| {
        if let Some(cache) = cache {
            cache.plans.insert(sql.to_owned(), prepared.clone());
        }
    });
    Ok(prepared)
}

/// The first column of the first row, or None when there is no row (or it is NULL).
pub fn first_value<T: FromDatum + IntoDatum>(rows: SpiTupleTable<'_>) -> Result<Option<T>> {
    let rows = rows.first();
    if rows.is_empty() {
        return Ok(None);
    }
    Ok(rows.get_one::<T>()?)
}
