//! TLS to PostgreSQL as libpq's `sslmode` and `sslrootcert` ask for it.
//!
//! tokio-postgres reads `sslmode` = disable, prefer or require and nothing of the server's
//! certificate; libpq's users also write `verify-ca`, `verify-full` and `sslrootcert`.
//! [`split`] takes those two keys out of the connection string (both forms) and gives the
//! rest to tokio-postgres; [`Tls::connector`] then builds the connector that checks what
//! libpq would check: `require` and `prefer` only encrypt (or check the chain when a root
//! certificate is given, as libpq does), `verify-ca` checks the chain against
//! `sslrootcert`, `verify-full` the chain and the host name. `sslrootcert=system` trusts
//! the system's roots, and then only `verify-full` is allowed (libpq 16's rule).
//! Tested over a cluster with its own CA in tests/console/run.sh.

use std::path::PathBuf;

use crate::error::StartError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// The connection string's TLS settings, libpq's defaults filled in.
#[derive(Debug, PartialEq, Eq)]
pub struct Tls {
    pub mode: SslMode,
    pub roots: Roots,
}

/// The certificates a server's chain must lead to.
#[derive(Debug, PartialEq, Eq)]
pub enum Roots {
    /// None named: the chain is not checked (sslmode prefer and require).
    Unchecked,
    /// `sslrootcert=system`.
    System,
    /// `sslrootcert=FILE`, or libpq's default `~/.postgresql/root.crt` when it exists.
    File(PathBuf),
}

/// Splits `sslmode` and `sslrootcert` out of a connection string (libpq's key=value form
/// or a postgres:// URL): the string without them, and what they ask for.
pub fn split(conninfo: &str) -> Result<(String, Tls), StartError> {
    let default_root = std::env::var_os("HOME")
        .map(|home| PathBuf::from(home).join(".postgresql/root.crt"))
        .filter(|path| path.exists());
    split_with(conninfo, default_root)
}

fn split_with(conninfo: &str, default_root: Option<PathBuf>) -> Result<(String, Tls), StartError> {
    let (rest, pairs) =
        if conninfo.starts_with("postgres://") || conninfo.starts_with("postgresql://") {
            split_url(conninfo)
        } else {
            split_keywords(conninfo)?
        };
    let mut mode = None;
    let mut root = None;
    for (key, value) in pairs {
        match key.as_str() {
            "sslmode" => mode = Some(value),
            _ => root = Some(value),
        }
    }
    let mode = match mode.as_deref().unwrap_or("prefer") {
        "disable" => SslMode::Disable,
        "prefer" => SslMode::Prefer,
        "require" => SslMode::Require,
        "verify-ca" => SslMode::VerifyCa,
        "verify-full" => SslMode::VerifyFull,
        other => return Err(StartError::Tls(format!(
            "sslmode={other} is not one the console knows: disable, prefer, require, verify-ca or verify-full"
        ))),
    };
    let roots = match root.as_deref() {
        Some("system") if mode != SslMode::VerifyFull => {
            return Err(StartError::Tls(
                "sslrootcert=system needs sslmode=verify-full (as libpq's does)".into(),
            ));
        }
        Some("system") => Roots::System,
        Some(path) => Roots::File(PathBuf::from(path)),
        None => default_root.map_or(Roots::Unchecked, Roots::File),
    };
    let tls = Tls { mode, roots };
    if matches!(tls.mode, SslMode::VerifyCa | SslMode::VerifyFull) && tls.roots == Roots::Unchecked
    {
        return Err(StartError::Tls(format!(
            "sslmode={} needs the CA's certificate: sslrootcert=/path/ca.pem, or \
             sslrootcert=system for the system's trusted roots",
            mode.as_str()
        )));
    }
    Ok((rest, tls))
}

impl SslMode {
    fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    /// What tokio-postgres is told: it only encrypts or not; the checking is the connector's.
    pub fn for_driver(self) -> tokio_postgres::config::SslMode {
        match self {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            _ => tokio_postgres::config::SslMode::Require,
        }
    }
}

impl Tls {
    /// The connector that checks what the mode asks for.
    pub fn connector(&self) -> Result<postgres_native_tls::MakeTlsConnector, StartError> {
        let mut builder = native_tls::TlsConnector::builder();
        if let Roots::File(path) = &self.roots {
            let pem = std::fs::read(path)
                .map_err(|err| StartError::Tls(format!("sslrootcert {}: {err}", path.display())))?;
            let certificates = native_tls::Certificate::stack_from_pem(&pem)
                .map_err(|err| StartError::Tls(format!("sslrootcert {}: {err}", path.display())))?;
            // As libpq: the file's certificates are the only roots.
            builder.disable_built_in_roots(true);
            for certificate in certificates {
                builder.add_root_certificate(certificate);
            }
        }
        builder.danger_accept_invalid_certs(self.roots == Roots::Unchecked);
        builder.danger_accept_invalid_hostnames(self.mode != SslMode::VerifyFull);
        let connector = builder
            .build()
            .map_err(|err| StartError::Tls(err.to_string()))?;
        Ok(postgres_native_tls::MakeTlsConnector::new(connector))
    }
}

/// libpq's key=value form: `key = value`, a value in single quotes when it holds spaces,
/// `\` escaping the next character. Returns the other pairs written back, quoted.
fn split_keywords(conninfo: &str) -> Result<(String, Vec<(String, String)>), StartError> {
    let mut chars = conninfo.chars().peekable();
    let mut rest = Vec::new();
    let mut taken = Vec::new();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            break;
        }
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next() != Some('=') {
            return Err(StartError::Tls(format!(
                "the connection string: \"{key}\" has no \"=\" after it"
            )));
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let quoted = chars.next_if_eq(&'\'').is_some();
        let mut value = String::new();
        loop {
            match chars.next() {
                None if quoted => {
                    return Err(StartError::Tls(
                        "the connection string: a quote is not closed".into(),
                    ))
                }
                None => break,
                Some('\'') if quoted => break,
                Some(c) if c.is_whitespace() && !quoted => break,
                Some('\\') => value.extend(chars.next()),
                Some(c) => value.push(c),
            }
        }
        if key == "sslmode" || key == "sslrootcert" {
            taken.push((key, value));
        } else {
            let escaped = value.replace('\\', "\\\\").replace('\'', "\\'");
            rest.push(format!("{key}='{escaped}'"));
        }
    }
    Ok((rest.join(" "), taken))
}

/// A postgres:// URL: the query's parameters other than the two, left as they were written.
fn split_url(url: &str) -> (String, Vec<(String, String)>) {
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_string(), Vec::new());
    };
    let mut kept = Vec::new();
    let mut taken = Vec::new();
    for parameter in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = parameter.split_once('=').unwrap_or((parameter, ""));
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        };
        let key_decoded = decode(key);
        if key_decoded == "sslmode" || key_decoded == "sslrootcert" {
            taken.push((key_decoded, decode(value)));
        } else {
            kept.push(parameter);
        }
    }
    if kept.is_empty() {
        (base.to_string(), taken)
    } else {
        (format!("{base}?{}", kept.join("&")), taken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_keys_come_out_of_either_form() {
        let (rest, tls) = split_with("host=db.example port = 5432 sslmode=verify-full sslrootcert='/etc/a b/ca.pem' password='it\\'s'", None).unwrap();
        assert_eq!(rest, "host='db.example' port='5432' password='it\\'s'");
        assert_eq!(tls.mode, SslMode::VerifyFull);
        assert_eq!(tls.roots, Roots::File(PathBuf::from("/etc/a b/ca.pem")));
        let rest: tokio_postgres::Config = rest.parse().unwrap();
        assert_eq!(rest.get_password(), Some(&b"it's"[..]));

        let (rest, tls) = split_with("postgresql://u:p%40@db:5432/app?application_name=a+b&sslmode=require&sslrootcert=%2Fca.pem", None).unwrap();
        assert_eq!(rest, "postgresql://u:p%40@db:5432/app?application_name=a+b");
        assert_eq!(tls.mode, SslMode::Require);
        assert_eq!(tls.roots, Roots::File(PathBuf::from("/ca.pem")));
        let (rest, _) = split_with("postgres://db/app?sslmode=disable", None).unwrap();
        assert_eq!(rest, "postgres://db/app");
    }

    #[test]
    fn a_check_without_a_root_or_an_unknown_mode_is_refused() {
        for conninfo in [
            "host=db sslmode=verify-full",
            "host=db sslmode=verify-ca",
            "host=db sslmode=allow",
            "host=db sslmode=require sslrootcert=system",
            "host=db sslmode='verify-full",
        ] {
            assert!(split_with(conninfo, None).is_err(), "{conninfo}");
        }
        let (_, prefer) = split_with("host=db", None).unwrap();
        assert_eq!(
            prefer,
            Tls {
                mode: SslMode::Prefer,
                roots: Roots::Unchecked
            }
        );
        let (_, system) =
            split_with("host=db sslmode=verify-full sslrootcert=system", None).unwrap();
        assert_eq!(system.roots, Roots::System);
        // libpq's default file counts as named.
        let (_, default) =
            split_with("host=db sslmode=verify-ca", Some("/h/root.crt".into())).unwrap();
        assert_eq!(default.roots, Roots::File("/h/root.crt".into()));
    }
}
