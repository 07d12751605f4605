//! The statement files (src/machinery/statements.rs): the variant rule and the
//! declarations, without a server; and, in one, that every file's declared columns are what
//! it returns.

#[cfg(test)]
mod parsing {
    use pgrx::pg_sys;

    use crate::machinery::statements::{parse, variant_names};

    /// Each variant of a file with variants is committed whole in `sql/expanded/`, as
    /// `FILE.VARIANT.sql`: what the server runs (and pg_stat_statements shows), one file
    /// each, for a reviewer to read. A difference from the source fails;
    /// `SENDJOBS_BLESS=1 cargo pgrx test` writes them again.
    #[test]
    fn every_variant_is_committed_whole() {
        let root = env!("CARGO_MANIFEST_DIR");
        let bless = std::env::var_os("SENDJOBS_BLESS").is_some();
        let mut wanted = Vec::new();
        let mut files: Vec<_> = std::fs::read_dir(format!("{root}/sql/statements"))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        files.sort();
        for path in files {
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            let source = std::fs::read_to_string(&path).unwrap();
            let mut variants: Vec<&str> = Vec::new();
            for line in source.lines() {
                if let Some(names) = line.trim().strip_prefix("--- variant ") {
                    for name in variant_names(names) {
                        if !variants.contains(&name) {
                            variants.push(name);
                        }
                    }
                }
            }
            for variant in variants {
                let name = format!("{}.{variant}.sql", file.trim_end_matches(".sql"));
                let text = parse(&file, &source, Some(variant)).text;
                let expanded = format!(
                    "-- sql/statements/{file}, variant {variant}, as the server runs it: written by\n\
                     -- SENDJOBS_BLESS=1 from the source, which is the one to edit.\n{}\n",
                    text.trim_end()
                );
                let target = format!("{root}/sql/expanded/{name}");
                if bless {
                    std::fs::create_dir_all(format!("{root}/sql/expanded")).unwrap();
                    std::fs::write(&target, &expanded).unwrap();
                }
                let committed = std::fs::read_to_string(&target).unwrap_or_default();
                assert!(
                    committed == expanded,
                    "sql/expanded/{name} is not variant {variant} of sql/statements/{file} \
                     (SENDJOBS_BLESS=1 writes it)"
                );
                wanted.push(name);
            }
        }
        for entry in std::fs::read_dir(format!("{root}/sql/expanded")).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            assert!(
                wanted.contains(&name),
                "sql/expanded/{name} is no variant of a statement any more: delete it"
            );
        }
    }

    const FILE: &str = "--- params: a int8, b text\n--- columns: x\n-- a comment\n\
        SELECT 1\n--- variant a\n  + 2\n--- variant b\n  + 3\n--- end\n  AS x\n";

    #[test]
    fn a_variant_keeps_its_own_lines_and_the_shared_ones() {
        assert_eq!(
            parse("f", FILE, Some("a")).text,
            "SELECT 1\n  + 2\n  AS x\n"
        );
        assert_eq!(
            parse("f", FILE, Some("b")).text,
            "SELECT 1\n  + 3\n  AS x\n"
        );
    }

    #[test]
    fn the_declarations_are_read_and_left_out_of_the_text() {
        let parsed = parse("f", FILE, Some("a"));
        assert_eq!(parsed.params, ["a", "b"]);
        assert_eq!(
            parsed.types,
            [pg_sys::INT8OID.into(), pg_sys::TEXTOID.into()]
        );
        assert_eq!(parsed.columns, ["x"]);
        let none = parse(
            "f",
            "--- params: none\n--- columns: none\nDELETE FROM t\n",
            None,
        );
        assert!(none.params.is_empty() && none.types.is_empty() && none.columns.is_empty());
    }

    #[test]
    fn lines_may_belong_to_several_variants() {
        let file = "--- params: none\n--- columns: x\nSELECT 1\n--- variant a, b\n  + 2\n\
            --- variant c\n  + 3\n--- end\n  AS x\n";
        for variant in ["a", "b"] {
            assert_eq!(
                parse("f", file, Some(variant)).text,
                "SELECT 1\n  + 2\n  AS x\n"
            );
        }
        assert_eq!(
            parse("f", file, Some("c")).text,
            "SELECT 1\n  + 3\n  AS x\n"
        );
    }

    #[test]
    #[should_panic(expected = "no variant")]
    fn an_unknown_variant_is_a_mistake() {
        parse("f", FILE, Some("c"));
    }

    #[test]
    #[should_panic(expected = "an unknown parameter type")]
    fn an_unknown_type_is_a_mistake() {
        parse(
            "f",
            "--- params: a numeric\n--- columns: none\nSELECT $1\n",
            None,
        );
    }

    #[test]
    #[should_panic(expected = "no \"--- columns:\" line")]
    fn a_file_declares_its_columns() {
        parse("f", "--- params: none\nSELECT 1\n", None);
    }
}

#[pgrx::pg_schema]
mod tests {
    use std::ffi::CString;

    use pgrx::prelude::*;
    use pgrx::{PgList, PgTupleDesc};

    use crate::machinery::statements::{parse, variant_names, Parsed};

    /// The names of the columns `parsed` returns, as the server prepares it with the
    /// declared parameter types (an undeclared or wrongly typed parameter fails here).
    fn result_columns(file: &str, parsed: &Parsed) -> Vec<String> {
        let text = CString::new(parsed.text.replace("@extschema@", "public")).unwrap();
        let mut types: Vec<pg_sys::Oid> = parsed.types.iter().map(|t| t.value()).collect();
        Spi::connect(|_| {
            // SAFETY: SPI is connected; the plan's sources and their result descriptor
            // live in SPI's memory until it disconnects, after we have read them.
            unsafe {
                let plan =
                    pg_sys::SPI_prepare(text.as_ptr(), types.len() as i32, types.as_mut_ptr());
                assert!(!plan.is_null(), "{file}: SPI_prepare failed");
                let sources = PgList::<pg_sys::CachedPlanSource>::from_pg(
                    pg_sys::SPI_plan_get_plan_sources(plan),
                );
                let source = sources.get_ptr(0).expect("a plan source");
                let desc = (*source).resultDesc;
                if desc.is_null() {
                    return Vec::new();
                }
                PgTupleDesc::from_pg_unchecked(desc)
                    .iter()
                    .map(|attribute| attribute.name().to_owned())
                    .collect()
            }
        })
    }

    /// Every file of sql/statements, each variant: prepared with its declared parameter
    /// types, it returns the columns it declares, by name and in order.
    #[pg_test]
    fn every_statement_returns_the_columns_it_declares() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/sql/statements");
        let mut checked = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            let source = std::fs::read_to_string(&path).unwrap();
            let mut variants: Vec<Option<&str>> = Vec::new();
            for name in source
                .lines()
                .filter_map(|line| line.trim().strip_prefix("--- variant "))
                .flat_map(variant_names)
            {
                if !variants.contains(&Some(name)) {
                    variants.push(Some(name));
                }
            }
            if variants.is_empty() {
                variants.push(None);
            }
            for variant in variants {
                let parsed = parse(&file, &source, variant);
                assert_eq!(
                    result_columns(&file, &parsed),
                    parsed.columns,
                    "{file}, variant {variant:?}: the columns it returns"
                );
                checked.push(format!("{file} {variant:?}"));
            }
        }
        assert!(checked.len() >= 30, "only {checked:?}");
    }
}
