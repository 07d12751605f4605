//! The pages: each a module, all rendered on the server with maud (which escapes every
//! value it is given), inside one layout.

pub mod job;
pub mod queue;
pub mod queues;
pub mod search;

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::{html, Markup, DOCTYPE};
use percent_encoding::{percent_decode_str, utf8_percent_encode, NON_ALPHANUMERIC};

use crate::auth::CsrfCookie;
use crate::auth::Operator;
use crate::db::Privileges;
use crate::error::{PageError, PageResult};
use crate::App;

/// An action the console offers, with the function it calls and the level it needs
/// (docs/reference.md).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Action {
    Redrive,
    Cancel,
    Pause,
    Resume,
    Unblock,
    Limit,
}

impl Action {
    pub const ALL: [Action; 6] = [
        Action::Redrive,
        Action::Cancel,
        Action::Pause,
        Action::Resume,
        Action::Unblock,
        Action::Limit,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Action::Redrive => "redrive",
            Action::Cancel => "cancel",
            Action::Pause => "pause",
            Action::Resume => "resume",
            Action::Unblock => "unblock",
            Action::Limit => "limit",
        }
    }

    pub fn function(self) -> &'static str {
        match self {
            Action::Redrive => "sendjobs_redrive(bigint[])",
            Action::Cancel => "sendjobs_cancel(bigint)",
            Action::Pause => "sendjobs_pause(text)",
            Action::Resume => "sendjobs_resume(text)",
            Action::Unblock => "sendjobs_unblock_key(text)",
            Action::Limit => "sendjobs_limit(text, integer, double precision, integer)",
        }
    }

    pub fn levels(self) -> &'static str {
        match self {
            Action::Cancel => "producer or admin",
            _ => "admin",
        }
    }

    pub fn granted(self, p: &Privileges) -> bool {
        match self {
            Action::Redrive => p.redrive,
            Action::Cancel => p.cancel,
            Action::Pause => p.pause,
            Action::Resume => p.resume,
            Action::Unblock => p.unblock,
            Action::Limit => p.limit,
        }
    }
}

/// What a page knows of who is looking, and what they may do.
pub struct Ctx {
    pub privileges: Privileges,
    pub operator: Option<Operator>,
    pub csrf_field: String,
    pub token_configured: bool,
}

impl Ctx {
    pub async fn new(app: &App, headers: &HeaderMap, csrf: &CsrfCookie) -> PageResult<Ctx> {
        Ok(Ctx {
            privileges: app.db.privileges().await?,
            operator: app.auth.operator_of(headers),
            csrf_field: app.auth.csrf_field(&csrf.0, app.auth.session_of(headers)),
            token_configured: app.auth.token_configured(),
        })
    }

    /// Whether the page shows the action's button: the role may run it, and a
    /// signed-in operator is there to press it.
    pub fn may(&self, action: Action) -> bool {
        self.operator.is_some() && action.granted(&self.privileges)
    }

    pub fn csrf_input(&self) -> Markup {
        html! { input type="hidden" name="csrf" value=(self.csrf_field); }
    }
}

/// Why the actions are not offered, if they are not.
pub fn access_notes(ctx: &Ctx) -> Markup {
    html! {
        @if !ctx.token_configured {
            p.note { "Actions are disabled: SENDJOBS_CONSOLE_TOKEN is not set where the console runs. The pages only show." }
        } @else if ctx.operator.is_none() {
            p.note { "Sign in (at the top) with the operator token to redrive, cancel, pause, resume, let a stopped key go or set limits." }
        }
        @for action in Action::ALL {
            @if !action.granted(&ctx.privileges) {
                p.refused {
                    "Not allowed: " (action.name()) ". The role " code { (crate::text::name(&ctx.privileges.role)) }
                    " may not execute " code { (action.function()) } " (the " (action.levels()) " level)."
                }
            }
        }
    }
}

pub fn layout(ctx: Option<&Ctx>, title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · sendjobs console" }
                link rel="stylesheet" href="/assets/console.css";
            }
            body {
                header {
                    a href="/queues" { "sendjobs" }
                    a href="/queues" { "Queues" }
                    a href="/jobs" { "Jobs" }
                    form method="get" action="/jobs" {
                        input type="search" name="q" placeholder="job id, transaction or key" aria-label="find a job";
                    }
                    @if let Some(ctx) = ctx {
                        span.role {
                            "role " b { (crate::text::name(&ctx.privileges.role)) }
                            @let allowed = ctx.privileges.allowed_actions();
                            " · may " (if allowed.is_empty() { "only read".to_string() } else { allowed.join(", ") })
                        }
                        @if let Some(op) = &ctx.operator {
                            form method="post" action="/signout" {
                                (ctx.csrf_input())
                                span { "operator " b { (op.name) } }
                                button type="submit" { "Sign out" }
                            }
                        } @else if ctx.token_configured {
                            form method="post" action="/signin" {
                                (ctx.csrf_input())
                                input type="text" name="operator" placeholder="your name" required aria-label="operator name";
                                input type="password" name="token" placeholder="operator token" required aria-label="operator token";
                                button type="submit" { "Sign in" }
                            }
                        }
                    }
                }
                main { (body) }
                script src="/assets/console.js" {}
            }
        }
    }
}

pub fn error_page(status: StatusCode, message: &str) -> Markup {
    layout(
        None,
        status.canonical_reason().unwrap_or("Error"),
        html! {
            h1 { (status.as_u16()) " " (status.canonical_reason().unwrap_or("")) }
            p.refused { (message) }
            p { "Nothing was changed. " a href="/queues" { "Back to the queues" } }
        },
    )
}

/// A job's status, coloured.
pub fn status_badge(status: &str) -> Markup {
    let class = match status {
        "failed" => "bad",
        "cancelled" | "in_flight" => "warn",
        "sent" => "ok",
        _ => "",
    };
    html! { span class=(class) { (status) } }
}

pub fn opt<T: std::fmt::Display>(value: &Option<T>) -> String {
    value
        .as_ref()
        .map(|v| v.to_string())
        .unwrap_or_else(|| "—".into())
}

/// An optional name (a key, a transaction id), drawn as src/text.rs draws names.
pub fn opt_name(value: &Option<String>) -> Markup {
    match value {
        Some(v) => crate::text::name(v),
        None => html! { "—" },
    }
}

/// An optional running text (an error), drawn as src/text.rs draws blocks.
pub fn opt_block(value: &Option<String>) -> Markup {
    match value {
        Some(v) => crate::text::block(v),
        None => html! { "—" },
    }
}

/// A request's value quoted in an answer, its first 100 characters at most: an error
/// page does not echo a value of any size.
pub fn echoed(text: &str) -> String {
    match text.char_indices().nth(100) {
        Some((end, _)) => format!("{:?}…", &text[..end]),
        None => format!("{text:?}"),
    }
}

/// A rate (jobs a second, as sendjobs_limit takes it) as people write it: in the largest
/// unit that gives at least one job, `20/s`, `1/min`, `30/h`, `2/day`, to 3 decimals.
pub fn rate(per_second: f64) -> String {
    // A rate set as 1/60 a second reads back as 0.0166…, a hair under one a minute.
    const CLOSE: f64 = 1.0 - 1e-9;
    let (amount, unit) = [(1.0, "s"), (60.0, "min"), (3600.0, "h")]
        .into_iter()
        .map(|(seconds, unit)| (per_second * seconds, unit))
        .find(|(amount, _)| *amount >= CLOSE)
        .unwrap_or((per_second * 86400.0, "day"));
    let shown = format!("{amount:.3}");
    let shown = shown.trim_end_matches('0').trim_end_matches('.');
    format!("{shown}/{unit}")
}

/// A rate as people write it (`rate` reads it back): a number of jobs, a slash and a
/// unit (`s`, `min`, `h`, `day`), or a number alone, a second. Empty: no rate.
pub fn parse_rate(text: &str) -> PageResult<Option<f64>> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let (amount, unit) = text.split_once('/').unwrap_or((text, "s"));
    let seconds = match unit.trim() {
        "s" | "sec" | "second" => 1.0,
        "min" | "minute" => 60.0,
        "h" | "hour" => 3600.0,
        "d" | "day" => 86400.0,
        _ => f64::NAN,
    };
    amount
        .trim()
        .parse::<f64>()
        .ok()
        .map(|amount| amount / seconds)
        .filter(|per_second| per_second.is_finite() && *per_second > 0.0)
        .map(Some)
        .ok_or_else(|| {
            crate::error::PageError::BadRequest(format!(
                "{} is not a rate: write a number of jobs and a unit, as 20/s, 1/min, 30/h or 2/day",
                echoed(text)
            ))
        })
}

/// An optional whole number of a form (a cap, a burst): empty is none.
pub fn parse_count(text: &str, what: &str) -> PageResult<Option<i32>> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse::<i32>().map(Some).map_err(|_| {
        crate::error::PageError::BadRequest(format!(
            "{} is not a {what} (a whole number)",
            echoed(text)
        ))
    })
}

/// The numbers in a path or a form: a clear 400 for anything else.
pub fn parse_id(text: &str) -> PageResult<i64> {
    text.trim()
        .parse::<i64>()
        .ok()
        .filter(|id| *id > 0)
        .ok_or_else(|| {
            crate::error::PageError::BadRequest(format!(
                "{} is not a job id (a positive whole number)",
                echoed(text)
            ))
        })
}

/// A form's hidden field of a name (a queue, an ordering key), percent-encoded: a
/// browser sends every line break of a field's value as CR LF (the HTML standard's form
/// submission), which would name another queue or key.
pub fn name_field(field: &str, name: &str) -> Markup {
    let encoded = utf8_percent_encode(name, NON_ALPHANUMERIC).to_string();
    html! { input type="hidden" name=(field) value=(encoded); }
}

/// A name of a form (`name_field`): letters and digits, and every other byte as `%XX`,
/// nothing else (so that one name has one spelling).
pub fn form_name(value: &str) -> PageResult<String> {
    let bytes = value.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at].is_ascii_alphanumeric() {
            at += 1;
        } else if bytes[at] == b'%'
            && bytes.get(at + 1).is_some_and(u8::is_ascii_hexdigit)
            && bytes.get(at + 2).is_some_and(u8::is_ascii_hexdigit)
        {
            at += 3;
        } else {
            return Err(crate::error::PageError::BadRequest(
                "the form's name is not percent-encoded".into(),
            ));
        }
    }
    percent_decode_str(value)
        .decode_utf8()
        .map(|name| name.into_owned())
        .map_err(|_| {
            crate::error::PageError::BadRequest(
                "the form's name is not percent-encoded UTF-8".into(),
            )
        })
}

/// The queue of a form (`name_field`).
pub fn form_queue(value: &str) -> PageResult<String> {
    parse_queue(&form_name(value)?)
}

/// A queue name as the extension accepts it: 1 to 128 bytes.
pub fn parse_queue(text: &str) -> PageResult<String> {
    if text.is_empty() || text.len() > 128 {
        return Err(crate::error::PageError::BadRequest(
            "a queue name is 1 to 128 bytes".into(),
        ));
    }
    Ok(text.to_string())
}

/// A refused or failed request answers with the error page (src/error.rs says which status).
impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::error!(error = ?self.to_string(), "request failed");
        }
        // What went wrong inside goes to the log, not to whoever asked: a database's
        // message can name its host, socket or roles.
        let shown = if status.is_server_error() {
            "the console could not answer this request (its log says why)".to_string()
        } else {
            self.to_string()
        };
        let body = error_page(status, &shown);
        (status, body).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::rate;

    #[test]
    fn rates_read_as_people_write_them() {
        assert_eq!(rate(20.0), "20/s");
        assert_eq!(rate(2.5), "2.5/s");
        assert_eq!(rate(1.0 / 60.0), "1/min");
        assert_eq!(rate(0.5), "30/min");
        assert_eq!(rate(1.0 / 3600.0), "1/h");
        assert_eq!(rate(1.0 / 86400.0), "1/day");
        assert_eq!(rate(1.0 / 7.0), "8.571/min");
    }

    #[test]
    fn rates_are_read_as_they_are_written() {
        use super::parse_rate;
        assert_eq!(parse_rate("20/s").unwrap(), Some(20.0));
        assert_eq!(parse_rate(" 1/min ").unwrap(), Some(1.0 / 60.0));
        assert_eq!(parse_rate("30/h").unwrap(), Some(30.0 / 3600.0));
        assert_eq!(parse_rate("2/day").unwrap(), Some(2.0 / 86400.0));
        assert_eq!(parse_rate("2.5").unwrap(), Some(2.5));
        assert_eq!(parse_rate("").unwrap(), None);
        for bad in ["fast", "0/s", "-1/s", "1/week", "NaN", "inf/s", "1/"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
        for r in [20.0, 1.0 / 60.0, 0.5, 1.0 / 86400.0] {
            let shown = super::rate(r);
            let back = parse_rate(&shown).unwrap().unwrap();
            assert!(
                (back - r).abs() / r < 1e-3,
                "{r} shown as {shown}, read as {back}"
            );
        }
    }
}
