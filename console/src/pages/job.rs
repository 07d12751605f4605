//! A job's page: its state, attempts and generation, its lease, its last error, its
//! outbox event, its redrive chain both ways, its business row's status through the
//! link, and its payload when the role may read it. Cancel, for a job not finished.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::Extension;
use maud::{html, Markup};

use crate::auth::CsrfCookie;
use crate::db::{Attempt, ChainJob, Job};
use crate::error::{PageError, PageResult};
use crate::pages::queue::unblock_form;
use crate::pages::queues::{query_value, queue_href};
use crate::pages::{
    access_notes, layout, name_field, opt, opt_name, parse_id, status_badge, Action, Ctx,
};
use crate::text;
use crate::Shared;

const CHAIN_LIMIT: usize = 20;

pub async fn page(
    State(app): State<Shared>,
    headers: HeaderMap,
    Extension(csrf): Extension<CsrfCookie>,
    Path(id): Path<String>,
) -> PageResult<Markup> {
    let id = parse_id(&id)?;
    let ctx = Ctx::new(&app, &headers, &csrf).await?;
    let job = app
        .db
        .job(id)
        .await?
        .ok_or_else(|| PageError::NotFound(format!("there is no job {id}")))?;
    let (event, (earlier, later)) =
        tokio::try_join!(app.db.event(id), app.db.redrive_chain(&job, CHAIN_LIMIT))?;
    // A payload and the business row go to a signed-in operator only: the pages need no
    // sign-in, and whoever reaches the port would read them (an attack review).
    let signed_in = ctx.operator.is_some();
    let payload = if ctx.privileges.payload && signed_in {
        app.db.payload(id).await?
    } else {
        None
    };
    // The link is read only when the role may read it; the business row only when the
    // role may read its key and status columns.
    let link = if ctx.privileges.link {
        app.db.link().await?
    } else {
        None
    };
    let business = match (&link, &job.transaction_id) {
        (Some(link), Some(tx)) if link.readable && signed_in => {
            Some(app.db.business_status(link, tx).await?)
        }
        _ => None,
    };
    let attempts = if ctx.privileges.attempts {
        Some(app.db.attempts(id).await?)
    } else {
        None
    };
    let stopped = match &job.ordering_key {
        Some(key) if ctx.privileges.blocked => app.db.blocked_key(key).await?,
        _ => None,
    };
    let unfinished = matches!(job.status.as_str(), "pending" | "in_flight");
    Ok(layout(
        Some(&ctx),
        &format!("Job {id}"),
        html! {
            h1 { "Job " (id) " " (status_badge(&job.status)) }
            (access_notes(&ctx))
            dl.job {
                dt { "queue" } dd { a href=(queue_href(&job.queue)) { (text::name(&job.queue)) } }
                dt { "status" } dd #status { (job.status) }
                dt { "attempts" } dd { (job.attempts) " of " (job.max_attempts) }
                dt { "claim generation" } dd { (job.claim_generation) }
                dt { "created" } dd { (job.created_at) " UTC" }
                dt { "next attempt" } dd { (job.next_attempt_at) " UTC" }
                dt { "claimed" } dd { (opt(&job.claimed_at)) }
                dt { "lease until" } dd {
                    (opt(&job.lease_expires_at))
                    @if job.lease_expired == Some(true) { " " span.warn { "expired: the next claim takes it back" } }
                }
                dt { "finished" } dd { (opt(&job.finished_at)) }
                dt { "transaction" } dd { @if let Some(tx) = &job.transaction_id { a href=(format!("/jobs?transaction_id={}", query_value(tx))) { (text::name(tx)) } } @else { "—" } }
                dt { "idempotency key" } dd { (opt_name(&job.idempotency_key)) }
                dt { "ordering key" } dd {
                    (opt_name(&job.ordering_key))
                    @if let Some(k) = &stopped {
                        p.warn #key-stopped {
                            "Stopped by " @if k.job_id == id { "this job" } @else { "job " a href=(format!("/jobs/{}", k.job_id)) { (k.job_id) } }
                            " since " (k.blocked_at) " UTC: no other job of the key is claimed."
                        }
                        @if ctx.may(Action::Unblock) { (unblock_form(&ctx, &k.ordering_key, k.job_id, &job.queue)) }
                    }
                }
                dt { "priority" } dd { (job.priority) " min" }
                dt { "last error" } dd { @if let Some(e) = &job.last_error { pre { (text::block(e)) } } @else { "—" } }
            }
            @if unfinished && ctx.may(Action::Cancel) {
                form method="post" action="/actions/cancel" {
                    (ctx.csrf_input())
                    input type="hidden" name="id" value=(id);
                    p { button type="submit" #cancel { "Cancel this job" } " It will never be sent (again); its holder's finalize answers stale." }
                }
            }
            @if job.status == "failed" && later.is_empty() && ctx.may(Action::Redrive) {
                form method="post" action="/actions/redrive" {
                    (ctx.csrf_input())
                    (name_field("queue", &job.queue))
                    input type="hidden" name="id" value=(id);
                    p { button type="submit" #redrive { "Redrive this job" } " A new pending job sends it again." }
                }
            }
            h2 { "Earlier attempts" }
            (earlier_attempts(attempts.as_deref(), &job))
            h2 { "Outbox event" }
            @if let Some(e) = event {
                p #event { (e.kind) ", generation " (e.claim_generation) ", at " (e.created_at) " UTC, transaction " code { (e.event_xid) } }
            } @else {
                p.muted { "None yet: a job's event is written when it finishes." }
            }
            h2 { "Redrive chain" }
            @if earlier.is_empty() && later.is_empty() {
                p.muted { "Not redriven, and not a redrive." }
            } @else {
                p #chain {
                    (chain(&earlier)) b { (id) " (" (job.status) ")" } (chain_after(&later))
                }
            }
            h2 { "Business row" }
            (business_row(&ctx, link.as_ref(), job.transaction_id.as_deref(), business))
            h2 { "Payload" }
            @if let Some(p) = payload { pre #payload { (text::block(&p)) } }
            @else if ctx.privileges.payload && ctx.operator.is_none() { p.muted #payload-hidden { "Hidden until you sign in as an operator." } }
            @else if ctx.privileges.payload { p.muted { "—" } }
            @else { p.muted #payload-hidden { "Hidden: the role " code { (ctx.privileges.role) } " may not read send_jobs.payload." } }
        },
    ))
}

/// The attempts that ended without finishing the job (retried, or their lease expired),
/// oldest first; the job's own row is the last attempt's.
fn earlier_attempts(attempts: Option<&[Attempt]>, job: &Job) -> Markup {
    let Some(attempts) = attempts else {
        return html! { p.muted { "The role may not read send_job_attempts (the monitor level of 0.5.0 may)." } };
    };
    html! {
        @if attempts.is_empty() {
            p.muted #attempts { "None: every attempt so far is the job's own (above)." }
        } @else {
            table #attempts {
                thead { tr { th { "attempt" } th { "generation" } th { "claimed (UTC)" } th { "ended (UTC)" } th { "how" } th { "error" } } }
                tbody {
                    @for a in attempts {
                        tr {
                            td.n { (a.attempt) } td.n { (a.claim_generation) } td { (a.claimed_at) } td { (a.ended_at) }
                            td { (a.ended) }
                            td { @if let Some(e) = &a.error { pre { (text::block(e)) } } @else { "—" } }
                        }
                    }
                }
            }
            @if job.claim_generation > 20 {
                p.muted { "The latest 20 are kept." }
            }
        }
    }
}

fn chain(jobs: &[ChainJob]) -> Markup {
    html! { @for j in jobs { a href=(format!("/jobs/{}", j.id)) { (j.id) } " (" (j.status) ") → " } }
}

fn chain_after(jobs: &[ChainJob]) -> Markup {
    html! { @for j in jobs { " → " a href=(format!("/jobs/{}", j.id)) { (j.id) } " (" (j.status) ")" } }
}

fn business_row(
    ctx: &Ctx,
    link: Option<&crate::db::Link>,
    transaction_id: Option<&str>,
    status: Option<Option<Option<String>>>,
) -> Markup {
    html! {
        @if !ctx.privileges.link {
            p.muted { "Unknown: the role may not read sendjobs_transaction_link (the monitor level does not; admin does)." }
        } @else if let Some(link) = link {
            @if transaction_id.is_none() {
                p.muted { "The job has no transaction id." }
            } @else if !link.readable {
                p.muted { "The role may not read " code { (link.table) } "." (link.key_column) " and ." (link.status_column) "." }
            } @else if ctx.operator.is_none() {
                p.muted { "Shown to a signed-in operator." }
            } @else {
                @match status {
                    Some(Some(Some(s))) => p #business { code { (link.table) } " row " code { (text::name(transaction_id.unwrap_or_default())) } ": " b { (text::name(&s)) } },
                    Some(Some(None)) => p #business { code { (link.table) } " row " code { (text::name(transaction_id.unwrap_or_default())) } ": status NULL" },
                    _ => p #business { "No row of " code { (link.table) } " has " (link.key_column) " " code { (text::name(transaction_id.unwrap_or_default())) } "." },
                }
            }
        } @else {
            p.muted { "No business table is linked (sendjobs_link_transactions)." }
        }
    }
}
