//! The operator token, the operator's session and the CSRF token.
//!
//! - **The token** comes from `SENDJOBS_CONSOLE_TOKEN`; unset, no action runs. The
//!   operator signs in with it and a name (POST /signin); the two are compared in
//!   constant time (SHA-256 digests of both, so that the length leaks nothing either).
//! - **The session** is a cookie `sjc_operator` = `<name>.<expires>.<mac>`, the MAC an
//!   HMAC-SHA-256 under a random per-process secret: it cannot be forged, ends after
//!   8 hours, and every session ends when the console restarts. HttpOnly, SameSite=Strict.
//! - **CSRF**: signed double submit, bound to the session. A random cookie `sjc_csrf`
//!   (SameSite=Strict, HttpOnly), and every form carries `csrf` = HMAC(secret, that
//!   cookie and the session cookie, if a valid one came with the page); a POST is refused
//!   unless the field matches the cookies it came with. Another site can neither read the
//!   field nor compute it; and one who plants a cookie of their own choosing (a sibling
//!   host can) and reads its field from a page gets the field of no session, which opens
//!   no action and no one else's sign-out.
//! - **Behind HTTPS** (`--secure-cookies`) both cookies are `Secure` and named with the
//!   `__Host-` prefix, which a browser accepts only from a secure origin, for the whole
//!   host, without a Domain: a sibling host can then plant neither.

use std::time::{SystemTime, UNIX_EPOCH};

/// The CSRF cookie of this request (the browser's, or the one this response sets), which
/// src/http.rs hands to every page.
#[derive(Clone)]
pub struct CsrfCookie(pub String);

use axum::http::HeaderMap;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::StartError;

/// The console's two cookies.
#[derive(Clone, Copy, Debug)]
pub enum Cookie {
    Csrf,
    Operator,
}
const SESSION_SECONDS: u64 = 8 * 3600;

pub struct Auth {
    /// SHA-256 of the operator token, when one is set.
    token_digest: Option<[u8; 32]>,
    /// The first 8 hex digits of that digest: names the token in the action log.
    pub token_id: Option<String>,
    secret: [u8; 32],
    /// `--secure-cookies`: the browser reaches the console through HTTPS.
    secure: bool,
}

/// The operator a session cookie names.
#[derive(Clone, Debug)]
pub struct Operator {
    pub name: String,
}

impl Auth {
    pub fn from_env(secure: bool) -> Result<Self, StartError> {
        let token = std::env::var("SENDJOBS_CONSOLE_TOKEN")
            .ok()
            .filter(|t| !t.is_empty());
        if let Some(t) = &token {
            if t.len() < 16 {
                return Err(StartError::ShortToken(t.len()));
            }
        }
        let mut secret = [0u8; 32];
        getrandom::getrandom(&mut secret).map_err(StartError::Random)?;
        let token_digest = token.map(|t| Sha256::digest(t.as_bytes()).into());
        let token_id = token_digest.map(|d: [u8; 32]| hex(&d[..4]));
        Ok(Auth {
            token_digest,
            token_id,
            secret,
            secure,
        })
    }

    pub fn token_configured(&self) -> bool {
        self.token_digest.is_some()
    }

    /// Whether `given` is the operator token, in constant time.
    pub fn token_matches(&self, given: &str) -> bool {
        let Some(expected) = &self.token_digest else {
            return false;
        };
        let given: [u8; 32] = Sha256::digest(given.as_bytes()).into();
        bool::from(given.ct_eq(expected))
    }

    fn mac(&self, purpose: &str, value: &str) -> String {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&self.secret).expect("HMAC takes any key length");
        mac.update(purpose.as_bytes());
        mac.update(b"\0");
        mac.update(value.as_bytes());
        hex(&mac.finalize().into_bytes())
    }

    /// A new random value for the CSRF cookie.
    pub fn new_csrf_cookie(&self) -> String {
        let mut bytes = [0u8; 16];
        getrandom::getrandom(&mut bytes).expect("the system's random source");
        hex(&bytes)
    }

    /// The CSRF field that the forms of a page carry, for the CSRF cookie and the session
    /// (`session_of`) it goes with.
    pub fn csrf_field(&self, cookie: &str, session: Option<&str>) -> String {
        self.mac("csrf", &format!("{cookie}\0{}", session.unwrap_or("")))
    }

    /// Whether a POST's CSRF field belongs to the cookies it came with (any of the CSRF
    /// cookies, with the valid session if there is one).
    pub fn csrf_valid(&self, headers: &HeaderMap, field: Option<&str>) -> bool {
        let Some(field) = field else {
            return false;
        };
        let session = self.session_of(headers);
        cookies(headers, self.cookie_name(Cookie::Csrf))
            .filter(|csrf| !csrf.is_empty())
            .any(|csrf| {
                bool::from(
                    self.csrf_field(csrf, session)
                        .as_bytes()
                        .ct_eq(field.as_bytes()),
                )
            })
    }

    /// The session cookie of a request that holds a valid session, if one does.
    pub fn session_of<'a>(&self, headers: &'a HeaderMap) -> Option<&'a str> {
        cookies(headers, self.cookie_name(Cookie::Operator))
            .find(|value| self.operator(Some(value)).is_some())
    }

    /// The operator of a request's valid session.
    pub fn operator_of(&self, headers: &HeaderMap) -> Option<Operator> {
        self.operator(self.session_of(headers))
    }

    /// The session cookie's value for `name`, signed.
    pub fn session_value(&self, name: &str) -> String {
        let expires = now_seconds() + SESSION_SECONDS;
        let body = format!("{name}.{expires}");
        let mac = self.mac("operator", &body);
        format!("{body}.{mac}")
    }

    /// A cookie's name: with the `__Host-` prefix behind HTTPS.
    pub fn cookie_name(&self, cookie: Cookie) -> &'static str {
        match (cookie, self.secure) {
            (Cookie::Csrf, false) => "sjc_csrf",
            (Cookie::Operator, false) => "sjc_operator",
            (Cookie::Csrf, true) => "__Host-sjc_csrf",
            (Cookie::Operator, true) => "__Host-sjc_operator",
        }
    }

    /// A Set-Cookie value: HttpOnly, SameSite=Strict, for the whole console; Secure
    /// behind HTTPS.
    pub fn set_cookie(&self, cookie: Cookie, value: &str, max_age: Option<u64>) -> String {
        let name = self.cookie_name(cookie);
        let secure = if self.secure { "; Secure" } else { "" };
        let age = max_age
            .map(|s| format!("; Max-Age={s}"))
            .unwrap_or_default();
        format!("{name}={value}; Path=/; HttpOnly; SameSite=Strict{secure}{age}")
    }

    /// The operator of a session cookie, if it is ours, unexpired, and a token is set.
    pub fn operator(&self, cookie: Option<&str>) -> Option<Operator> {
        self.token_digest?;
        let (body, mac) = cookie?.rsplit_once('.')?;
        if !bool::from(self.mac("operator", body).as_bytes().ct_eq(mac.as_bytes())) {
            return None;
        }
        let (name, expires) = body.rsplit_once('.')?;
        (expires.parse::<u64>().ok()? > now_seconds()).then(|| Operator {
            name: name.to_string(),
        })
    }
}

/// An operator's name: 1 to 64 letters, digits and `._@-` (it goes into a cookie and
/// the action log as it is).
pub fn valid_operator_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '@' | '-'))
}

/// A cookie of the request: its first value.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &'a str) -> Option<&'a str> {
    cookies(headers, name).next()
}

/// Every value of a cookie of the request. A browser sends as many as it holds under
/// the name (one a sibling host planted for a narrower path comes first), so each check
/// that looks for a valid one looks at all of them: a planted cookie cannot shadow the
/// console's own.
pub fn cookies<'a>(headers: &'a HeaderMap, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(move |(k, _)| *k == name)
        .map(|(_, v)| v)
}

pub fn session_max_age() -> u64 {
    SESSION_SECONDS
}

fn now_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(token: Option<&str>) -> Auth {
        let token_digest = token.map(|t| Sha256::digest(t.as_bytes()).into());
        Auth {
            token_digest,
            token_id: None,
            secret: [7; 32],
            secure: false,
        }
    }

    const CSRF_COOKIE: &str = "sjc_csrf";
    const OPERATOR_COOKIE: &str = "sjc_operator";

    #[test]
    fn the_token_must_match_exactly() {
        let a = auth(Some("a-token-of-twenty-chars"));
        assert!(a.token_matches("a-token-of-twenty-chars"));
        assert!(!a.token_matches("a-token-of-twenty-char"));
        assert!(!a.token_matches(""));
        assert!(!auth(None).token_matches(""));
    }

    fn cookies(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let value = pairs
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ");
        headers.insert(axum::http::header::COOKIE, value.parse().unwrap());
        headers
    }

    #[test]
    fn a_csrf_field_belongs_to_its_cookie() {
        let a = auth(None);
        let field = a.csrf_field("cookie-1", None);
        assert!(a.csrf_valid(&cookies(&[(CSRF_COOKIE, "cookie-1")]), Some(&field)));
        assert!(!a.csrf_valid(&cookies(&[(CSRF_COOKIE, "cookie-2")]), Some(&field)));
        assert!(!a.csrf_valid(&cookies(&[]), Some(&field)));
        assert!(!a.csrf_valid(&cookies(&[(CSRF_COOKIE, "cookie-1")]), None));
        assert!(!a.csrf_valid(
            &cookies(&[(CSRF_COOKIE, "")]),
            Some(&a.csrf_field("", None))
        ));
    }

    #[test]
    fn a_planted_cookie_shadows_nothing() {
        let a = auth(Some("a-token-of-twenty-chars"));
        let session = a.session_value("alice");
        // What a sibling host planted for a narrower path comes first.
        let headers = cookies(&[
            (CSRF_COOKIE, "planted"),
            (OPERATOR_COOKIE, "junk.1.2"),
            (CSRF_COOKIE, "own"),
            (OPERATOR_COOKIE, &session),
        ]);
        assert_eq!(a.session_of(&headers), Some(session.as_str()));
        assert!(a.csrf_valid(&headers, Some(&a.csrf_field("own", Some(&session)))));
        assert_eq!(
            a.operator_of(&headers).map(|o| o.name),
            Some("alice".into())
        );
    }

    #[test]
    fn a_csrf_field_without_the_session_opens_nothing_with_it() {
        let a = auth(Some("a-token-of-twenty-chars"));
        let session = a.session_value("alice");
        let with_session = cookies(&[(CSRF_COOKIE, "planted"), (OPERATOR_COOKIE, &session)]);
        // What a page hands out for the planted cookie to one without the session.
        let handed_out = a.csrf_field("planted", None);
        assert!(!a.csrf_valid(&with_session, Some(&handed_out)));
        assert!(a.csrf_valid(
            &with_session,
            Some(&a.csrf_field("planted", Some(&session)))
        ));
        // Another operator's session gives another field.
        let other = a.session_value("bob");
        assert!(!a.csrf_valid(&with_session, Some(&a.csrf_field("planted", Some(&other)))));
    }

    #[test]
    fn a_session_cannot_be_forged_or_renamed() {
        let a = auth(Some("a-token-of-twenty-chars"));
        let value = a.session_value("alice");
        assert_eq!(
            a.operator(Some(&value)).map(|o| o.name),
            Some("alice".into())
        );
        let renamed = value.replacen("alice", "mallory", 1);
        assert!(a.operator(Some(&renamed)).is_none());
        assert!(
            auth(None).operator(Some(&value)).is_none(),
            "no token: no session"
        );
        let other_process = Auth {
            secret: [8; 32],
            ..auth(Some("a-token-of-twenty-chars"))
        };
        assert!(other_process.operator(Some(&value)).is_none());
    }

    #[test]
    fn behind_https_the_cookies_are_secure_and_host_only() {
        let a = Auth {
            secure: true,
            ..auth(None)
        };
        let set = a.set_cookie(Cookie::Operator, "v", Some(1));
        assert_eq!(
            set,
            "__Host-sjc_operator=v; Path=/; HttpOnly; SameSite=Strict; Secure; Max-Age=1"
        );
        // A cookie under the plain name (which anyone on the domain may set) is not read.
        let mut headers = HeaderMap::new();
        headers.insert(axum::http::header::COOKIE, "sjc_csrf=own".parse().unwrap());
        assert!(!a.csrf_valid(&headers, Some(&a.csrf_field("own", None))));
        headers.insert(
            axum::http::header::COOKIE,
            "__Host-sjc_csrf=own".parse().unwrap(),
        );
        assert!(a.csrf_valid(&headers, Some(&a.csrf_field("own", None))));
        let plain = Auth {
            secure: false,
            ..auth(None)
        };
        assert!(!plain.set_cookie(Cookie::Csrf, "v", None).contains("Secure"));
    }
}
