//! The variant rule of the statement files (src/statements.rs), without a server.

use crate::statements::variant;

const FILE: &str =
    "-- a comment\nSELECT 1\n--- variant a\n  + 2\n--- variant b\n  + 3\n--- end\n  AS x\n";

#[test]
fn a_variant_keeps_its_own_lines_and_the_shared_ones() {
    assert_eq!(variant(FILE, Some("a")), "SELECT 1\n  + 2\n  AS x\n");
    assert_eq!(variant(FILE, Some("b")), "SELECT 1\n  + 3\n  AS x\n");
}

#[test]
#[should_panic(expected = "no variant")]
fn an_unknown_variant_is_a_mistake() {
    variant(FILE, Some("c"));
}
