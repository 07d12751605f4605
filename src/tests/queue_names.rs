//! Queue names are names (decision 0018): the rule of src/machinery/queue_names.rs walked
//! over every code point, against Unicode's own classes rather than a list of planted
//! names.

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;
    use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

    use crate::machinery::queue_names::{escaped, name_problem};

    /// Default_Ignorable_Code_Point, as Unicode 16.0's DerivedCoreProperties.txt lists it
    /// (format characters among them): drawn as nothing.
    const DEFAULT_IGNORABLE: &[(u32, u32)] = &[
        (0x00AD, 0x00AD),
        (0x034F, 0x034F),
        (0x061C, 0x061C),
        (0x115F, 0x1160),
        (0x17B4, 0x17B5),
        (0x180B, 0x180F),
        (0x200B, 0x200F),
        (0x202A, 0x202E),
        (0x2060, 0x206F),
        (0x3164, 0x3164),
        (0xFE00, 0xFE0F),
        (0xFEFF, 0xFEFF),
        (0xFFA0, 0xFFA0),
        (0xFFF0, 0xFFF8),
        (0x1BCA0, 0x1BCA3),
        (0x1D173, 0x1D17A),
        (0xE0000, 0xE0FFF),
    ];

    /// What a name may not hold anywhere: control and format characters, line and
    /// paragraph separators, and what Unicode draws as nothing.
    fn never_in_a_name(c: char) -> bool {
        matches!(
            c.general_category(),
            GeneralCategory::Control
                | GeneralCategory::Format
                | GeneralCategory::LineSeparator
                | GeneralCategory::ParagraphSeparator
        ) || DEFAULT_IGNORABLE
            .iter()
            .any(|&(low, high)| (low..=high).contains(&u32::from(c)))
    }

    /// Every code point, inside a name: refused exactly when Unicode's classes say it
    /// draws as something else or as nothing; and every white space at either end.
    #[pg_test]
    fn a_name_holds_nothing_that_draws_as_nothing_or_as_something_else() {
        let mut wrong = Vec::new();
        for c in (0..=0x10FFFF_u32).filter_map(char::from_u32) {
            let refused = name_problem(&format!("ac{c}me")).is_some();
            if refused != never_in_a_name(c) {
                wrong.push(format!(
                    "U+{:04X} {}",
                    u32::from(c),
                    if refused { "refused" } else { "accepted" }
                ));
            }
            // The error message writes what draws as nothing or as white space escaped.
            if (never_in_a_name(c) || c.is_whitespace() && c != ' ')
                && escaped(&format!("ac{c}me")).contains(c)
            {
                wrong.push(format!("U+{:04X} not escaped", u32::from(c)));
            }
            if c.is_whitespace()
                && (name_problem(&format!("{c}acme")).is_none()
                    || name_problem(&format!("acme{c}")).is_none())
            {
                wrong.push(format!("U+{:04X} accepted at an end", u32::from(c)));
            }
        }
        assert!(
            wrong.is_empty(),
            "{} code points: {:?}",
            wrong.len(),
            &wrong[..wrong.len().min(40)]
        );
        // What is not refused but would draw onto the quote or as nothing is escaped too.
        assert_eq!(escaped("\u{20dd}acme"), "\"\\u{20dd}acme\"");
        assert_eq!(escaped("ac\u{a0}me\""), "\"ac\\u{a0}me\\\"\"");
        // Letters of any script are names (a look-alike is the console's to show).
        for name in [
            "acme",
            "аcme",
            "partner-1/eu.west_2",
            "Ärzte GmbH",
            "東京",
            "🚀 launch",
        ] {
            assert_eq!(name_problem(name), None, "{name:?}");
        }
    }
}
