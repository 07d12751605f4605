//! The actions: sign in and out, redrive, cancel, pause, resume. POST only (the router
//! has no other route to them). Each checks, in this order, that a token is configured,
//! the CSRF token, the operator's session, and that the role may execute the
//! function (has_function_privilege); then calls the extension's function with the
//! request's values as bound parameters, and logs who did what with which result.

use std::net::SocketAddr;

use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;

use crate::auth::{self, Cookie, Operator};
use crate::error::{DbError, PageError, PageResult};
use crate::pages::queues::queue_href;
use crate::pages::{
    form_name, form_queue, layout, parse_count, parse_id, parse_rate, rate, Action,
};
use crate::{text, Shared};

/// The most jobs one redrive request may name.
const MAX_REDRIVE: usize = 1000;

/// A form body's fields, in order, repeated names kept (the redrive's ids).
struct Form(Vec<(String, String)>);

impl Form {
    fn parse(body: &Bytes) -> Form {
        Form(form_urlencoded::parse(body).into_owned().collect())
    }

    fn one(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0
            .iter()
            .filter(move |(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Who asks: the remote address, and the operator once the session is checked.
struct Caller {
    remote: SocketAddr,
    operator: Operator,
}

impl Caller {
    /// An action the database refused: logged with what it was about, and a page that
    /// says nothing changed, with the database's message.
    fn failed(
        &self,
        action: &str,
        about: &dyn std::fmt::Debug,
        err: &DbError,
        title: &str,
        back: &str,
    ) -> Response {
        tracing::warn!(remote = %self.remote, operator = %self.operator.name, action, about = ?about,
            result = ?err.to_string(), "action failed");
        result_page(
            title,
            false,
            html! { "Nothing changed: " (text::block(&err.to_string())) },
            back,
        )
    }
}

/// The checks every action passes before it runs; a refusal is logged and changes nothing.
async fn authorize(
    app: &Shared,
    headers: &HeaderMap,
    remote: SocketAddr,
    form: &Form,
    action: Action,
) -> PageResult<Caller> {
    let refuse = |why: &str| {
        tracing::warn!(remote = %remote, action = action.name(), why = ?why, "action refused");
        PageError::Forbidden(why.to_string())
    };
    if !app.auth.token_configured() {
        return Err(refuse(
            "actions are disabled: SENDJOBS_CONSOLE_TOKEN is not set where the console runs",
        ));
    }
    if !app.auth.csrf_valid(headers, form.one("csrf")) {
        return Err(refuse(
            "the form's CSRF token is missing or wrong: reload the page and try again",
        ));
    }
    let Some(operator) = app.auth.operator_of(headers) else {
        return Err(refuse(
            "no operator session: sign in with the operator token first",
        ));
    };
    let privileges = app.db.privileges().await?;
    if !action.granted(&privileges) {
        let why = format!(
            "the role {} may not execute {} (the {} level)",
            privileges.role,
            action.function(),
            action.levels()
        );
        tracing::warn!(remote = %remote, operator = %operator.name, action = action.name(), why = ?why, "action refused");
        return Err(PageError::Forbidden(why));
    }
    Ok(Caller { remote, operator })
}

fn result_page(title: &str, ok: bool, message: maud::Markup, back: &str) -> Response {
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::CONFLICT
    };
    let body = layout(
        None,
        title,
        html! {
            h1 { (title) }
            div class=(if ok { "done" } else { "refused" }) #result { (message) }
            p { a #back href=(back) { "Back" } }
        },
    );
    (status, body).into_response()
}

pub async fn redrive(
    State(app): State<Shared>,
    ConnectInfo(remote): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult<Response> {
    let form = Form::parse(&body);
    let queue = form.one("queue").map(form_queue).transpose()?;
    let ids = form
        .all("id")
        .map(parse_id)
        .collect::<PageResult<Vec<i64>>>()?;
    if ids.is_empty() {
        return Err(PageError::BadRequest("no job selected".into()));
    }
    // A page lists at most a few hundred jobs; a bound keeps one request's redrive short.
    if ids.len() > MAX_REDRIVE {
        return Err(PageError::BadRequest(format!(
            "at most {MAX_REDRIVE} jobs a redrive, got {}",
            ids.len()
        )));
    }
    let caller = authorize(&app, &headers, remote, &form, Action::Redrive).await?;
    let back = queue
        .as_deref()
        .map(queue_href)
        .unwrap_or_else(|| "/queues".into());
    match app.db.redrive(&ids).await {
        Ok(done) => {
            let pairs: Vec<String> = done
                .iter()
                .map(|r| format!("{}→{}", r.id, r.new_id))
                .collect();
            // The jobs' own queues, not the form's (the page it came from).
            let mut queues: Vec<&str> = done.iter().map(|r| r.queue.as_str()).collect();
            queues.sort_unstable();
            queues.dedup();
            tracing::info!(remote = %caller.remote, operator = %caller.operator.name, action = "redrive",
                queues = ?queues, ids = ?ids, result = %pairs.join(","), "action");
            Ok(result_page(
                "Redriven",
                true,
                html! {
                    "Redrove " (done.len()) " job(s): "
                    @for r in &done { a href=(format!("/jobs/{}", r.id)) { (r.id) } " → new job " a.new-job href=(format!("/jobs/{}", r.new_id)) { (r.new_id) } "; " }
                },
                &back,
            ))
        }
        Err(err) => Ok(caller.failed("redrive", &ids, &err, "Not redriven", &back)),
    }
}

pub async fn cancel(
    State(app): State<Shared>,
    ConnectInfo(remote): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult<Response> {
    let form = Form::parse(&body);
    let id = parse_id(form.one("id").unwrap_or(""))?;
    let caller = authorize(&app, &headers, remote, &form, Action::Cancel).await?;
    let back = format!("/jobs/{id}");
    match app.db.cancel(id).await {
        Ok(answer) => {
            tracing::info!(remote = %caller.remote, operator = %caller.operator.name, action = "cancel", job = id, result = ?answer, "action");
            let ok = answer == "applied";
            Ok(result_page(
                if ok { "Cancelled" } else { "Not cancelled" },
                ok,
                html! {
                    @if ok { "Job " (id) " is cancelled." } @else { "Job " (id) " had finished already (stale): nothing changed." }
                },
                &back,
            ))
        }
        Err(err) => Ok(caller.failed("cancel", &id, &err, "Not cancelled", &back)),
    }
}

pub async fn pause(
    state: State<Shared>,
    connect: ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult<Response> {
    pause_or_resume(state, connect, headers, body, Action::Pause).await
}

pub async fn resume(
    state: State<Shared>,
    connect: ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult<Response> {
    pause_or_resume(state, connect, headers, body, Action::Resume).await
}

async fn pause_or_resume(
    State(app): State<Shared>,
    ConnectInfo(remote): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
    action: Action,
) -> PageResult<Response> {
    let form = Form::parse(&body);
    let queue = form_queue(form.one("queue").unwrap_or(""))?;
    let caller = authorize(&app, &headers, remote, &form, action).await?;
    let back = queue_href(&queue);
    let result = if action == Action::Pause {
        app.db.pause(&queue).await
    } else {
        app.db.resume(&queue).await
    };
    let verb = if action == Action::Pause {
        "Paused"
    } else {
        "Resumed"
    };
    match result {
        Ok(()) => {
            tracing::info!(remote = %caller.remote, operator = %caller.operator.name, action = action.name(), queue = ?queue, result = "applied", "action");
            Ok(result_page(
                verb,
                true,
                html! { (verb) " the queue " code { (text::name(&queue)) } "." },
                &back,
            ))
        }
        Err(err) => Ok(caller.failed(action.name(), &queue, &err, "Nothing changed", &back)),
    }
}

pub async fn limit(
    State(app): State<Shared>,
    ConnectInfo(remote): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult<Response> {
    let form = Form::parse(&body);
    let queue = form_queue(form.one("queue").unwrap_or(""))?;
    let cap = parse_count(form.one("max_in_flight").unwrap_or(""), "cap")?;
    let per_second = parse_rate(form.one("rate").unwrap_or(""))?;
    let burst = parse_count(form.one("burst").unwrap_or(""), "burst")?;
    let caller = authorize(&app, &headers, remote, &form, Action::Limit).await?;
    let back = queue_href(&queue);
    match app.db.limit(&queue, cap, per_second, burst).await {
        Ok(()) => {
            tracing::info!(remote = %caller.remote, operator = %caller.operator.name, action = "limit", queue = ?queue,
                max_in_flight = ?cap, rate = ?per_second, burst = ?burst, result = "applied", "action");
            Ok(result_page(
                "Limits set",
                true,
                html! {
                    "The queue " code { (text::name(&queue)) } ": "
                    (cap.map_or("no cap".to_string(), |c| format!("at most {c} in flight")))
                    ", " (per_second.map_or("no rate".to_string(), |r| format!("{} with bursts of {}", rate(r), burst.map_or("a second's worth".to_string(), |b| b.to_string()))))
                    "."
                },
                &back,
            ))
        }
        Err(err) => Ok(caller.failed("limit", &queue, &err, "Nothing changed", &back)),
    }
}

pub async fn unblock(
    State(app): State<Shared>,
    ConnectInfo(remote): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult<Response> {
    let form = Form::parse(&body);
    let key = form_name(form.one("key").unwrap_or(""))?;
    if key.is_empty() {
        return Err(PageError::BadRequest("no ordering key named".into()));
    }
    let job = parse_id(form.one("job").unwrap_or(""))?;
    let queue = form.one("queue").map(form_queue).transpose()?;
    let caller = authorize(&app, &headers, remote, &form, Action::Unblock).await?;
    let back = queue
        .as_deref()
        .map(queue_href)
        .unwrap_or_else(|| "/queues".into());
    match app.db.unblock(&key, job).await {
        Ok(answer) => {
            tracing::info!(remote = %caller.remote, operator = %caller.operator.name, action = "unblock", key = ?key, job, queue = ?queue, result = ?answer, "action");
            let was_stopped = answer == Some(true);
            Ok(result_page(
                if was_stopped {
                    "Let go"
                } else {
                    "Nothing changed"
                },
                was_stopped,
                html! {
                    "The ordering key " code { (text::name(&key)) }
                    @match answer {
                        Some(true) => " goes on: its next job may be claimed.",
                        Some(false) => " was not stopped: nothing changed.",
                        None => { " is not stopped by job " (job) " any more: nothing changed. Reload the page to see what stops it now." },
                    }
                },
                &back,
            ))
        }
        Err(err) => Ok(caller.failed("unblock", &key, &err, "Nothing changed", &back)),
    }
}

pub async fn sign_in(
    State(app): State<Shared>,
    ConnectInfo(remote): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult<Response> {
    let form = Form::parse(&body);
    if !app.auth.token_configured() {
        return Err(PageError::Forbidden(
            "actions are disabled: SENDJOBS_CONSOLE_TOKEN is not set".into(),
        ));
    }
    if !app.auth.csrf_valid(&headers, form.one("csrf")) {
        tracing::warn!(remote = %remote, action = "signin", "refused: CSRF token missing or wrong");
        return Err(PageError::Forbidden(
            "the form's CSRF token is missing or wrong: reload the page and try again".into(),
        ));
    }
    let name = form.one("operator").unwrap_or("").trim();
    if !auth::valid_operator_name(name) {
        return Err(PageError::BadRequest(
            "an operator's name is 1 to 64 letters, digits and . _ @ -".into(),
        ));
    }
    if !app.auth.token_matches(form.one("token").unwrap_or("")) {
        tracing::warn!(remote = %remote, operator = %name, action = "signin", "refused: wrong token");
        return Err(PageError::Forbidden("wrong operator token".into()));
    }
    tracing::info!(remote = %remote, operator = %name, token = app.auth.token_id.as_deref().unwrap_or(""), action = "signin", "action");
    let cookie = app.auth.set_cookie(
        Cookie::Operator,
        &app.auth.session_value(name),
        Some(auth::session_max_age()),
    );
    let mut response = Redirect::to("/queues").into_response();
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    Ok(response)
}

pub async fn sign_out(
    State(app): State<Shared>,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult<Response> {
    let form = Form::parse(&body);
    if !app.auth.csrf_valid(&headers, form.one("csrf")) {
        return Err(PageError::Forbidden(
            "the form's CSRF token is missing or wrong".into(),
        ));
    }
    let mut response = Redirect::to("/queues").into_response();
    if let Ok(value) = HeaderValue::from_str(&app.auth.set_cookie(Cookie::Operator, "", Some(0))) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    Ok(response)
}
