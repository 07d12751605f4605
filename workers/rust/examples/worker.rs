//! A complete worker: claims jobs of one queue, "sends" each (here: prints its payload
//! after a pause, and refuses payloads without a "to"), prints its counters every few
//! seconds, and stops cleanly on Ctrl-C or SIGTERM, letting running sends finish.
//!
//!     DATABASE_URL="host=/var/run/postgresql dbname=app user=app_worker" \
//!         cargo run -p sendjobs-client --example worker -- acme

use std::time::Duration;

use sendjobs_client::{shutdown_signal, Config, Job, Outcome, Worker};

async fn send(job: Job) -> Outcome {
    let Some(to) = job.payload.get("to").and_then(|to| to.as_str()) else {
        // Sending it again would not help: fail the job (its error stays in last_error).
        return Outcome::failed("the payload has no \"to\"");
    };
    // A real partner call goes here, with the job's idempotency key (or "sendjobs-{id}"),
    // so that the partner can drop the repeat of an at-least-once send.
    tokio::time::sleep(Duration::from_millis(50)).await;
    println!(
        "sent job {} (attempt {} of {}) to {to}: {}",
        job.id, job.attempts, job.max_attempts, job.payload
    );
    Outcome::Sent
}

#[tokio::main]
async fn main() -> Result<(), sendjobs_client::Error> {
    let dsn = std::env::var("DATABASE_URL").unwrap_or_else(|_| "host=/var/run/postgresql".into());
    let queue = std::env::args().nth(1).unwrap_or_else(|| "default".into());
    let config = Config::new(dsn)
        .queue(queue)
        .batch(20)
        .concurrency(20)
        .lease(Duration::from_secs(30))
        .send_timeout(Duration::from_secs(20));
    let worker = Worker::new(config)?;
    let counters = worker.counters();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(5)).await;
            println!("{:?}", counters.snapshot());
        }
    });
    worker.run(send, shutdown_signal()).await
}
