//! The queues page: per queue what sendjobs_stats() tells, its flow control and its use
//! (sendjobs_queue_limits), and the last hour's finished jobs as a chart. The table and
//! the chart are refreshed every 5 seconds by assets/console.js from /queues/live.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::Extension;
use maud::{html, Markup, PreEscaped};

use crate::auth::CsrfCookie;
use crate::db::{ChartPoint, QueueLimits, QueueStats};
use crate::error::{PageError, PageResult};
use crate::figures::Figures;
use crate::pages::{access_notes, layout, opt, rate, Ctx};
use crate::text;
use crate::Shared;
use serde::Deserialize;

/// How the list is narrowed and ordered: the form above it, kept by the live refresh.
#[derive(Deserialize, Default)]
pub struct ListQuery {
    /// Names that hold this, in any case.
    find: Option<String>,
    /// `failing` (failures in the last 5 minutes), `limited` (limited now) or `paused`.
    only: Option<String>,
    /// `name` (the default), `failing` (most failures first) or `ready` (most ready first).
    sort: Option<String>,
}

const ONLY: [(&str, &str); 4] = [
    ("", "every queue"),
    ("failing", "failing (5 min)"),
    ("limited", "limited now"),
    ("paused", "paused"),
];
const SORT: [(&str, &str); 3] = [
    ("name", "by name"),
    ("failing", "most failures first"),
    ("ready", "most ready first"),
];

impl ListQuery {
    fn checked(self) -> PageResult<ListQuery> {
        let known = |value: &Option<String>, choices: &[(&str, &str)], what: &str| match value {
            Some(v) if !choices.iter().any(|(c, _)| c == v) => Err(PageError::BadRequest(format!(
                "unknown {what} {}; expected one of {}",
                crate::pages::echoed(v),
                choices
                    .iter()
                    .map(|(c, _)| *c)
                    .filter(|c| !c.is_empty())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
            _ => Ok(()),
        };
        known(&self.only, &ONLY, "only")?;
        known(&self.sort, &SORT, "sort")?;
        Ok(self)
    }
}

pub async fn page(
    State(app): State<Shared>,
    headers: HeaderMap,
    Extension(csrf): Extension<CsrfCookie>,
    Query(list): Query<ListQuery>,
) -> PageResult<Markup> {
    let list = list.checked()?;
    let ctx = Ctx::new(&app, &headers, &csrf).await?;
    let live = live_table(&app, &list).await?;
    let chosen = |value: &Option<String>, choice: &str| value.as_deref().unwrap_or("") == choice;
    Ok(layout(
        Some(&ctx),
        "Queues",
        html! {
            h1 { "Queues" }
            (access_notes(&ctx))
            @if !ctx.privileges.payload {
                p.muted { "Payloads are hidden: the role may not read send_jobs.payload (the monitor level excludes it)." }
            }
            form.search #queue-filter method="get" action="/queues" {
                label { "name holds" input type="text" name="find" value=(list.find.clone().unwrap_or_default()); }
                label { "show" select name="only" {
                    @for (value, label) in ONLY { option value=(value) selected[chosen(&list.only, value)] { (label) } }
                } }
                label { "order" select name="sort" {
                    @for (value, label) in SORT { option value=(value) selected[chosen(&list.sort, value) || (value == "name" && list.sort.is_none())] { (label) } }
                } }
                button type="submit" #filter { "Show" }
            }
            p.muted { "Refreshed every 5 s. " span #live-status {} }
            div #live { (live) }
        },
    ))
}

/// The table and chart alone, for the live refresh.
pub async fn live(State(app): State<Shared>, Query(list): Query<ListQuery>) -> PageResult<Markup> {
    live_table(&app, &list.checked()?).await
}

async fn live_table(app: &Arc<crate::App>, list: &ListQuery) -> PageResult<Markup> {
    let (figures, limits) = tokio::try_join!(Figures::get(app), app.db.queue_limits(None))?;
    let (stats, chart) = (&figures.stats, &figures.chart);
    let limits: BTreeMap<&str, &QueueLimits> =
        limits.iter().map(|l| (l.queue.as_str(), l)).collect();
    let mut per_queue: BTreeMap<&str, Vec<&ChartPoint>> = BTreeMap::new();
    for point in chart {
        per_queue
            .entry(point.queue.as_str())
            .or_default()
            .push(point);
    }
    let by_name: BTreeMap<&str, &QueueStats> =
        stats.iter().map(|s| (s.queue.as_str(), s)).collect();
    // A queue with flow control but no work has no stats row: listed from its limits.
    let mut names: Vec<&str> = by_name.keys().copied().collect();
    names.extend(limits.keys().copied().filter(|q| !by_name.contains_key(q)));
    let total = names.len();
    let failed = |q: &str| by_name.get(q).map_or(0, |s| s.failed_5m);
    let find = list.find.as_deref().map(str::to_lowercase);
    names.retain(|q| {
        find.as_deref().is_none_or(|f| q.to_lowercase().contains(f))
            && match list.only.as_deref() {
                Some("failing") => failed(q) > 0,
                Some("limited") => limits.get(q).is_some_and(|l| l.limited.is_some()),
                Some("paused") => limits.get(q).is_some_and(|l| l.paused),
                _ => true,
            }
    });
    match list.sort.as_deref() {
        Some("failing") => names.sort_by_key(|q| (std::cmp::Reverse(failed(q)), *q)),
        Some("ready") => {
            names.sort_by_key(|q| (std::cmp::Reverse(by_name.get(q).map_or(0, |s| s.ready)), *q))
        }
        _ => names.sort_unstable(),
    }
    Ok(html! {
        @if total > names.len() {
            p.muted #shown { (names.len()) " of " (total) " queues shown." }
        }
        @if names.is_empty() {
            p { (if total == 0 { "No queue has work or recent events." } else { "No queue shown: the filter above leaves none." }) }
        } @else {
            table #queues {
                thead { tr {
                    th { "queue" } th { "ready" } th { "scheduled" } th { "in flight" } th { "expired" }
                    th { "at last attempt" } th { "oldest ready" } th { "sent 5m" } th { "failed 5m" }
                    th { "cancelled 5m" } th { "flow control" } th { "last hour (per minute)" }
                } }
                tbody {
                    @for name in &names {
                        @let s = by_name.get(name);
                        @let failing = s.is_some_and(|s| s.failed_5m > 0);
                        tr data-queue=(name) class=(if failing { "failing" } else { "" }) {
                            td { a href=(queue_href(name)) { (text::name(name)) } }
                            @if let Some(s) = s {
                                td.n { (s.ready) (if s.estimated { "~" } else { "" }) }
                                td.n { (s.scheduled) }
                                td.n { (s.in_flight) }
                                td.n { (s.expired) }
                                td.n { (s.at_last_attempt) }
                                td { (opt(&s.oldest_ready_age)) }
                                td.n { (s.sent_5m) }
                                td class=(if failing { "n bad" } else { "n" }) { (s.failed_5m) }
                                td.n { (s.cancelled_5m) }
                            } @else {
                                td colspan="9" .muted { "no work, no recent events" }
                            }
                            td { (flow(limits.get(name).copied())) }
                            td { (hour_chart(per_queue.get(name).map(Vec::as_slice).unwrap_or(&[]))) }
                        }
                    }
                }
            }
            @if let Some(s) = stats.first() {
                p.muted {
                    "send_jobs: " (s.dead_tuples) " dead tuples; the oldest transaction holding back vacuum: "
                    (opt(&s.oldest_xmin_age)) ". ~: a count above 10,000, estimated by a sample."
                }
            }
            p.muted #figures-age { (figures_age(&figures)) }
            p.legend { span.swatch-sent { "■ sent" } span.swatch-failed { "■ failed" } span.muted { "bars: one a minute, now on the right" } }
        }
    })
}

/// When the figures were read and how long that took: they are shared by every page
/// (figures.rs), so they may be a few seconds old.
pub fn figures_age(figures: &crate::figures::Snapshot) -> String {
    format!(
        "Counts and chart read {} s ago, in {} ms; flow control read now.",
        figures.read_at.elapsed().as_secs(),
        figures.took.as_millis()
    )
}

fn flow(limits: Option<&QueueLimits>) -> Markup {
    let Some(l) = limits else {
        return html! { span.muted { "none" } };
    };
    html! {
        @if l.paused { span.bad { "paused" } br; }
        @if let Some(cap) = l.max_in_flight { "cap " (l.in_flight) " / " (cap) br; }
        @if let (Some(r), Some(burst)) = (l.rate, l.burst) {
            "rate " (rate(r)) ", burst " (burst) ", tokens " (format!("{:.1}", l.tokens.unwrap_or(0.0))) br;
        }
        @if let Some(why) = &l.limited {
            span.warn { "limited: " (why) }
            @if let Some(after) = &l.retry_after_s { " (for " (after) " s)" }
        }
    }
}

/// 60 one-minute bars, sent stacked on failed, scaled to the busiest minute.
fn hour_chart(points: &[&ChartPoint]) -> Markup {
    let mut minutes = [(0i64, 0i64); 60];
    for p in points {
        if let Some(slot) = usize::try_from(p.minutes_ago).ok().filter(|m| *m < 60) {
            minutes[59 - slot] = (p.sent, p.failed);
        }
    }
    let top = minutes.iter().map(|(s, f)| s + f).max().unwrap_or(0).max(1) as f64;
    let (sent, failed): (i64, i64) = minutes
        .iter()
        .fold((0, 0), |acc, m| (acc.0 + m.0, acc.1 + m.1));
    let mut bars = String::new();
    for (i, (s, f)) in minutes.iter().enumerate() {
        let x = i * 4;
        let fh = (*f as f64 / top * 36.0).ceil();
        let sh = (*s as f64 / top * 36.0).ceil();
        if *f > 0 {
            bars.push_str(&format!(
                r#"<rect class="failed" x="{x}" y="{:.0}" width="3" height="{fh:.0}"/>"#,
                38.0 - fh
            ));
        }
        if *s > 0 {
            bars.push_str(&format!(
                r#"<rect class="sent" x="{x}" y="{:.0}" width="3" height="{sh:.0}"/>"#,
                38.0 - fh - sh
            ));
        }
    }
    html! {
        svg.chart width="240" height="40" viewBox="0 0 240 40" role="img"
            aria-label=(format!("last hour: {sent} sent, {failed} failed")) {
            // Only numbers computed here go into the SVG: nothing to escape.
            (PreEscaped(bars))
        }
        div.muted { (sent) " sent, " (failed) " failed" }
    }
}

/// A value in a link's query string.
pub fn query_value(value: &str) -> String {
    form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

/// The link to a queue's page. The name is a query value, not a path segment: a browser
/// normalises a segment `.` or `..` away (also written `%2E`), and both are queue names.
pub fn queue_href(queue: &str) -> String {
    format!("/queue?name={}", query_value(queue))
}
