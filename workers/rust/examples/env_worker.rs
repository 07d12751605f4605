//! The worker configured by the environment, as the Python and Node.js packages'
//! `sendjobs-worker` programs are, for tests/workers/check.py: DATABASE_URL, QUEUE (any
//! by default), BATCH (10), LEASE_SECONDS (30), POLL_SECONDS (5), LISTEN (1),
//! LISTEN_CHECK_SECONDS (2; 0: none), LISTEN_CHECK_TIMEOUT_SECONDS (3), WORKER_NAME (the
//! connection's application_name). Each job is "sent" at once (no partner). On SIGTERM
//! or SIGINT it stops and prints its counters as one JSON line. The crate's warnings (a
//! reconnect and why) go to stderr, as the other programs print theirs.
//!
//!     DATABASE_URL="host=db1,db2 dbname=app user=app_worker" QUEUE=acme \
//!         cargo run -p sendjobs-client --example env_worker

use std::time::Duration;

use sendjobs_client::{shutdown_signal, Config, Job, Outcome, Worker};

/// The crate's log records of level warn and above, on stderr.
struct Stderr;

impl log::Log for Stderr {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Warn
    }
    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            eprintln!("{}", record.args());
        }
    }
    fn flush(&self) {}
}

fn seconds(name: &str, default: f64) -> Duration {
    let value = std::env::var(name).map_or(default, |v| v.parse().expect(name));
    Duration::from_secs_f64(value)
}

#[tokio::main]
async fn main() -> Result<(), sendjobs_client::Error> {
    log::set_logger(&Stderr).expect("the only logger");
    log::set_max_level(log::LevelFilter::Warn);
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let mut config = Config::new(env("DATABASE_URL").unwrap_or_default())
        .batch(env("BATCH").map_or(10, |b| b.parse().expect("BATCH")))
        .lease(seconds("LEASE_SECONDS", 30.0))
        .poll_interval(seconds("POLL_SECONDS", 5.0))
        .listen(env("LISTEN").is_none_or(|l| l == "1"))
        .listen_check(
            seconds("LISTEN_CHECK_SECONDS", 2.0),
            seconds("LISTEN_CHECK_TIMEOUT_SECONDS", 3.0),
        )
        .application_name(env("WORKER_NAME").unwrap_or_else(|| "sendjobs-worker-rs".into()));
    if let Some(queue) = env("QUEUE") {
        config = config.queue(queue);
    }
    let worker = Worker::new(config)?;
    let counters = worker.counters();
    worker
        .run(|_job: Job| async { Outcome::Sent }, shutdown_signal())
        .await?;
    let c = counters.snapshot();
    println!(
        "{{\"claimed\": {}, \"sent\": {}, \"wakeups\": {}, \"reconnects\": {}}}",
        c.claimed, c.sent, c.wakeups, c.reconnects
    );
    Ok(())
}
