//! The console's only assets, compiled in: a style sheet and the live refresh's script.
//! Nothing is loaded from elsewhere (no CDN, no web fonts).

use axum::http::header;
use axum::response::IntoResponse;

pub async fn css() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "max-age=300"),
        ],
        include_str!("../assets/console.css"),
    )
}

pub async fn js() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "max-age=300"),
        ],
        include_str!("../assets/console.js"),
    )
}
