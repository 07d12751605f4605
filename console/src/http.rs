//! The routes, and what every response gets, a refusal too: security headers, the
//! handler's time as a `Server-Timing` header, and the CSRF cookie when the browser has
//! none yet. A request is refused unless it comes from here and its body arrives whole
//! in time (its head's time is src/serve.rs's).

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{self, HeaderValue};
use axum::http::Method;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;

use crate::auth::{self, Cookie, CsrfCookie};
use crate::error::PageError;
use crate::{actions, assets, pages, App, Shared};

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
        .route("/actions/unblock", post(actions::unblock))
        .route("/actions/limit", post(actions::limit))
        .route("/assets/console.css", get(assets::css))
        .route("/assets/console.js", get(assets::js))
        .fallback(|| async { PageError::NotFound("no such page".into()) })
        .layer(middleware::from_fn_with_state(app.clone(), every_response))
        .with_state(app)
}

/// Whether a request may be served: its Host is one the console answers to (a page
/// another site's name was rebound to 127.0.0.1 for carries that name: DNS rebinding),
/// a POST does not come from another origin (a form of another site, or of another
/// port of this host, which SameSite counts as the same site), and a GET of another
/// site or port is a link followed, not an image, script or frame of its page (which
/// could make the console search its history in a loop: an attack review).
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
    let fetch = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if request.method() != Method::POST
        && matches!(fetch("sec-fetch-site"), Some("cross-site" | "same-site"))
        && !(fetch("sec-fetch-mode") == Some("navigate")
            && fetch("sec-fetch-dest") == Some("document"))
    {
        return Err("a request of another site's page that is not a link followed");
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

/// The most a request's body may hold: a form (a redrive of 1,000 ids is about 20 KiB).
const MAX_BODY: usize = 256 * 1024;
/// The time a request's body has to arrive once its head has (src/serve.rs bounds the head).
const BODY_TIMEOUT: Duration = Duration::from_secs(10);

async fn every_response(State(app): State<Shared>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let path = request.uri().path().to_string();
    let mut new_cookie = None;
    // A refusal gets the same headers as a page (below).
    let mut response = match admitted(&app, request).await {
        Ok(mut request) => {
            let existing = auth::cookie(request.headers(), app.auth.cookie_name(Cookie::Csrf))
                .filter(|c| !c.is_empty())
                .map(str::to_string);
            new_cookie = existing.is_none().then(|| app.auth.new_csrf_cookie());
            let csrf = existing.or_else(|| new_cookie.clone()).unwrap_or_default();
            request.extensions_mut().insert(CsrfCookie(csrf));
            next.run(request).await.into_response()
        }
        Err(refusal) => refusal.into_response(),
    };
    let took = started.elapsed().as_secs_f64() * 1000.0;
    let headers = response.headers_mut();
    if let Some(cookie) = new_cookie {
        if let Ok(value) = HeaderValue::from_str(&app.auth.set_cookie(Cookie::Csrf, &cookie, None))
        {
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
    tracing::debug!(?path, ms = took, "served");
    response
}

/// The request, if it may be served: it comes from here (`from_here`), and its body
/// arrived whole, within its size and time.
async fn admitted(app: &App, request: Request) -> Result<Request, PageError> {
    if let Err(why) = from_here(app, &request) {
        tracing::warn!(why, host = ?request.headers().get(header::HOST), "refused");
        return Err(PageError::Forbidden(why.into()));
    }
    let (parts, body) = request.into_parts();
    let body = match tokio::time::timeout(BODY_TIMEOUT, axum::body::to_bytes(body, MAX_BODY)).await
    {
        Ok(Ok(body)) => body,
        Ok(Err(_)) => {
            return Err(PageError::TooLarge(format!(
                "a request's body holds at most {} KiB",
                MAX_BODY / 1024
            )))
        }
        Err(_) => {
            return Err(PageError::Timeout(format!(
                "the request's body did not arrive within {} s",
                BODY_TIMEOUT.as_secs()
            )))
        }
    };
    Ok(Request::from_parts(parts, Body::from(body)))
}
