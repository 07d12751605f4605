//! Queue names are names: operators read them in logs, in psql and in the console, so a
//! new queue's name may not hold what draws as something else or as nothing — control
//! characters (a newline forges a log line), invisible format characters (bidirectional
//! overrides draw text reversed, zero-width ones make look-alikes), line separators, or
//! white space at either end (docs/decisions/0018-queue-names-are-names.md). A queue that
//! existed before 0.3.1 keeps its name: the update gave each such queue a settings row.

use pgrx::spi::SpiClient;

use crate::errors::{Result, SendJobsError};
use crate::statements::{first, statement, Statement};

static QUEUE_KNOWN: Statement = statement!("queue_known.sql");

/// The Unicode format characters (general category Cf, Unicode 15.1): invisible, and
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

/// Why `name` may not name a new queue, or None when it may.
pub fn name_problem(name: &str) -> Option<&'static str> {
    if name.chars().any(char::is_control) {
        return Some("a control character");
    }
    if name.chars().any(|c| c == '\u{2028}' || c == '\u{2029}') {
        return Some("a line or paragraph separator");
    }
    if name
        .chars()
        .any(|c| FORMAT.iter().any(|&(low, high)| (low..=high).contains(&c)))
    {
        return Some("an invisible format character (such as a bidirectional override)");
    }
    if name.starts_with(char::is_whitespace) || name.ends_with(char::is_whitespace) {
        return Some("white space at its start or end");
    }
    None
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
        name: queue.to_owned(),
        problem,
    })
}
