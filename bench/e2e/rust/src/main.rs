//! bench/e2e.sh's driver of the sendjobs Rust worker (bench/e2e/README.md has the protocol):
//!
//!     DATABASE_URL=... sendjobs-e2e-rust load N      # N jobs, by enqueue_many
//!     DATABASE_URL=... sendjobs-e2e-rust drain N     # the worker until N jobs are done
//!     DATABASE_URL=... sendjobs-e2e-rust steady RATE SECONDS
//!
//! The handler does nothing. One JSON line at the end.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sendjobs_client::{enqueue, enqueue_many, Config, Job, NewJob, Outcome, Worker};
use serde_json::json;
use tokio::sync::oneshot;

const QUEUE: &str = "bench";

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1000.0
}

fn config(dsn: &str) -> Config {
    Config::new(dsn)
        .queue(QUEUE)
        .batch(100)
        .concurrency(100)
        .lease(Duration::from_secs(30))
        .poll_interval(Duration::from_secs(1))
}

#[tokio::main]
async fn main() {
    let dsn = std::env::var("DATABASE_URL").expect("DATABASE_URL");
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize| args[i].parse::<f64>().unwrap();
    let (db, connection) = tokio_postgres::connect(&dsn, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    match args[0].as_str() {
        "load" => {
            let n = number(1) as usize;
            for chunk in (0..n).collect::<Vec<_>>().chunks(10_000) {
                let jobs: Vec<NewJob> = chunk
                    .iter()
                    .map(|i| NewJob::new(json!({"n": i})).queue(QUEUE))
                    .collect();
                enqueue_many(&db, &jobs).await.unwrap();
            }
            println!("{}", json!({"loaded": n}));
        }
        "drain" => {
            let n = number(1) as u64;
            let worker = Worker::new(config(&dsn)).unwrap();
            let counters = worker.counters();
            let (stop, stopped) = oneshot::channel::<()>();
            let started = Instant::now();
            let run = tokio::spawn(worker.run(|_job: Job| async { Outcome::Sent }, async {
                stopped.await.ok();
            }));
            while counters.snapshot().sent < n {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let seconds = started.elapsed().as_secs_f64();
            stop.send(()).unwrap();
            run.await.unwrap().unwrap();
            println!("{}", json!({"jobs": n, "seconds": seconds}));
        }
        "steady" => {
            let (rate, seconds) = (number(1), number(2));
            let latencies = Arc::new(Mutex::new(Vec::<f64>::new()));
            let seen = latencies.clone();
            let worker = Worker::new(config(&dsn)).unwrap();
            let (stop, stopped) = oneshot::channel::<()>();
            let run = tokio::spawn(worker.run(
                move |job: Job| {
                    let seen = seen.clone();
                    async move {
                        let at = job.payload["t"].as_f64().unwrap();
                        seen.lock().unwrap().push(now_ms() - at);
                        Outcome::Sent
                    }
                },
                async {
                    stopped.await.ok();
                },
            ));
            tokio::time::sleep(Duration::from_secs(1)).await; // the worker idle, listening
            let total = (rate * seconds) as usize;
            let started = Instant::now();
            for i in 0..total {
                let due = started + Duration::from_secs_f64(i as f64 / rate);
                tokio::time::sleep_until(due.into()).await;
                enqueue(&db, &NewJob::new(json!({"t": now_ms()})).queue(QUEUE))
                    .await
                    .unwrap();
            }
            while latencies.lock().unwrap().len() < total {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            stop.send(()).unwrap();
            run.await.unwrap().unwrap();
            let latencies = latencies.lock().unwrap().clone();
            println!("{}", json!({"jobs": total, "latencies_ms": latencies}));
        }
        other => panic!("unknown command {other}"),
    }
}
