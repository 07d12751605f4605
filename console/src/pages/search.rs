//! The job search: by id, transaction id, idempotency key, queue, status and creation
//! time, newest first, paged by id (keyset: `id < before`, never OFFSET).
//!
//! An id is one primary-key look-up, and so is a key (send_job_keys) when the role may
//! read it. Everything else is a window of ids read backwards by the primary keys,
//! filtered: the extension has no index on transaction_id, on queue across every status,
//! or on created_at. So that every page costs the same whatever the filters match, one
//! page reads at most WINDOW ids; a page with fewer matches offers to go on further back.
//! A time range is first turned into ids by halving (Db::first_id_created_at_or_after).

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Extension;
use maud::{html, Markup};

use crate::auth::CsrfCookie;
use crate::db::Filters;
use crate::error::{PageError, PageResult};
use crate::pages::queues::{query_value, queue_href};
use crate::pages::{
    form_name, layout, name_field, opt, opt_block, opt_name, parse_id, parse_queue, status_badge,
    Ctx,
};
use crate::text;
use crate::Shared;

const PAGE: i64 = 50;
/// The most ids one page reads (docs/console.md, "Page times").
pub const WINDOW: i64 = 100_000;
const STATUSES: [&str; 5] = ["pending", "in_flight", "sent", "failed", "cancelled"];

pub async fn page(
    State(app): State<Shared>,
    headers: HeaderMap,
    Extension(csrf): Extension<CsrfCookie>,
    Query(query): Query<HashMap<String, String>>,
) -> PageResult<Response> {
    // Numbers, times and the header's box are trimmed; names are exact: the queue ` acme`
    // is not `acme`, nor its transaction ids theirs.
    let given = |name: &str| {
        query
            .get(name)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    // A refilled value a text box cannot hold comes back percent-encoded (`refilled`).
    let exact = |name: &str| -> PageResult<Option<String>> {
        match query.get(&format!("{name}_encoded")) {
            Some(encoded) => form_name(encoded).map(Some),
            None => Ok(query.get(name).filter(|v| !v.is_empty()).cloned()),
        }
    };
    let mut filters = Filters {
        queue: exact("queue")?.map(|q| parse_queue(&q)).transpose()?,
        status: given("status"),
        transaction_id: exact("transaction_id")?,
        created_from: given("from"),
        created_to: given("to"),
    };
    if let Some(status) = &filters.status {
        if !STATUSES.contains(&status.as_str()) {
            return Err(PageError::BadRequest(format!(
                "unknown status {}; expected one of {}",
                crate::pages::echoed(status),
                STATUSES.join(", ")
            )));
        }
    }
    let ctx = Ctx::new(&app, &headers, &csrf).await?;
    let mut key = exact("idempotency_key")?;
    // The header's box: a job's id, else an idempotency key, else a transaction id.
    let mut box_note = None;
    if let Some(q) = given("q") {
        if let Some(id) = q.parse::<i64>().ok().filter(|id| *id > 0) {
            if app.db.job(id).await?.is_some() {
                return Ok(Redirect::to(&format!("/jobs/{id}")).into_response());
            }
        }
        if ctx.privileges.keys {
            if let Some(job) = app.db.job_of_key(&q).await? {
                return Ok(Redirect::to(&format!("/jobs/{job}")).into_response());
            }
        } else {
            box_note = Some(format!(
                "Searched job ids and transaction ids only: the role {} may not read send_job_keys, so no job can be found by its idempotency key.",
                ctx.privileges.role
            ));
        }
        filters.transaction_id = Some(q);
    }
    if let Some(id) = given("id") {
        return Ok(Redirect::to(&format!("/jobs/{}", parse_id(&id)?)).into_response());
    }
    let mut key_note = None;
    if let Some(k) = key.take() {
        if !ctx.privileges.keys {
            key_note = Some(format!(
                "Cannot search by idempotency key: the role {} may not read send_job_keys, and send_jobs has no index on idempotency_key.",
                ctx.privileges.role
            ));
        } else if let Some(job) = app.db.job_of_key(&k).await? {
            return Ok(Redirect::to(&format!("/jobs/{job}")).into_response());
        } else {
            key_note = Some(format!("No job holds the idempotency key {k:?}."));
        }
    }
    let before = given("before").map(|b| parse_id(&b)).transpose()?;

    let mut rows = Vec::new();
    let mut scanned = None;
    let mut next_before = None;
    if key_note.is_none() {
        if let Some((low, high)) = app.db.id_range().await? {
            let mut upper = before.unwrap_or(high + 1).min(high + 1);
            if let Some(to) = &filters.created_to {
                upper = upper.min(app.db.first_id_created_at_or_after(to, low, high).await?);
            }
            let lower = match &filters.created_from {
                Some(from) => app.db.first_id_created_at_or_after(from, low, high).await?,
                None => low,
            };
            let window_low = lower.max(upper - WINDOW);
            if window_low < upper {
                rows = app.db.search(upper, window_low, &filters, PAGE + 1).await?;
                scanned = Some((window_low, upper));
                if rows.len() as i64 > PAGE {
                    rows.truncate(PAGE as usize);
                    next_before = rows.last().map(|r| r.id);
                } else if window_low > lower {
                    next_before = Some(window_low);
                }
            }
        }
    }

    let link_with = |before: i64| {
        let mut parts = Vec::new();
        for (name, value) in [
            ("queue", &filters.queue),
            ("status", &filters.status),
            ("transaction_id", &filters.transaction_id),
            ("from", &filters.created_from),
            ("to", &filters.created_to),
        ] {
            if let Some(v) = value {
                parts.push(format!("{name}={}", query_value(v)));
            }
        }
        parts.push(format!("before={before}"));
        format!("/jobs?{}", parts.join("&"))
    };
    let value = |v: &Option<String>| v.clone().unwrap_or_default();
    Ok(layout(
        Some(&ctx),
        "Jobs",
        html! {
            h1 { "Jobs" }
            form.search method="get" action="/jobs" {
                label { "job id" input type="text" name="id" inputmode="numeric" size="10"; }
                (refilled("transaction id", "transaction_id", &filters.transaction_id))
                label { "idempotency key" input type="text" name="idempotency_key"; }
                (refilled("queue", "queue", &filters.queue))
                label { "status" select name="status" {
                    option value="" { "any" }
                    @for s in STATUSES { option value=(s) selected[filters.status.as_deref() == Some(s)] { (s) } }
                } }
                label { "created from (UTC)" input type="text" name="from" placeholder="2026-05-01 10:00" value=(value(&filters.created_from)); }
                label { "created before (UTC)" input type="text" name="to" placeholder="2026-05-01 11:00" value=(value(&filters.created_to)); }
                button type="submit" #search { "Search" }
            }
            @if let Some(note) = &key_note { p.note #key-note { (note) } }
            @if let Some(note) = &box_note { p.note #box-note { (note) } }
            @if filters.transaction_id.is_some() {
                p.muted { "send_jobs has no index on transaction_id: each page reads up to " (WINDOW) " ids, newest first." }
            }
            @if let Some((lo, hi)) = scanned {
                p.muted { (rows.len()) " shown; ids " (lo) " to " (hi - 1) " read." }
            }
            @if !rows.is_empty() {
                table #jobs {
                    thead { tr {
                        th { "job" } th { "queue" } th { "status" } th { "attempts" } th { "generation" }
                        th { "transaction" } th { "created" } th { "finished" } th { "last error" }
                    } }
                    tbody {
                        @for r in &rows {
                            tr data-job=(r.id) {
                                td { a href=(format!("/jobs/{}", r.id)) { (r.id) } }
                                td { a href=(queue_href(&r.queue)) { (text::name(&r.queue)) } }
                                td { (status_badge(&r.status)) }
                                td.n { (r.attempts) "/" (r.max_attempts) }
                                td.n { (r.claim_generation) }
                                td { (opt_name(&r.transaction_id)) }
                                td { (r.created_at) }
                                td { (opt(&r.finished_at)) }
                                td { (opt_block(&r.last_error)) }
                            }
                        }
                    }
                }
            } @else if key_note.is_none() {
                p { "No job matches" (if next_before.is_some() { " among these ids" } else { "" }) "." }
            }
            @if let Some(b) = next_before {
                p { a #older href=(link_with(b)) { "Older →" } }
            }
        },
    )
    .into_response())
}

/// A search field refilled with the value searched. A browser strips line breaks from a
/// text box's value, so a value holding one (the queue `forged\n…`) would come back as
/// another name when the form is sent again: it is shown drawn (`text::name`) and carried
/// in a hidden percent-encoded field, `{field}_encoded`, with a link to search without it.
fn refilled(label: &str, field: &str, value: &Option<String>) -> Markup {
    match value {
        Some(v) if v.contains(['\n', '\r']) => html! {
            label {
                (label) " " code { (text::name(v)) }
                (name_field(&format!("{field}_encoded"), v))
                " " a href="/jobs" { "clear" }
            }
        },
        _ => html! {
            label { (label) input type="text" name=(field) value=(value.as_deref().unwrap_or("")); }
        },
    }
}
