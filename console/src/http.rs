//! The routes, and what every response gets: security headers, the handler's time as a
//! `Server-Timing` header, and the CSRF cookie when the browser has none yet.

use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::header::{self, HeaderValue};
use axum::http::Method;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;

use crate::auth::{self, CSRF_COOKIE};
use crate::{actions, assets, pages, App, Shared};

/// The CSRF cookie of this request (the browser's, or the one this response sets).
#[derive(Clone)]
pub struct CsrfCookie(pub String);

pub fn router(app: Shared) -> Router {
    Router::new()
        .route("/", get(|| async { Redirect::to("/queues") }))
        .route("/queues", get(pages::queues::page))
        .route("/queues/live", get(pages::queues::live))
        .route("/queue", get(pages::queue::page))
        .route("/jobs", get(pages::search::page))
        .route("/jobs/{id}", get(pages::job::page))
        .route("/signin", post(actions::sign_in))
        .route("/signout", post(actions::sign_out))
        .route("/actions/redrive", post(actions::redrive))
        .route("/actions/cancel", post(actions::cancel))
        .route("/actions/pause", post(actions::pause))
        .route("/actions/resume", post(actions::resume))
        .route("/assets/console.css", get(assets::css))
        .route("/assets/console.js", get(assets::js))
        .fallback(|| async { crate::error::PageError::NotFound("no such page".into()) })
        .layer(middleware::from_fn_with_state(app.clone(), every_response))
        .with_state(app)
}

/// Whether a request may be served: its Host is one the console answers to (a page
/// another site's name was rebound to 127.0.0.1 for carries that name: DNS rebinding),
/// and a POST does not come from another origin (a form of another site, or of another
/// port of this host, which SameSite counts as the same site).
fn from_here(app: &App, request: &Request) -> Result<(), &'static str> {
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if !app
        .hosts
        .iter()
        .any(|allowed| allowed.eq_ignore_ascii_case(host))
    {
        return Err("this console does not answer to that Host (see --public-host)");
    }
    if request.method() == Method::POST {
        // A browser says where a request comes from in Sec-Fetch-Site; one that does not
        // may send Origin (which is "null" under this console's no-referrer policy, and
        // for a sandboxed frame: left to the CSRF token).
        match headers.get("sec-fetch-site").and_then(|s| s.to_str().ok()) {
            Some("same-origin" | "none") => {}
            Some(_) => return Err("a form of another site or port"),
            None => {
                let origin = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok());
                if let Some(origin) = origin.filter(|o| *o != "null") {
                    let same = ["http://", "https://"]
                        .iter()
                        .any(|scheme| origin.eq_ignore_ascii_case(&format!("{scheme}{host}")));
                    if !same {
                        return Err("a form of another origin");
                    }
                }
            }
        }
    }
    Ok(())
}

async fn every_response(State(app): State<Shared>, mut request: Request, next: Next) -> Response {
    if let Err(why) = from_here(&app, &request) {
        tracing::warn!(why, host = ?request.headers().get(header::HOST), "refused");
        return crate::error::PageError::Forbidden(why.into()).into_response();
    }
    let started = Instant::now();
    let existing = auth::cookie(request.headers(), CSRF_COOKIE)
        .filter(|c| !c.is_empty())
        .map(str::to_string);
    let new_cookie = existing.is_none().then(|| app.auth.new_csrf_cookie());
    let csrf = existing.or_else(|| new_cookie.clone()).unwrap_or_default();
    request.extensions_mut().insert(CsrfCookie(csrf));
    let path = request.uri().path().to_string();
    let mut response = next.run(request).await.into_response();
    let took = started.elapsed().as_secs_f64() * 1000.0;
    let headers = response.headers_mut();
    if let Some(cookie) = new_cookie {
        if let Ok(value) = HeaderValue::from_str(&auth::set_cookie(CSRF_COOKIE, &cookie, None)) {
            headers.append(header::SET_COOKIE, value);
        }
    }
    let fixed = [
        (
            "content-security-policy",
            "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
        ),
        ("x-frame-options", "DENY"),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "no-referrer"),
    ];
    for (name, value) in fixed {
        headers.insert(name, HeaderValue::from_static(value));
    }
    // Pages show live data and actions' answers must never be replayed from a cache:
    // nothing but the assets is stored.
    if !path.starts_with("/assets/") {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    if let Ok(value) = HeaderValue::from_str(&format!("app;dur={took:.2}")) {
        headers.insert("server-timing", value);
    }
    tracing::debug!(path, ms = took, "served");
    response
}
