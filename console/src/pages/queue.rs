//! A queue's page: its numbers and flow control, pause and resume, and its failed jobs,
//! most recent first, selectable and redriven in bulk (sendjobs_redrive(bigint[])).

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::Extension;
use maud::{html, Markup};

use crate::auth::CsrfCookie;
use crate::error::{PageError, PageResult};
use crate::figures::Figures;
use crate::pages::queues::{figures_age, query_value, queue_href};
use crate::pages::{
    access_notes, layout, name_field, opt, opt_block, opt_name, parse_id, parse_queue, rate,
    Action, Ctx,
};
use crate::text;
use crate::Shared;

const PAGE: i64 = 50;

pub async fn page(
    State(app): State<Shared>,
    headers: HeaderMap,
    Extension(csrf): Extension<CsrfCookie>,
    Query(query): Query<HashMap<String, String>>,
) -> PageResult<Markup> {
    let queue = parse_queue(
        query
            .get("name")
            .ok_or_else(|| PageError::BadRequest("no queue named (name=...)".into()))?,
    )?;
    let after = match (query.get("after_at"), query.get("after_id")) {
        (Some(at), Some(id)) => Some((at.as_str(), parse_id(id)?)),
        (None, None) => None,
        _ => {
            return Err(PageError::BadRequest(
                "after_at and after_id go together".into(),
            ))
        }
    };
    let ctx = Ctx::new(&app, &headers, &csrf).await?;
    let blocked = async {
        if ctx.privileges.blocked {
            app.db.blocked_keys(&queue, PAGE).await.map(Some)
        } else {
            Ok(None)
        }
    };
    let (figures, limits, mut failed, blocked) = tokio::try_join!(
        Figures::get(&app),
        app.db.queue_limits(Some(&queue)),
        app.db.failed(&queue, after, PAGE + 1),
        blocked
    )?;
    let more = failed.len() as i64 > PAGE;
    failed.truncate(PAGE as usize);
    let stats = figures.stats.iter().find(|s| s.queue == queue);
    let paused = limits.first().is_some_and(|l| l.paused);
    let can_redrive = ctx.may(Action::Redrive);
    Ok(layout(
        Some(&ctx),
        &text::title(&queue),
        html! {
            h1 { "Queue " code { (text::name(&queue)) } }
            (access_notes(&ctx))
            @if let Some(s) = stats {
                p {
                    (s.ready) " ready, " (s.scheduled) " scheduled, " (s.in_flight) " in flight, "
                    (s.expired) " expired; last 5 minutes: " (s.sent_5m) " sent, "
                    span class=(if s.failed_5m > 0 { "bad" } else { "" }) { (s.failed_5m) " failed" }
                    ", " (s.cancelled_5m) " cancelled."
                }
            } @else {
                p.muted { "No work and no recent events." }
            }
            p.muted #figures-age { (figures_age(&figures)) }
            @if let Some(l) = limits.first() {
                p {
                    @if l.paused { span.bad #paused { "Paused." } " " }
                    @if let Some(cap) = l.max_in_flight { "Cap: " (l.in_flight) " of " (cap) " in flight. " }
                    @if let Some(r) = l.rate { "Rate: " (rate(r)) ", burst " (opt(&l.burst)) ". " }
                    @if let Some(why) = &l.limited { span.warn { "Limited now: " (why) "." } }
                }
            }
            @if paused && ctx.may(Action::Resume) {
                form method="post" action="/actions/resume" {
                    (ctx.csrf_input())
                    (name_field("queue", &queue))
                    button type="submit" #resume { "Resume the queue" }
                }
            } @else if !paused && ctx.may(Action::Pause) {
                form method="post" action="/actions/pause" {
                    (ctx.csrf_input())
                    (name_field("queue", &queue))
                    button type="submit" #pause { "Pause the queue" }
                }
            }
            @if ctx.may(Action::Limit) {
                @let l = limits.first();
                form.search #limits method="post" action="/actions/limit" {
                    (ctx.csrf_input())
                    (name_field("queue", &queue))
                    label { "cap (jobs in flight)"
                        input type="number" name="max_in_flight" min="1" value=(l.and_then(|l| l.max_in_flight).map(|c| c.to_string()).unwrap_or_default());
                        span.muted { "in flight now: " (l.map_or(0, |l| l.in_flight)) }
                    }
                    label { "rate (20/s, 1/min, 30/h, 2/day)"
                        input type="text" name="rate" value=(l.and_then(|l| l.rate).map(rate).unwrap_or_default());
                        span.muted { "tokens now: " (l.and_then(|l| l.tokens).map(|t| format!("{t:.1}")).unwrap_or_else(|| "—".into())) }
                    }
                    label { "burst"
                        input type="number" name="burst" min="1" value=(l.and_then(|l| l.burst).map(|b| b.to_string()).unwrap_or_default());
                        span.muted { "empty: a second's worth" }
                    }
                    button type="submit" #set-limits { "Set the limits" }
                }
                p.muted { "Empty fields lift their limit; the new limits replace the old ones (sendjobs_limit)." }
            }
            h2 { "Stopped ordering keys" }
            @match &blocked {
                None => p.muted { "Unknown: the role may not read sendjobs_blocked_keys." },
                Some(keys) if keys.is_empty() => p.muted { "None: no failure stops a key of this queue (sendjobs_block_keys)." },
                Some(keys) => {
                    p.muted { "No job of a stopped key is claimed but the job that stops it, until that job's redrive is sent or cancelled, or the key is let go." }
                    table #blocked {
                        thead { tr { th { "ordering key" } th { "stopped by" } th { "since (UTC)" } @if ctx.may(Action::Unblock) { th {} } } }
                        tbody {
                            @for k in keys {
                                tr {
                                    td { (text::name(&k.ordering_key)) }
                                    td { a href=(format!("/jobs/{}", k.job_id)) { (k.job_id) } }
                                    td { (k.blocked_at) }
                                    @if ctx.may(Action::Unblock) {
                                        td { (unblock_form(&ctx, &k.ordering_key, k.job_id, &queue)) }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            h2 { "Failed jobs" }
            p.muted { a href=(format!("/jobs?queue={}", query_value(&queue))) { "All jobs of this queue" } }
            @if failed.is_empty() {
                p { "No failed jobs" (if after.is_some() { " further back" } else { "" }) "." }
            } @else {
                form method="post" action="/actions/redrive" #redrive-form {
                    (ctx.csrf_input())
                    (name_field("queue", &queue))
                    table #failed {
                        thead { tr {
                            @if can_redrive { th { input type="checkbox" #select-all aria-label="select all"; } }
                            th { "job" } th { "failed at" } th { "attempts" } th { "generation" }
                            th { "transaction" } th { "last error" } th { "redriven as" }
                        } }
                        tbody {
                            @for j in &failed {
                                tr data-job=(j.id) {
                                    @if can_redrive {
                                        td {
                                            @if j.redriven_as.is_none() {
                                                input type="checkbox" name="id" value=(j.id) aria-label=(format!("select job {}", j.id));
                                            }
                                        }
                                    }
                                    td { a href=(format!("/jobs/{}", j.id)) { (j.id) } }
                                    td { (j.finished_at) }
                                    td.n { (j.attempts) }
                                    td.n { (j.claim_generation) }
                                    td { (opt_name(&j.transaction_id)) }
                                    td { (opt_block(&j.last_error)) }
                                    td { @if let Some(n) = j.redriven_as { a href=(format!("/jobs/{n}")) { (n) } } @else { "—" } }
                                }
                            }
                        }
                    }
                    @if can_redrive {
                        p { button type="submit" #redrive { "Redrive the selected jobs" } }
                    }
                }
                @if more {
                    @if let Some(last) = failed.last() {
                        p { a #older href=(format!("{}&after_at={}&after_id={}", queue_href(&queue), query_value(&last.cursor_at), last.id)) { "Older failures →" } }
                    }
                }
            }
        },
    ))
}

/// The button that lets a stopped key go (sendjobs_unblock_key) while `job` stops it,
/// back to `back_queue`'s page.
pub fn unblock_form(ctx: &Ctx, key: &str, job: i64, back_queue: &str) -> Markup {
    html! {
        form.inline method="post" action="/actions/unblock" {
            (ctx.csrf_input())
            (name_field("key", key))
            input type="hidden" name="job" value=(job);
            (name_field("queue", back_queue))
            button type="submit" .unblock { "Let the key go" }
        }
    }
}
