//! Text from the database as an operator must see it: queue names, keys, transaction ids,
//! errors and payloads may hold what draws as nothing or as something else (a newline
//! that forges a log line, a bidirectional override that draws text reversed, a
//! zero-width space or a Cyrillic `а` that make a look-alike of `acme`). Queues made
//! before 0.3.1 may have such names, and no release restricts the other values
//! (docs/decisions/0018-queue-names-are-names.md; docs/console.md, "Names as they are").
//!
//! So every character that draws as nothing or moves other text is shown as its code
//! point, `\u{200b}`; in a name, so are the spaces at either end, and every other
//! character beyond ASCII is drawn underlined, its code point in its title. The log
//! gets the escapes too (src/log.rs).

use maud::{html, Markup};
use unicode_properties::{GeneralCategory, GeneralCategoryGroup, UnicodeGeneralCategory};

/// Whether `c` draws as nothing, as blank, or changes how the text around it draws:
/// control and format characters (the bidirectional ones among them), separators but the
/// space, combining marks (variation selectors, joiners), private and unassigned code
/// points, and the Hangul fillers (letters drawn as blanks).
pub fn hidden(c: char) -> bool {
    if c == ' ' {
        return false;
    }
    match c.general_category_group() {
        GeneralCategoryGroup::Other | GeneralCategoryGroup::Separator => true,
        GeneralCategoryGroup::Mark => c.general_category() != GeneralCategory::SpacingMark,
        _ => matches!(c, '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}'),
    }
}

/// `c` as its code point: `\u{a}`, `\u{202e}`.
pub fn code_point(c: char) -> String {
    format!("\\u{{{:x}}}", u32::from(c))
}

/// `text` with every hidden character written as its code point: for the log and for a
/// page's title (which cannot be styled).
pub fn escaped(text: &str) -> String {
    text.chars()
        .map(|c| {
            if hidden(c) {
                code_point(c)
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// The characters of a name drawn as their code points: the hidden ones, and the spaces
/// HTML would drop or merge (at either end, and each after another space).
fn name_code_points(text: &str) -> impl Iterator<Item = (char, bool)> + '_ {
    let trailing_from = text.trim_end_matches(' ').chars().count();
    let mut after_space = true; // at the start, a space is at the name's end
    text.chars().enumerate().map(move |(at, c)| {
        let shown = hidden(c) || (c == ' ' && (after_space || at >= trailing_from));
        after_space = c == ' ';
        (c, shown)
    })
}

/// A name (a queue, a key, a transaction id) drawn so that no two names look alike: its
/// hidden characters and the spaces HTML would drop or merge as code points, its other
/// characters beyond ASCII underlined, in a `bdi` so that it moves no text around it.
pub fn name(text: &str) -> Markup {
    html! {
        bdi.name {
            @for (c, as_code_point) in name_code_points(text) {
                @if as_code_point {
                    span.esc title="a character that draws as nothing or moves text" { (code_point(c)) }
                } @else if !c.is_ascii() {
                    span.beyond-ascii title=(format!("U+{:04X}", u32::from(c))) { (c) }
                } @else {
                    (c)
                }
            }
        }
    }
}

/// A name for a page's title, which cannot be styled: the code points of `name`.
pub fn title(text: &str) -> String {
    name_code_points(text)
        .map(|(c, as_code_point)| {
            if as_code_point {
                code_point(c)
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Running text (an error, a payload): its hidden characters as code points, but its
/// line breaks and tabs kept, for a `pre`.
pub fn block(text: &str) -> Markup {
    html! {
        @for c in text.chars() {
            @if hidden(c) && c != '\n' && c != '\t' {
                span.esc { (code_point(c)) }
            } @else {
                (c)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn look_alikes_of_a_name_draw_differently() {
        let plain = name("acme").into_string();
        for other in [
            "acme\u{200b}",
            "\u{202e}emca",
            " acme",
            "acme ",
            "\u{430}cme",
            "acme\u{fe0f}",
            "ac\u{3164}me",
            "acme\nINFO",
        ] {
            let drawn = name(other).into_string();
            assert_ne!(drawn, plain, "{other:?}");
            assert!(
                drawn.contains("esc") || drawn.contains("beyond-ascii"),
                "{other:?} is marked: {drawn}"
            );
        }
        assert!(plain.contains(">acme<"), "{plain}");
        assert_ne!(
            name("acme  corp").into_string(),
            name("acme corp").into_string()
        );
        assert_eq!(title("acme  corp "), "acme \\u{20}corp\\u{20}");
        assert_eq!(title(" acme"), "\\u{20}acme");
        assert!(
            name("a b").into_string().contains("a b"),
            "an inner space is a space"
        );
    }

    #[test]
    fn escaped_text_holds_one_line_and_no_override() {
        let text = escaped("q\nINFO action operator=bob\r\u{202e}x\u{2028}");
        assert!(!text.chars().any(hidden), "{text}");
        assert_eq!(
            text,
            "q\\u{a}INFO action operator=bob\\u{d}\\u{202e}x\\u{2028}"
        );
        assert_eq!(escaped("Müller · 東京"), "Müller · 東京");
    }

    #[test]
    fn a_block_keeps_its_lines_and_shows_overrides() {
        let drawn = block("{\n\t\"to\": \"\u{202e}x\"\n}").into_string();
        assert!(drawn.contains('\n') && drawn.contains('\t'));
        assert!(drawn.contains("\\u{202e}") && !drawn.contains('\u{202e}'));
    }
}
