//! How the extension runs its own SQL: prepared plans kept for the life of the backend,
//! one per statement text, and the scope every one of our statements runs in.
//!
//! Statement texts (src/machinery/statements.rs) name our objects as `@extschema@.x`, as
//! the DDL in `sql/` does; the placeholder is replaced by the extension's schema (quoted)
//! before the text is prepared. Every statement is prepared and run with `search_path =
//! pg_catalog, pg_temp`, so no function, operator or type that anyone planted on the
//! caller's search_path can stand in for pg_catalog's (tests/pg_regress/sql/security.sql
//! plants them). The queue statements also run as the extension's owner, the way
//! Postgres runs its own foreign-key checks: callers need EXECUTE on our functions, and
//! no privilege on the queue tables. The business-row stamp (src/verbs/link.rs) runs as the
//! role that linked the table, restricted (`Scope::Linker`), with a search_path of the
//! table's schema and types: the linked table's code (its triggers, its types' functions)
//! runs with the rights of whoever linked it, never a caller's.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::rc::Rc;

use pgrx::datum::DatumWithOid;
use pgrx::pg_sys::{self, PgOid};
use pgrx::spi::{OwnedPreparedStatement, SpiClient, SpiTupleTable};

use crate::machinery::errors::{Result, SendJobsError};
use crate::machinery::statements::{statement, Statement};

static EXTENSION_SCHEMA: Statement = statement!("extension_schema.sql");

struct PlanCache {
    /// `send_jobs` of the extension the plans were made for: while this relation exists
    /// the extension has not been dropped.
    send_jobs: pg_sys::Oid,
    /// `send_jobs_id_seq`, the ids' sequence (a keyed enqueue draws its job's id from it).
    id_sequence: pg_sys::Oid,
    /// `sendjobs_queues`, the queues' settings (src/flow/limited.rs keeps which have flow
    /// control).
    settings: pg_sys::Oid,
    /// The extension's schema by oid, and its name when the plans were made: a renamed
    /// schema (ALTER SCHEMA ... RENAME) makes the cache reload, with new plans.
    namespace: pg_sys::Oid,
    namespace_name: String,
    /// The name, quoted for SQL text.
    schema: String,
    /// The role the queue statements run as.
    owner: pg_sys::Oid,
    plans: HashMap<String, Rc<OwnedPreparedStatement>>,
}

thread_local! {
    static CACHE: RefCell<Option<PlanCache>> = const { RefCell::new(None) };
}

impl PlanCache {
    fn is_current(&self) -> bool {
        // SAFETY: syscache probes by OID; get_rel_relkind returns '\0' for a relation that
        // is gone, get_namespace_name NULL for a schema that is gone.
        unsafe {
            if pg_sys::get_rel_relkind(self.send_jobs) == 0 {
                return false;
            }
            let name = pg_sys::get_namespace_name(self.namespace);
            !name.is_null() && CStr::from_ptr(name).to_bytes() == self.namespace_name.as_bytes()
        }
    }

    fn load(client: &SpiClient<'_>) -> Result<Self> {
        let row = EXTENSION_SCHEMA.select_as_caller(client, &[])?.first();
        if row.is_empty() {
            return Err(SendJobsError::Internal(
                "extension sendjobs is not installed".into(),
            ));
        }
        let missing =
            || SendJobsError::Internal("the extension's catalog row is incomplete".into());
        let schema = row
            .get_by_name::<String, _>("schema")?
            .ok_or_else(missing)?;
        let namespace = row
            .get_by_name::<pg_sys::Oid, _>("namespace")?
            .ok_or_else(missing)?;
        let send_jobs = row
            .get_by_name::<pg_sys::Oid, _>("send_jobs")?
            .ok_or_else(missing)?;
        let owner = row
            .get_by_name::<pg_sys::Oid, _>("owner")?
            .ok_or_else(missing)?;
        // Each release's functions are bound to its own library, so a catalog of another
        // release never calls this one, but by a hand-made CREATE FUNCTION: refuse it
        // rather than run this release's statements on another release's tables.
        let version = row
            .get_by_name::<String, _>("version")?
            .ok_or_else(missing)?;
        if version != env!("CARGO_PKG_VERSION") {
            return Err(SendJobsError::CatalogVersion(version));
        }
        // SAFETY: the schema exists: the row above was just read from the catalog.
        let namespace_name = unsafe { CStr::from_ptr(pg_sys::get_namespace_name(namespace)) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: a syscache probe by name and schema oid.
        let id_sequence =
            unsafe { pg_sys::get_relname_relid(c"send_jobs_id_seq".as_ptr(), namespace) };
        if id_sequence == pg_sys::InvalidOid {
            return Err(SendJobsError::Internal(
                "the extension's sequence send_jobs_id_seq is missing".into(),
            ));
        }
        // SAFETY: as above.
        let settings = unsafe { pg_sys::get_relname_relid(c"sendjobs_queues".as_ptr(), namespace) };
        if settings == pg_sys::InvalidOid {
            return Err(SendJobsError::Internal(
                "the extension's table sendjobs_queues is missing".into(),
            ));
        }
        Ok(Self {
            send_jobs,
            id_sequence,
            settings,
            namespace,
            namespace_name,
            schema,
            owner,
            plans: HashMap::new(),
        })
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

/// The oids of `send_jobs` and of its ids' sequence, for statements that need them as
/// values (`pg_stat_get_dead_tuples`, `nextval`): passed as parameters rather than written
/// as `'@extschema@.name'`, a literal that a schema name holding a quote breaks. Kept in
/// the cache, read once per load.
pub fn queue_relation_oids(client: &SpiClient<'_>) -> Result<(pg_sys::Oid, pg_sys::Oid)> {
    with_cache(client, |cache| (cache.send_jobs, cache.id_sequence))
}

/// The oid of `sendjobs_queues`, the queues' settings (src/flow/limited.rs: the lock and
/// the invalidation that keep each backend's list of limited queues current).
pub fn settings_relation(client: &SpiClient<'_>) -> Result<pg_sys::Oid> {
    with_cache(client, |cache| cache.settings)
}

/// Who a statement runs as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The caller, with `search_path = pg_catalog, pg_temp`: catalog look-ups, checks of
    /// the caller's own input, DDL on the caller's own tables.
    Caller,
    /// The extension's owner, with `search_path = pg_catalog, pg_temp`: every statement
    /// on the queue tables.
    Owner(pg_sys::Oid),
    /// The role that linked the business table, as a security-restricted operation (as
    /// Postgres runs the code of a table it maintains: no SET ROLE, no session state),
    /// for the statements that run the linked table's code.
    Linker(pg_sys::Oid),
}

/// The scope of the queue statements: the extension's owner.
pub fn owner_scope(client: &SpiClient<'_>) -> Result<Scope> {
    with_cache(client, |cache| Scope::Owner(cache.owner))
}

/// Runs `f` in `scope`: `search_path = pg_catalog, pg_temp`, generic plans and no parallel
/// workers for the statement alone, in a GUC nest level that is popped afterwards, and for
/// `Scope::Owner` as the extension's owner (a local user id change, as Postgres makes
/// for its foreign-key checks). On an error, the abort of the (sub)transaction pops the
/// level and restores the user, as it does for a function's SET clause.
///
/// Why generic plans: the plan cache re-plans a statement for its parameter values
/// ("custom plan") whenever that looks cheaper than the generic plan, and for these
/// statements it nearly always does (a 1-element array, a LIMIT of 1), so every call
/// paid for planning, more than executing (decision 0009). Their generic plans are
/// index-ordered and independent of the values (src/tests/plans.rs checks the claim's
/// under a 1,000,000-row backlog).
///
/// Why no parallel workers: every statement of ours reads a bounded number of rows, and
/// starting workers costs more than that (decision 0010).
pub fn within<R>(scope: Scope, f: impl FnOnce() -> Result<R>) -> Result<R> {
    within_planned(scope, Planning::Generic, f)
}

/// How a statement is planned (`within`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Planning {
    /// Once, for any values: every statement on the hot path (`within` says why).
    Generic,
    /// Once, for any values, by index scans alone (bitmap and sequential scans off): a
    /// statement each of whose scans has an index made for it, and must follow that
    /// index's order and stop at its limit whatever the statistics say: the claims'
    /// (claim_shares.sql, claim.sql's one_queue: with statistics taken before a burst,
    /// other plans read the burst by a bitmap scan and sorted it; src/tests/plans.rs,
    /// decision 0019).
    IndexOrdered,
    /// For the values of each call: a statement whose best plan depends on how many ids
    /// it is given, where a generic plan assumes ten elements of an array parameter
    /// (sendjobs_redrive's: decision 0009, "Notes from the code").
    ForTheValues,
}

/// `within`, planned as `planning` says.
pub fn within_planned<R>(
    scope: Scope,
    planning: Planning,
    f: impl FnOnce() -> Result<R>,
) -> Result<R> {
    within_path(scope, planning, c"pg_catalog, pg_temp", f)
}

/// `within_planned` with `search_path` set to `path` (the stamp's: src/verbs/link.rs).
pub fn within_path<R>(
    scope: Scope,
    planning: Planning,
    path: &CStr,
    f: impl FnOnce() -> Result<R>,
) -> Result<R> {
    let plan_cache_mode = match planning {
        Planning::Generic | Planning::IndexOrdered => c"force_generic_plan",
        Planning::ForTheValues => c"force_custom_plan",
    };

    let (mut caller, mut context) = (pg_sys::InvalidOid, 0);
    // SAFETY: the same calls the function manager makes for a function's SET clause and
    // SECURITY DEFINER; both are undone below, or by the abort.
    let nest_level = unsafe {
        let nest_level = pg_sys::NewGUCNestLevel();
        let settings = [
            (c"search_path", path),
            (c"plan_cache_mode", plan_cache_mode),
            (c"max_parallel_workers_per_gather", c"0"),
            (c"enable_bitmapscan", c"off"),
            (c"enable_seqscan", c"off"),
        ];
        // Set for an IndexOrdered statement only: a setting more costs every statement
        // its call.
        let count = if planning == Planning::IndexOrdered {
            5
        } else {
            3
        };
        for &(name, value) in &settings[..count] {
            pg_sys::set_config_option(
                name.as_ptr(),
                value.as_ptr(),
                pg_sys::GucContext::PGC_USERSET,
                pg_sys::GucSource::PGC_S_SESSION,
                pg_sys::GucAction::GUC_ACTION_SAVE,
                true,
                0,
                false,
            );
        }
        let switch = match scope {
            Scope::Caller => None,
            Scope::Owner(owner) => Some((owner, pg_sys::SECURITY_LOCAL_USERID_CHANGE)),
            Scope::Linker(linker) => Some((
                linker,
                pg_sys::SECURITY_LOCAL_USERID_CHANGE | pg_sys::SECURITY_RESTRICTED_OPERATION,
            )),
        };
        if let Some((user, flags)) = switch {
            pg_sys::GetUserIdAndSecContext(&mut caller, &mut context);
            pg_sys::SetUserIdAndSecContext(user, context | flags as i32);
        }
        nest_level
    };
    let result = f();
    // SAFETY: restores exactly what was changed above.
    unsafe {
        if scope != Scope::Caller {
            pg_sys::SetUserIdAndSecContext(caller, context);
        }
        pg_sys::AtEOXact_GUC(true, nest_level);
    }
    result
}

/// Returns the backend's prepared plan for `sql`, preparing and keeping it on first use.
/// Prepared with `search_path = pg_catalog, pg_temp`: names resolve there for good.
pub fn plan(
    client: &SpiClient<'_>,
    sql: &str,
    args: &[PgOid],
) -> Result<Rc<OwnedPreparedStatement>> {
    keep(client, sql, args, None)
}

/// `plan` for the statements that run the linked table's code (src/verbs/link.rs): prepared
/// in the scope and with the search_path they run in.
pub fn plan_as_linker(
    client: &SpiClient<'_>,
    sql: &str,
    args: &[PgOid],
    linker: pg_sys::Oid,
    path: &CStr,
) -> Result<Rc<OwnedPreparedStatement>> {
    keep(client, sql, args, Some((linker, path)))
}

fn keep(
    client: &SpiClient<'_>,
    sql: &str,
    args: &[PgOid],
    linker: Option<(pg_sys::Oid, &CStr)>,
) -> Result<Rc<OwnedPreparedStatement>> {
    let (cached, schema) = with_cache(client, |cache| {
        (cache.plans.get(sql).cloned(), cache.schema.clone())
    })?;
    if let Some(plan) = cached {
        return Ok(plan);
    }
    // Prepared outside the cache's borrow: preparing may run code that plans statements too.
    let text = sql.replace("@extschema@", &schema);
    let prepare = || Ok(client.prepare_mut(text.as_str(), args)?.keep());
    let prepared = Rc::new(match linker {
        None => within(Scope::Caller, prepare)?,
        Some((linker, path)) => {
            within_path(Scope::Linker(linker), Planning::Generic, path, prepare)?
        }
    });
    with_cache(client, |cache| {
        cache.plans.insert(sql.to_owned(), prepared.clone())
    })?;
    Ok(prepared)
}

/// Executes one of our kept statements on the queue tables, as the extension's owner,
/// planned as `planning` says (src/machinery/statements.rs: `Statement::run`).
pub fn execute<'conn>(
    client: &SpiClient<'conn>,
    statement: &OwnedPreparedStatement,
    args: &[DatumWithOid<'_>],
    planning: Planning,
) -> Result<SpiTupleTable<'conn>> {
    // The statement came from `plan`, which has just checked the cache against the
    // catalog in this same call: its owner is read as it is, without a second check.
    let owner = CACHE.with_borrow(|cache| cache.as_ref().map(|cache| cache.owner));
    let scope = match owner {
        Some(owner) => Scope::Owner(owner),
        None => owner_scope(client)?,
    };
    within_planned(
        scope,
        planning,
        || Ok(client.select(statement, None, args)?),
    )
}

/// Runs one of our statements once, as the extension's owner, in a snapshot of the present
/// instead of the transaction's: under REPEATABLE READ and SERIALIZABLE, what must see
/// every change committed so far (a queue's settings: decision 0017), as PostgreSQL's own
/// foreign-key checks run (`SPI_execute_snapshot`; pgrx runs a statement in the
/// transaction's snapshot). Prepared for this call only: such calls are rare. Returns the
/// first column of each row as text.
pub fn execute_now(
    client: &SpiClient<'_>,
    sql: &str,
    types: &[PgOid],
    args: &[DatumWithOid<'_>],
) -> Result<Vec<Option<String>>> {
    let text = sql.replace("@extschema@", &extension_schema(client)?);
    let text = CString::new(text)
        .map_err(|_| SendJobsError::Internal("a statement with a NUL byte".into()))?;
    let mut types: Vec<pg_sys::Oid> = types.iter().map(|t| t.value()).collect();
    let (mut values, nulls): (Vec<pg_sys::Datum>, Vec<std::ffi::c_char>) = args
        .iter()
        .map(|arg| match arg.datum() {
            Some(datum) => (datum.sans_lifetime(), b' ' as std::ffi::c_char),
            None => (pg_sys::Datum::from(0usize), b'n' as std::ffi::c_char),
        })
        .unzip();
    within(owner_scope(client)?, || {
        // SAFETY: SPI is connected (the caller's client); the arguments match the declared
        // types; the plan is freed before the end, and every value is read before the next
        // SPI call.
        unsafe {
            let plan = pg_sys::SPI_prepare(
                text.as_ptr(),
                i32::try_from(types.len()).unwrap_or(0),
                types.as_mut_ptr(),
            );
            if plan.is_null() {
                return Err(SendJobsError::Internal(
                    "a statement did not prepare".into(),
                ));
            }
            let status = pg_sys::SPI_execute_snapshot(
                plan,
                values.as_mut_ptr(),
                nulls.as_ptr(),
                pg_sys::GetLatestSnapshot(),
                std::ptr::null_mut(),
                false,
                true,
                0,
            );
            let mut rows = Vec::new();
            if status >= 0 && !pg_sys::SPI_tuptable.is_null() {
                let table = &*pg_sys::SPI_tuptable;
                for i in 0..usize::try_from(pg_sys::SPI_processed).unwrap_or(0) {
                    let value = pg_sys::SPI_getvalue(*table.vals.add(i), table.tupdesc, 1);
                    rows.push(
                        (!value.is_null())
                            .then(|| CStr::from_ptr(value).to_string_lossy().into_owned()),
                    );
                }
            }
            pg_sys::SPI_freeplan(plan);
            if status < 0 {
                return Err(SendJobsError::Internal(format!(
                    "a statement answered SPI status {status}"
                )));
            }
            Ok(rows)
        }
    })
}

/// A one-off query of ours (catalog look-ups, casts of the caller's input) in
/// `Scope::Caller`.
pub fn select<'conn>(
    client: &SpiClient<'conn>,
    sql: &str,
    args: &[DatumWithOid<'_>],
) -> Result<SpiTupleTable<'conn>> {
    within(Scope::Caller, || Ok(client.select(sql, None, args)?))
}

/// How a statement of `sql/statements/` runs: through the plans above.
impl Statement {
    /// Runs the statement on the queue tables, as the extension's owner, with a kept
    /// generic plan (`within` says why).
    pub fn run<'conn>(
        &self,
        client: &SpiClient<'conn>,
        args: &[DatumWithOid<'_>],
    ) -> Result<SpiTupleTable<'conn>> {
        self.run_planned(client, args, Planning::Generic)
    }

    /// `run`, planned as `planning` says.
    pub fn run_planned<'conn>(
        &self,
        client: &SpiClient<'conn>,
        args: &[DatumWithOid<'_>],
        planning: Planning,
    ) -> Result<SpiTupleTable<'conn>> {
        self.check_args(args);
        let plan = plan(client, self.text(), self.types())?;
        execute(client, &plan, args, planning)
    }

    /// Runs the statement once as the extension's owner in a snapshot of the present, not
    /// the transaction's (`execute_now`): the first column of each row, as text.
    pub fn run_now(
        &self,
        client: &SpiClient<'_>,
        args: &[DatumWithOid<'_>],
    ) -> Result<Vec<Option<String>>> {
        self.check_args(args);
        execute_now(client, self.text(), self.types(), args)
    }

    /// Runs the statement once, unprepared, as the caller: catalog look-ups and checks
    /// of the caller's own input (`Scope::Caller`).
    pub fn select_as_caller<'conn>(
        &self,
        client: &SpiClient<'conn>,
        args: &[DatumWithOid<'_>],
    ) -> Result<SpiTupleTable<'conn>> {
        self.check_args(args);
        select(client, self.text(), args)
    }
}
