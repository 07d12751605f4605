//! sendjobs-console: an operator's console in the browser for the sendjobs extension.
//!
//! One process, one pool of connections as one role: pages read through the
//! extension's functions and its indexed look-ups (db.rs), actions call its functions
//! (actions.rs) once the operator signed in with the token (auth.rs). docs/console.md
//! tells the pages, the access and the measurements.

mod actions;
mod assets;
mod auth;
mod db;
mod error;
mod figures;
mod http;
mod log;
mod pages;
mod serve;
mod text;
mod tls;

use std::net::SocketAddr;
use std::sync::Arc;

use clap::Parser;

/// The console's command line.
#[derive(Parser, Debug)]
#[command(
    name = "sendjobs-console",
    version,
    about = "An operator's console in the browser for the sendjobs extension",
    after_help = "Actions (redrive, cancel, pause, resume) need the operator token from the \
environment, SENDJOBS_CONSOLE_TOKEN; without it the console only shows.\n\n\
--listen defaults to 127.0.0.1:8090, loopback: only this machine can reach it. A \
non-loopback address (0.0.0.0, a LAN address) lets anyone who can reach that address \
read every page, and try the token; the console speaks plain HTTP, so the token and \
the session cookie cross that network unencrypted. Put it behind a TLS proxy, or keep it \
on loopback and reach it through an SSH tunnel."
)]
struct Args {
    /// A file holding the connection string (libpq key=value or postgresql:// URL) of a
    /// role with the `monitor` level, and `admin` for the actions (sendjobs_grant).
    /// Without it, the string comes from the environment, SENDJOBS_CONSOLE_DATABASE_URL;
    /// never from the command line, which every user of the machine can read.
    #[arg(long, value_name = "PATH")]
    database_url_file: Option<std::path::PathBuf>,

    /// Where to listen.
    #[arg(long, default_value = "127.0.0.1:8090")]
    listen: SocketAddr,

    /// Connections in the pool.
    #[arg(long, default_value_t = 4)]
    pool_size: usize,

    /// The browser reaches the console through HTTPS (a TLS proxy in front, named with
    /// --public-host): the cookies are marked Secure and named with the __Host- prefix.
    #[arg(long)]
    secure_cookies: bool,

    /// Another name the browser reaches the console by (`host` or `host:port`, e.g. a
    /// TLS proxy's), besides the listen address and localhost; may be repeated. A request
    /// for any other Host is refused (DNS rebinding).
    #[arg(long)]
    public_host: Vec<String>,

    /// Connections open at once; at the cap the console accepts no more until one closes.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u16).range(2..))]
    max_connections: u16,

    /// Seconds a connection has to send a request's head (one second once half the
    /// connections are open); a connection that has not is closed.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..))]
    header_timeout: u16,

    /// Seconds a connection may stay open, kept alive or not; then it finishes the
    /// request in hand (5 s more at most) and is closed.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u16).range(1..))]
    connection_lifetime: u16,
}

/// What every handler shares.
pub struct App {
    pub db: db::Db,
    /// The queues' figures, read once for every page (figures.rs).
    pub figures: figures::Figures,
    pub auth: auth::Auth,
    /// The Host headers a request may carry (http.rs).
    pub hosts: Vec<String>,
}

pub type Shared = Arc<App>;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    log::init();
    let args = Args::parse();
    match run(args).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!("sendjobs-console: {err}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The connection string: from the file named, else from the environment.
fn database_url(file: Option<&std::path::Path>) -> Result<String, error::StartError> {
    let from_env = std::env::var("SENDJOBS_CONSOLE_DATABASE_URL")
        .ok()
        .filter(|url| !url.is_empty());
    let url = match (file, from_env) {
        (Some(_), Some(_)) => return Err(error::StartError::DatabaseUrlTwice),
        (Some(path), None) => std::fs::read_to_string(path)
            .map_err(|source| error::StartError::DatabaseUrlFile {
                path: path.to_path_buf(),
                source,
            })?
            .trim()
            .to_string(),
        (None, Some(url)) => url,
        (None, None) => return Err(error::StartError::NoDatabaseUrl),
    };
    Ok(url)
}

async fn run(args: Args) -> Result<(), error::StartError> {
    let database_url = database_url(args.database_url_file.as_deref())?;
    let db = db::Db::connect(&database_url, args.pool_size).await?;
    let auth = auth::Auth::from_env(args.secure_cookies)?;
    let role = db.privileges().await?;
    if !role.stats || !role.finished {
        return Err(error::StartError::NotMonitor(role.role));
    }
    tracing::info!(
        role = %role.role,
        actions = %role.allowed_actions().join(","),
        token = auth.token_configured(),
        "sendjobs-console: connected; listening on http://{}",
        args.listen
    );
    if !args.listen.ip().is_loopback() {
        tracing::warn!(
            "sendjobs-console: listening on a non-loopback address ({}): see --help",
            args.listen
        );
    }
    let port = args.listen.port();
    let mut hosts = vec![
        args.listen.to_string(),
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
    ];
    hosts.extend(args.public_host.iter().cloned());
    let app = Arc::new(App {
        db,
        figures: figures::Figures::default(),
        auth,
        hosts,
    });
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|source| error::StartError::Listen {
            addr: args.listen,
            source,
        })?;
    let limits = serve::Limits {
        max_connections: usize::from(args.max_connections),
        header_timeout: std::time::Duration::from_secs(u64::from(args.header_timeout)),
        lifetime: std::time::Duration::from_secs(u64::from(args.connection_lifetime)),
    };
    serve::serve(listener, http::router(app), limits, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
    .map_err(|source| error::StartError::Listen {
        addr: args.listen,
        source,
    })?;
    Ok(())
}
