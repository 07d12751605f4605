//! Queue names are names: operators read them in logs, in psql and in the console, so a
//! new queue's name may not hold what draws as something else or as nothing — control
//! characters (a newline forges a log line), invisible format characters (bidirectional
//! overrides draw text reversed, zero-width ones make look-alikes), the other characters
//! Unicode draws as nothing (variation selectors, fillers), line separators, or white
//! space at either end (docs/decisions/0018-queue-names-are-names.md). A queue that
//! existed before 0.3.1 keeps its name: the update gave each such queue a settings row.

use pgrx::spi::SpiClient;

use crate::machinery::errors::{Result, SendJobsError};
use crate::machinery::statements::{first, statement, Statement};

static QUEUE_KNOWN: Statement = statement!("queue_known.sql");

/// The Unicode format characters (general category Cf, Unicode 15.1; unchanged since, as
/// src/tests/queue_names.rs checks against unicode-properties): invisible, and
/// among them the bidirectional controls. sql/sendjobs--0.3.0--0.3.1.sql holds the same
/// list as a regular expression, for the queues that existed before.
const FORMAT: &[(char, char)] = &[
    ('\u{00AD}', '\u{00AD}'),
    ('\u{0600}', '\u{0605}'),
    ('\u{061C}', '\u{061C}'),
    ('\u{06DD}', '\u{06DD}'),
    ('\u{070F}', '\u{070F}'),
    ('\u{0890}', '\u{0891}'),
    ('\u{08E2}', '\u{08E2}'),
    ('\u{180E}', '\u{180E}'),
    ('\u{200B}', '\u{200F}'),
    ('\u{202A}', '\u{202E}'),
    ('\u{2060}', '\u{2064}'),
    ('\u{2066}', '\u{206F}'),
    ('\u{FEFF}', '\u{FEFF}'),
    ('\u{FFF9}', '\u{FFFB}'),
    ('\u{110BD}', '\u{110BD}'),
    ('\u{110CD}', '\u{110CD}'),
    ('\u{13430}', '\u{1343F}'),
    ('\u{1BCA0}', '\u{1BCA3}'),
    ('\u{1D173}', '\u{1D17A}'),
    ('\u{E0001}', '\u{E0001}'),
    ('\u{E0020}', '\u{E007F}'),
];

/// The default-ignorable code points that are not format characters (Unicode 16.0,
/// DerivedCoreProperties.txt, Default_Ignorable_Code_Point less Cf): drawn as nothing —
/// the combining grapheme joiner, the Hangul and Khmer fillers, the variation selectors
/// (`acme\u{fe0f}` draws as `acme`) and the code points kept for more. Refused since
/// 0.4.0; sql/sendjobs--0.3.1--0.4.0.sql holds the same list for the queues made before.
const IGNORABLE: &[(char, char)] = &[
    ('\u{034F}', '\u{034F}'),
    ('\u{115F}', '\u{1160}'),
    ('\u{17B4}', '\u{17B5}'),
    ('\u{180B}', '\u{180D}'),
    ('\u{180F}', '\u{180F}'),
    ('\u{2065}', '\u{2065}'),
    ('\u{3164}', '\u{3164}'),
    ('\u{FE00}', '\u{FE0F}'),
    ('\u{FFA0}', '\u{FFA0}'),
    ('\u{FFF0}', '\u{FFF8}'),
    ('\u{E0000}', '\u{E0000}'),
    ('\u{E0002}', '\u{E001F}'),
    ('\u{E0080}', '\u{E0FFF}'),
];

fn within(ranges: &[(char, char)], c: char) -> bool {
    ranges.iter().any(|&(low, high)| (low..=high).contains(&c))
}

/// Why `name` may not name a new queue, or None when it may.
pub(crate) fn name_problem(name: &str) -> Option<&'static str> {
    if name.chars().any(char::is_control) {
        return Some("a control character");
    }
    if name.chars().any(|c| c == '\u{2028}' || c == '\u{2029}') {
        return Some("a line or paragraph separator");
    }
    if name.chars().any(|c| within(FORMAT, c)) {
        return Some("an invisible format character (such as a bidirectional override)");
    }
    if name.chars().any(|c| within(IGNORABLE, c)) {
        return Some("a character drawn as nothing (such as a variation selector or a filler)");
    }
    if name.starts_with(char::is_whitespace) || name.ends_with(char::is_whitespace) {
        return Some("white space at its start or end");
    }
    None
}

/// `name` quoted for an error message, every character Rust's debug escaping escapes
/// (controls, combining marks, unassigned and private-use ones), every one a name may not
/// hold and every white space but the space written as `\u{...}` (and `"` and `\`
/// escaped): the message draws as what the name holds, where Rust's own escaping prints
/// a filler as it is.
pub(crate) fn escaped(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    out.push('"');
    for c in name.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' ' | '\'' => out.push(c),
            // a character alone is refused exactly when a name may not hold it, or when
            // it is white space (at its start)
            _ if c.escape_debug().nth(1).is_some()
                || name_problem(c.encode_utf8(&mut [0; 4])).is_some() =>
            {
                out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
            }
            _ => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Refuses (22023) `queue` in a call that may make a new queue (an enqueue, a queue's
/// settings) when it is not a name (`name_problem`) and no settings row names it already.
pub fn readable_or_known(client: &SpiClient<'_>, queue: &str) -> Result<()> {
    let Some(problem) = name_problem(queue) else {
        return Ok(());
    };
    if first::<bool>(QUEUE_KNOWN.run(client, &[queue.into()])?, "known")? == Some(true) {
        return Ok(());
    }
    Err(SendJobsError::NotAName {
        escaped: escaped(queue),
        problem,
    })
}
