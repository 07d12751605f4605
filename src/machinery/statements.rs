//! The statements the functions run, one file each in `sql/statements/`, read at compile
//! time. A file declares itself, at its top:
//!
//! ```sql
//! --- params: now timestamptz, batch int8
//! --- columns: id, gave_up
//! ```
//!
//! the name and type of each parameter, `$1` first, and the names of its result columns
//! (`none` for either when there are none). The module that runs a statement names its
//! file beside the code, with `statement!`, passes the parameters in the declared order
//! and reads the results by column name (`get_by_name`, or `first` here). `src/tests/statements.rs` prepares every
//! file with its declared types and checks its result columns against the declaration.
//!
//! A file may hold variants of its statement: the lines after `--- variant NAME` belong
//! to variant NAME only (after `--- variant A, B`, to A and B), up to the next
//! `--- variant` or `--- end`; every other line belongs to all variants. Comment lines are dropped, so what the server logs and
//! pg_stat_statements show is the statement alone. `@extschema@` is left for
//! `spi_plans` to replace.
//!
//! The statements are for the catalog of this release only: a database whose catalog is
//! older keeps the library of its own release until `ALTER EXTENSION sendjobs UPDATE`
//! (docs/decisions/0001-a-library-per-release.md).

use std::sync::LazyLock;

use pgrx::datum::DatumWithOid;
use pgrx::pg_sys::{self, PgOid};
use pgrx::spi::SpiTupleTable;
use pgrx::{FromDatum, IntoDatum};

use crate::machinery::errors::Result;

/// One statement of `sql/statements/` (or one variant of it): write it with `statement!`.
pub struct Statement {
    pub(crate) parsed: LazyLock<Parsed>,
}

/// What a statement file says, for one variant.
#[derive(Debug, PartialEq, Eq)]
pub struct Parsed {
    /// The statement without comment lines, `@extschema@` still in it.
    pub text: String,
    /// Each parameter's name, `$1` first.
    pub params: Vec<String>,
    /// Each parameter's type.
    pub types: Vec<PgOid>,
    /// The names of the result columns, in order.
    pub columns: Vec<String>,
}

/// `statement!("claim.sql", "one_queue")`: variant `one_queue` of
/// `sql/statements/claim.sql`; `statement!("cancel.sql")`: a file without variants.
/// The file is found from the crate's root: the macro is expanded in files at every depth
/// of `src/`.
macro_rules! statement {
    ($file:literal) => {
        $crate::machinery::statements::Statement {
            parsed: std::sync::LazyLock::new(|| {
                $crate::machinery::statements::parse(
                    $file,
                    include_str!(concat!(
                        env!("CARGO_MANIFEST_DIR"),
                        "/sql/statements/",
                        $file
                    )),
                    None,
                )
            }),
        }
    };
    ($file:literal, $variant:literal) => {
        $crate::machinery::statements::Statement {
            parsed: std::sync::LazyLock::new(|| {
                $crate::machinery::statements::parse(
                    $file,
                    include_str!(concat!(
                        env!("CARGO_MANIFEST_DIR"),
                        "/sql/statements/",
                        $file
                    )),
                    Some($variant),
                )
            }),
        }
    };
}
pub(crate) use statement;

impl Statement {
    /// The statement's text, `@extschema@` still in it.
    pub fn text(&self) -> &str {
        &self.parsed.text
    }

    /// The parameters' types, as the file declares them.
    pub(crate) fn types(&self) -> &[PgOid] {
        &self.parsed.types
    }

    pub(crate) fn check_args(&self, args: &[DatumWithOid<'_>]) {
        debug_assert_eq!(
            args.len(),
            self.parsed.params.len(),
            "the arguments of a statement are its declared parameters: {:?}",
            self.parsed.params
        );
    }

    /// The 1-based position of result column `name`, as the file declares it: for loops
    /// over many rows, which would otherwise look each column up by name on every row.
    /// Panics on a name the file does not declare (src/tests/statements.rs checks the
    /// declarations against the statements).
    pub fn ordinal(&self, name: &str) -> usize {
        1 + self
            .parsed
            .columns
            .iter()
            .position(|column| column == name)
            .unwrap_or_else(|| panic!("no result column {name:?} is declared"))
    }
}

/// Column `name` of the first row of `rows`; None when there is no row or it is NULL.
pub fn first<T: FromDatum + IntoDatum>(rows: SpiTupleTable<'_>, name: &str) -> Result<Option<T>> {
    let row = rows.first();
    if row.is_empty() {
        return Ok(None);
    }
    Ok(row.get_by_name::<T, _>(name)?)
}

/// The oid of a parameter type as the statement files spell it. Only the types our
/// statements use: another one is a mistake in a file, which the first test to prepare
/// it reports.
fn type_oid(name: &str) -> Option<pg_sys::Oid> {
    Some(match name {
        "bool" => pg_sys::BOOLOID,
        "int2" => pg_sys::INT2OID,
        "int4" => pg_sys::INT4OID,
        "int8" => pg_sys::INT8OID,
        "int8[]" => pg_sys::INT8ARRAYOID,
        "float8" => pg_sys::FLOAT8OID,
        "text" => pg_sys::TEXTOID,
        "text[]" => pg_sys::TEXTARRAYOID,
        "jsonb" => pg_sys::JSONBOID,
        "jsonb[]" => pg_sys::JSONBARRAYOID,
        "int4[]" => pg_sys::INT4ARRAYOID,
        "timestamptz[]" => pg_sys::TIMESTAMPTZARRAYOID,
        "timestamptz" => pg_sys::TIMESTAMPTZOID,
        "interval" => pg_sys::INTERVALOID,
        "oid" => pg_sys::OIDOID,
        "regclass" => pg_sys::REGCLASSOID,
        _ => return None,
    })
}

/// What `source` (the file `file`) says for variant `wanted` (None: a file without
/// variants). Panics on a mistake in the file: a missing declaration, an unknown type, a
/// variant it does not have; the first test to run the statement reports it.
pub fn parse(file: &str, source: &str, wanted: Option<&str>) -> Parsed {
    let mut keep = true;
    let mut found = wanted.is_none();
    let mut text = String::with_capacity(source.len());
    let (mut params, mut columns): (Option<Vec<_>>, _) = (None, None);
    for line in source.lines() {
        let code = line.trim_start();
        if let Some(marker) = code.strip_prefix("--- ") {
            let marker = marker.trim();
            if let Some(list) = marker.strip_prefix("params:") {
                params = Some(declared(list).map(|param| parameter(file, param)).collect());
            } else if let Some(list) = marker.strip_prefix("columns:") {
                columns = Some(declared(list).map(str::to_owned).collect());
            } else if let Some(names) = marker.strip_prefix("variant ") {
                keep = variant_names(names).any(|name| Some(name) == wanted);
                found |= keep;
            } else {
                assert_eq!(marker, "end", "{file}: an unknown marker {marker:?}");
                keep = true;
            }
        } else if keep && !code.is_empty() && !code.starts_with("--") {
            text.push_str(line);
            text.push('\n');
        }
    }
    assert!(found, "{file}: no variant {wanted:?}");
    let (params, types) = params
        .unwrap_or_else(|| panic!("{file}: no \"--- params:\" line"))
        .into_iter()
        .unzip();
    Parsed {
        text,
        params,
        types,
        columns: columns.unwrap_or_else(|| panic!("{file}: no \"--- columns:\" line")),
    }
}

/// The variants a `--- variant` marker names (after `variant `): one, or a
/// comma-separated list.
pub fn variant_names(names: &str) -> impl Iterator<Item = &str> {
    names.split(',').map(str::trim)
}

/// The items of a declaration's comma-separated list; `none` is the empty list.
fn declared(list: &str) -> impl Iterator<Item = &str> {
    let list = list.trim();
    list.split(',')
        .map(str::trim)
        .filter(move |_| list != "none")
}

/// `name type`, as a parameter is declared.
fn parameter(file: &str, declaration: &str) -> (String, PgOid) {
    let (name, type_name) = declaration
        .split_once(' ')
        .unwrap_or_else(|| panic!("{file}: a parameter reads `name type`: {declaration:?}"));
    let oid = type_oid(type_name.trim())
        .unwrap_or_else(|| panic!("{file}: an unknown parameter type {type_name:?}"));
    (name.to_owned(), oid.into())
}
