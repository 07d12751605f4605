//! SQL types pgrx does not map, as function arguments: `name` (identifiers) and
//! `regrole` (roles).

use std::ffi::CStr;

use pgrx::callconv::{Arg, ArgAbi};
use pgrx::pg_sys;
use pgrx::prelude::*;

/// An identifier passed as SQL `name` (as `status_column name` in the contract).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqlName(pub String);

impl FromDatum for SqlName {
    unsafe fn from_polymorphic_datum(
        datum: pg_sys::Datum,
        is_null: bool,
        _: pg_sys::Oid,
    ) -> Option<Self> {
        if is_null {
            return None;
        }
        // SAFETY: a non-null `name` datum points at a NUL-terminated NameData.
        let text = unsafe { CStr::from_ptr(datum.cast_mut_ptr::<std::ffi::c_char>()) };
        Some(SqlName(text.to_string_lossy().into_owned()))
    }
}

// SAFETY: `name` is a fixed-size by-reference type; FromDatum above reads it as such.
unsafe impl<'fcx> ArgAbi<'fcx> for SqlName {
    unsafe fn unbox_arg_unchecked(arg: Arg<'_, 'fcx>) -> Self {
        let index = arg.index();
        unsafe { arg.unbox_arg_using_from_datum() }
            .unwrap_or_else(|| panic!("argument {index} must not be null"))
    }
}

pgrx::impl_sql_translatable!(SqlName, "name");

/// A role passed as SQL `regrole` (the type checks that the role exists, 42704).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqlRole(pub pg_sys::Oid);

impl FromDatum for SqlRole {
    unsafe fn from_polymorphic_datum(
        datum: pg_sys::Datum,
        is_null: bool,
        _: pg_sys::Oid,
    ) -> Option<Self> {
        // SAFETY: a regrole datum is an oid.
        (!is_null)
            .then(|| SqlRole(unsafe { pg_sys::Oid::from_datum(datum, false) }.unwrap_or_default()))
    }
}

// SAFETY: `regrole` is a by-value oid; FromDatum above reads it as such.
unsafe impl<'fcx> ArgAbi<'fcx> for SqlRole {
    unsafe fn unbox_arg_unchecked(arg: Arg<'_, 'fcx>) -> Self {
        let index = arg.index();
        unsafe { arg.unbox_arg_using_from_datum() }
            .unwrap_or_else(|| panic!("argument {index} must not be null"))
    }
}

pgrx::impl_sql_translatable!(SqlRole, "regrole");
